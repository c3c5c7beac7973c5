// The read ceiling's probe (probe/read.cuh, `bench` ceilings): every block must read every word of
// its tile — its sum is compared with the CPU's over random words — and the measurement over a
// pattern checks the same of every block. Skipped, with the reason, where there is no GPU.
#include <gtest/gtest.h>

#include "agentcompile/backends/cuda/bench_measure.h"
#include "agentcompile/core/error.h"
#include "agentcompile/core/rng.h"
#include "ops/cuda_test_util.h"

using namespace ac;

TEST(CudaReadProbe, SumsEveryWordOfItsTile) {
  AC_REQUIRE_GPU();
  // Tiles of 1, 777 (not a multiple of the block's 4 x 256 words in flight) and 4096 words.
  for (long long wpb : {1LL, 777LL, 4096LL}) {
    const long long blocks = 37;
    Rng r(static_cast<uint64_t>(wpb));
    std::vector<uint32_t> words(size_t(blocks * wpb * 4));
    for (auto& w : words) w = uint32_t(r.next_u64());
    const std::vector<uint32_t> got = cuda::read_probe_sums(words, wpb);
    ASSERT_EQ(got.size(), size_t(blocks));
    for (long long b = 0; b < blocks; ++b) {
      uint32_t want = 0;
      for (long long i = b * wpb * 4; i < (b + 1) * wpb * 4; ++i) want += words[size_t(i)];
      EXPECT_EQ(got[size_t(b)], want) << "tile of " << wpb << " words, block " << b;
    }
  }
  EXPECT_THROW(cuda::read_probe_sums(std::vector<uint32_t>(12), 2), Error);  // 3 words: not whole tiles
}

TEST(CudaReadProbe, MeasuresReadsOfEveryTile) {
  AC_REQUIRE_GPU();
  const cuda::Measured m = cuda::read_bandwidth_GBps(size_t(64) << 20, 3);  // throws if a tile went unread
  ASSERT_EQ(m.samples.size(), 3u);
  EXPECT_GT(m.median, 1.0);
}
