// The fast path's developer override (AGENTCOMPILE_FAST_CONFIG): what it sets, what it refuses.
#ifdef AGENTCOMPILE_HAVE_CUDA
#include <gtest/gtest.h>

#include "agentcompile/core/error.h"
#include "backends/cuda/fast_executor.h"

namespace ac {
namespace {

TEST(FastConfigOverride, SetsGemvPointsAndIntegers) {
  const cuda::FastConfig base;
  const cuda::FastConfig c = cuda::apply_fast_config_override(base, "o=128:4:2:8,attn_split=64,pdl=0,,lm_head=256:1:1:1");
  EXPECT_EQ(c.o.block, 128);
  EXPECT_EQ(c.o.rows, 4);
  EXPECT_EQ(c.o.unroll, 2);
  EXPECT_EQ(c.o.splitk, 8);
  EXPECT_EQ(c.lm_head.rows, 1);
  EXPECT_EQ(c.attn_split, 64);
  EXPECT_FALSE(c.pdl);
  EXPECT_TRUE(c.cuda_graph);
  EXPECT_EQ(c.qkv.unroll, base.qkv.unroll);  // untouched
}

TEST(FastConfigOverride, RefusesMalformedSpecs) {
  for (const char* bad : {"o=128:2:1", "o=128:2:1:x", "attn_split=", "attn_split=12a", "nope=1", "attn_split"}) {
    try {
      cuda::apply_fast_config_override(cuda::FastConfig{}, bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput) << bad;
    }
  }
}

}  // namespace
}  // namespace ac
#endif  // AGENTCOMPILE_HAVE_CUDA
