// attn_prefill.pipe against a double-precision attention computed here from the same bf16 KV
// cache, on ragged steps (the lengths 1, 7, 127, 128, 129, 2047, 2048), several sequences in one
// step, and a chunk continuing a cached prefix; with every BLOCK and BK at head dims 32, 64 and
// 128. Q and P are rounded to bf16 inside the kernel, so the bound is the bf16 one (relative L2
// 1e-2); the tiles in either order give the same bits; its 16-bit output (out16) is the f32 one
// rounded, bit for bit; attn_prefill.qs gives pipe's bits at both MT; paired tiles (two per
// block) give the same bits. Then the fast path's
// prefill against the CPU reference on the tiny presets, and against the decode attention per
// row. Skipped, with the reason, where there is no GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/model/synth_model.h"
#include "agentcompile/runtime/backends.h"
#include "agentcompile/runtime/engine.h"
#include "backends/cuda/fast/prefill_tiles.h"
#include "backends/cuda/fast/variants.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/kernel_loader.h"
#include "ops/cuda_test_util.h"
#include "unit/model_test_util.h"

extern "C" {
#include "../../kernels/cuda/common/params.h"
}

using namespace ac;
using namespace ac::test;

namespace {

struct Seq {
  int32_t from, to;  // this step's rows are positions [from, to); [0, from) is cached already
};
struct FlashCase {
  long long heads, kv_heads, hd;
  std::vector<Seq> seqs;
};
void PrintTo(const FlashCase& c, std::ostream* os) {
  *os << c.heads << "/" << c.kv_heads << " heads hd" << c.hd << " rows";
  for (const Seq& s : c.seqs) *os << " [" << s.from << "," << s.to << ")";
}
class CudaPrefillFlash : public ::testing::TestWithParam<FlashCase> {};

TEST_P(CudaPrefillFlash, MatchesDoublePrecisionAttention) {
  AC_REQUIRE_GPU();
  const FlashCase c = GetParam();
  const long long slots = (long long)c.seqs.size(), q_dim = c.heads * c.hd, group = c.heads / c.kv_heads;
  long long max_seq = 16;
  for (const Seq& s : c.seqs) max_seq = std::max<long long>(max_seq, s.to);
  // The cache: bf16 [slot][kv_head][position][hd]; the reference reads the same rounded values.
  const size_t cache_elems = size_t(slots * c.kv_heads * max_seq * c.hd);
  std::vector<float> kf, vf;
  const std::vector<uint8_t> kb = store_as(random_vec(cache_elems, 41), DType::BF16, kf),
                             vb = store_as(random_vec(cache_elems, 42), DType::BF16, vf);
  std::vector<int32_t> positions, slot_of;
  for (size_t s = 0; s < c.seqs.size(); ++s)
    for (int32_t p = c.seqs[s].from; p < c.seqs[s].to; ++p) {
      positions.push_back(p);
      slot_of.push_back(int32_t(s));
    }
  const long long n = (long long)positions.size();
  std::vector<float> q = random_vec(size_t(n * q_dim), 43);
  const double scale = 1.0 / std::sqrt(double(c.hd));
  std::vector<float> want(q.size());
  for (long long t = 0; t < n; ++t)
    for (long long h = 0; h < c.heads; ++h) {
      const long long base = (slot_of[size_t(t)] * c.kv_heads + h / group) * max_seq * c.hd;
      const float* qt = q.data() + t * q_dim + h * c.hd;
      std::vector<double> s(size_t(positions[size_t(t)] + 1));
      double mx = -INFINITY, sum = 0;
      for (size_t k = 0; k < s.size(); ++k) {
        double d = 0;
        for (long long j = 0; j < c.hd; ++j) d += double(qt[j]) * kf[size_t(base + (long long)k * c.hd + j)];
        s[k] = d * scale;
        mx = std::max(mx, s[k]);
      }
      for (double& x : s) sum += (x = std::exp(x - mx));
      for (long long j = 0; j < c.hd; ++j) {
        double o = 0;
        for (size_t k = 0; k < s.size(); ++k) o += s[k] * vf[size_t(base + (long long)k * c.hd + j)];
        want[size_t(t * q_dim + h * c.hd + j)] = float(o / sum);
      }
    }

  auto dq = to_device(q), dk = to_device(kb), dv = to_device(vb), dpos = to_device(positions), dslot = to_device(slot_of);
  std::vector<uint16_t> q16(q.size());
  const float qscale = float(scale) * 1.4426950408889634f;  // as the kernel computes it from p.scale
  for (size_t i = 0; i < q.size(); ++i) q16[i] = f32_to_bf16(q[i] * qscale);
  auto dq16 = to_device(q16);
  const std::string arch = cuda::Device::get().info().arch();
  for (int block : {64, 128, 256})
    for (int bk : {16, 32, 64}) {
      const cuda::Family& pipe = cuda::find_family("attn_prefill", "pipe");
      const cuda::Variant v =
          cuda::make_variant(pipe, {{"BLOCK", block}, {"BK", bk}, {"HD", int(c.hd)}, {"PAIR", 0}}, {DType::BF16}, arch);
      const std::vector<int32_t> tiles = cuda::prefill_query_tiles(slot_of, block / 32 * 16);
      auto dt = to_device(tiles);
      auto out = poisoned(want.size());
      cuda::DeviceBuffer out16(want.size() * 2);
      out16.fill_u32(0xffffffffu, cuda::Device::get().stream());
      PrefillAttnParams p{dq.as<float>(), dk.as<unsigned short>(), dv.as<unsigned short>(), out.as<float>(), dpos.as<int>(),
                          dslot.as<int>(), dt.as<int>(), n, c.heads, c.kv_heads, max_seq, float(scale), nullptr};
      const cuda::Dim3 grid{unsigned(tiles.size() / 2), unsigned(c.heads)};
      cuda::launch_kernel(cuda::load_kernel(v), grid, unsigned(block), cuda::prefill_attention_smem(v),
                          cuda::Device::get().stream(), &p);
      const std::vector<float> got = to_host<float>(out, want.size());
      EXPECT_LE(rel_l2(got, want), 1e-2) << v.name();
      p.in_order = 1;  // the tiles in row order instead of the last first: the same values
      cuda::launch_kernel(cuda::load_kernel(v), grid, unsigned(block), cuda::prefill_attention_smem(v),
                          cuda::Device::get().stream(), &p);
      EXPECT_EQ(to_host<float>(out, want.size()), got) << v.name() << " in row order";
      p.in_order = 0;
      // PAIR 1 over paired tiles (a costly and a cheap one per block, a padding entry for an odd
      // count), in either order: the same bits.
      const cuda::Variant vp =
          cuda::make_variant(pipe, {{"BLOCK", block}, {"BK", bk}, {"HD", int(c.hd)}, {"PAIR", 1}}, {DType::BF16}, arch);
      const std::vector<int32_t> paired = cuda::pair_prefill_tiles(tiles, positions);
      auto dpaired = to_device(paired);
      for (int order : {0, 1}) {
        PrefillAttnParams pp = p;
        pp.tiles = dpaired.as<int>();
        pp.in_order = order;
        auto out_pair = poisoned(want.size());
        pp.out = out_pair.as<float>();
        cuda::launch_kernel(cuda::load_kernel(vp), cuda::Dim3{unsigned(paired.size() / 4), unsigned(c.heads)}, unsigned(block),
                            cuda::prefill_attention_smem(vp), cuda::Device::get().stream(), &pp);
        EXPECT_EQ(to_host<float>(out_pair, want.size()), got) << vp.name() << " in_order " << order;
      }
      p.out16 = out16.as<void>();
      cuda::launch_kernel(cuda::load_kernel(v), grid, unsigned(block), cuda::prefill_attention_smem(v),
                          cuda::Device::get().stream(), &p);
      const std::vector<uint16_t> got16 = to_host<uint16_t>(out16, want.size());
      for (size_t i = 0; i < got16.size(); ++i)
        ASSERT_EQ(got16[i], f32_to_bf16(got[i])) << v.name() << " out16 element " << i;
      // Q as qkv_post.rows's q16 (bf16, scaled by scale * log2 e as the kernel scales f32 Q): the
      // same bits out, and f32 Q not read (null).
      PrefillAttnParams p16 = p;
      p16.out16 = nullptr;
      p16.q = nullptr;
      p16.q16 = dq16.as<unsigned short>();
      auto out_q16 = poisoned(want.size());
      p16.out = out_q16.as<float>();
      cuda::launch_kernel(cuda::load_kernel(v), grid, unsigned(block), cuda::prefill_attention_smem(v),
                          cuda::Device::get().stream(), &p16);
      EXPECT_EQ(to_host<float>(out_q16, want.size()), got) << v.name() << " from bf16 Q";
      // attn_prefill.qs at this BLOCK and BK (where its registers allow): Q from shared memory and
      // MT 16-row tiles per warp, so tiles of other rows, but every row's sums in pipe's order: the
      // same bits, from f32 Q and from bf16 Q.
      for (int mt : {1, 2}) {
        const cuda::Family& qs = cuda::find_family("attn_prefill", "qs");
        std::map<std::string, int> point = {{"BLOCK", block}, {"BK", bk}, {"HD", int(c.hd)}, {"MT", mt}, {"PAIR", 0}};
        if (!qs.constraint(point).empty()) continue;
        const cuda::Variant vq = cuda::make_variant(qs, point, {DType::BF16}, arch);
        const std::vector<int32_t> qtiles = cuda::prefill_query_tiles(slot_of, cuda::prefill_tile_rows(vq));
        auto dqt = to_device(qtiles);
        const cuda::Dim3 qgrid{unsigned(qtiles.size() / 2), unsigned(c.heads)};
        for (bool from16 : {false, true}) {
          PrefillAttnParams pq = from16 ? p16 : p;
          pq.out16 = nullptr;
          pq.tiles = dqt.as<int>();
          auto out_qs = poisoned(want.size());
          pq.out = out_qs.as<float>();
          cuda::launch_kernel(cuda::load_kernel(vq), qgrid, unsigned(block), cuda::prefill_attention_smem(vq),
                              cuda::Device::get().stream(), &pq);
          EXPECT_EQ(to_host<float>(out_qs, want.size()), got) << vq.name() << (from16 ? " from bf16 Q" : "");
        }
        point["PAIR"] = 1;  // paired tiles: the same bits (where its registers allow)
        if (!qs.constraint(point).empty()) continue;
        const cuda::Variant vqp = cuda::make_variant(qs, point, {DType::BF16}, arch);
        const std::vector<int32_t> qpaired = cuda::pair_prefill_tiles(qtiles, positions);
        auto dqp = to_device(qpaired);
        PrefillAttnParams pq = p;
        pq.out16 = nullptr;
        pq.tiles = dqp.as<int>();
        auto out_qp = poisoned(want.size());
        pq.out = out_qp.as<float>();
        cuda::launch_kernel(cuda::load_kernel(vqp), cuda::Dim3{unsigned(qpaired.size() / 4), unsigned(c.heads)}, unsigned(block),
                            cuda::prefill_attention_smem(vqp), cuda::Device::get().stream(), &pq);
        EXPECT_EQ(to_host<float>(out_qp, want.size()), got) << vqp.name();
      }
    }
}

INSTANTIATE_TEST_SUITE_P(
    Steps, CudaPrefillFlash,
    ::testing::Values(FlashCase{4, 2, 64, {{0, 1}}}, FlashCase{4, 2, 64, {{0, 7}}}, FlashCase{4, 2, 64, {{0, 127}}},
                      FlashCase{4, 2, 64, {{0, 128}}}, FlashCase{4, 2, 64, {{0, 129}}}, FlashCase{2, 1, 128, {{0, 2047}}},
                      FlashCase{2, 2, 32, {{0, 2048}}}, FlashCase{8, 2, 128, {{0, 129}, {0, 7}, {0, 1}}},
                      FlashCase{4, 4, 32, {{200, 300}}}, FlashCase{6, 2, 128, {{5, 6}, {100, 230}}}));

// The fast path's prefill with attn_prefill.pipe: teacher-forced logits of a 150-token prompt
// (prefilled in chunks of 64: later chunks attend a cached prefix) against the CPU reference
// within the fast path's bf16 bound, and the same as with the decode attention per row.
class CudaPrefillFlashPreset : public ::testing::TestWithParam<std::string> {
 protected:
  // The preset's synthetic model (seed 5), a prompt of `n` random ids, and the teacher-forced
  // logits of a prompt run in steps of `chunk` tokens.
  void SetUp() override {
    AC_REQUIRE_GPU();  // before the synthesis
    synth_model(SynthOptions{GetParam(), tmp_ / "m", 5, DType::BF16, {}, true});
    model_ = load_model(tmp_ / "m");
    g_ = build_decoder_graph(model_->config, model_->weights);
  }
  std::vector<int32_t> prompt(int n, uint64_t seed) const {
    std::vector<int32_t> p;
    Rng rng(seed);
    for (int i = 0; i < n; ++i) p.push_back(int32_t(rng.next_u64() % uint64_t(model_->config.vocab_size)));
    return p;
  }
  std::vector<float> rows(Executor& ex, const std::vector<int32_t>& p, int64_t chunk) const {
    std::vector<float> all;
    teacher_forced_logits(ex, p, chunk, [&](int64_t, const float* r) { all.insert(all.end(), r, r + model_->config.vocab_size); });
    return all;
  }
  TempDir tmp_;
  std::unique_ptr<Model> model_;
  Graph g_;
};

TEST_P(CudaPrefillFlashPreset, LogitsMatchTheCpuReference) {
  AC_REQUIRE_GPU();
  const std::vector<int32_t> p = prompt(150, 17);
  const Graph& g = g_;
  const int64_t seq = 160;
  const ExecutorLimits lim{1, seq, 64, 64};
  auto cpu = make_executor("cpu", g, lim);
  auto rows = [&](Executor& ex) { return this->rows(ex, p, 64); };
  const std::vector<float> want = rows(*cpu);
  cuda::FastConfig per_row_cfg;
  per_row_cfg.prefill_flash = 0;
  auto per_row = cuda::make_fast_executor(g, lim, per_row_cfg);
  const std::vector<float> by_row = rows(*per_row);
  cuda::FastConfig flash;  // the default: attn_prefill.pipe, qkv_post.rows
  ASSERT_TRUE(cuda::prefill_flash_variant(model_->config, flash, DType::BF16, cuda::Device::get().info().arch()).has_value());
  auto ex = cuda::make_fast_executor(g, lim, flash);
  const std::vector<float> got = rows(*ex);
  EXPECT_LE(rel_l2(got, want), 1e-2);
  EXPECT_LE(rel_l2(got, by_row), 1e-2);
  cuda::FastConfig f32q = flash;  // Q handed over in f32: the default's bf16 Q is the attention's own rounding
  f32q.prefill_q16 = 0;
  auto ex32 = cuda::make_fast_executor(g, lim, f32q);
  EXPECT_EQ(rows(*ex32), got);
  for (int mt : {1, 2}) {  // attn_prefill.qs: the same values as pipe's
    cuda::FastConfig qs = flash;
    qs.prefill_flash_qs = mt;
    auto exq = cuda::make_fast_executor(g, lim, qs);
    EXPECT_EQ(rows(*exq), got) << "attn_prefill.qs MT " << mt;
  }
  cuda::FastConfig paired = flash;  // two query tiles per block: the same values
  paired.prefill_flash_pair = 1;
  auto exp = cuda::make_fast_executor(g, lim, paired);
  EXPECT_EQ(rows(*exp), got) << "prefill_flash_pair";
}

INSTANTIATE_TEST_SUITE_P(Presets, CudaPrefillFlashPreset, ::testing::Values("tiny-qwen3", "tiny-llama"));

// The prompt's projections on our own GEMMs (the tiny models' K are multiples of 64): one 300-token
// step (three 128-row tiles, the last partial) gives the CPU reference's logits and cuBLAS's within
// one bf16 rounding's spread: gemm.wgmma (prefill_wgmma=1, sm_90) at both BN and both LOADs,
// persistent (SCHED 1) at BN 64 and 128, gemm.mma (prefill_mma=1, sm_80+) at both BN; gate/up fused with SwiGLU (the default) and not; and
// a plan's routes, each projection its own family and point.
TEST_P(CudaPrefillFlashPreset, OwnGemmProjectionsMatchCublas) {
  AC_REQUIRE_GPU();
  const std::vector<int32_t> p = prompt(300, 23);
  const Graph& g = g_;
  const ExecutorLimits lim{1, 320, 300, 300};
  auto rows = [&](Executor& ex) { return this->rows(ex, p, 300); };
  auto cpu = make_executor("cpu", g, lim);
  const std::vector<float> want = rows(*cpu);
  auto base = cuda::make_fast_executor(g, lim, {});
  const std::vector<float> by_cublas = rows(*base);
  std::vector<std::pair<std::string, cuda::FastConfig>> configs;
  for (int fused : {1, 0}) {
    for (int bn : {64, 128, 256}) {
      if (cuda::Device::get().info().arch() == "sm_90")
        for (int load : {0, 1}) {
          cuda::FastConfig on;
          on.prefill_wgmma = 1;
          on.prefill_wgmma_bn = bn;
          on.prefill_wgmma_load = load;
          on.prefill_swiglu_epilogue = fused;
          configs.emplace_back("wgmma BN " + std::to_string(bn) + " LOAD " + std::to_string(load), on);
          if (load == 1 && bn < 256) {  // persistent blocks, consumers in turns
            on.prefill_wgmma_sched = 1;
            configs.emplace_back("wgmma BN " + std::to_string(bn) + " LOAD 1 SCHED 1", on);
          }
        }
      if (bn == 256) continue;  // gemm.mma's BN: 64 and 128
      cuda::FastConfig on;
      on.prefill_mma = 1;
      on.prefill_mma_bn = bn;
      on.prefill_swiglu_epilogue = fused;
      configs.emplace_back("mma BN " + std::to_string(bn), on);
    }
  }
  {  // a plan's routes, one per projection (prefill_gemm.<slot>); off sm_90 the down projection on the library's
    const bool sm90 = cuda::Device::get().info().arch() == "sm_90";
    cuda::FastConfig plan;
    plan.prefill_gemm_qkv = {cuda::kGemmMma, 64, 3, 0, 0};
    using G = cuda::OwnGemmChoice;
    plan.prefill_gemm_o = sm90 ? G{cuda::kGemmWgmma, 128, 4, 1, 1} : G{cuda::kGemmMma, 128, 4, 0, 0};
    plan.prefill_gemm_gate_up = sm90 ? G{cuda::kGemmWgmma, 64, 5, 1, 0} : G{cuda::kGemmMma, 128, 3, 0, 0};
    plan.prefill_gemm_down = sm90 ? G{cuda::kGemmWgmma, 128, 4, 1, 1, 1, 1} : G{};
    configs.emplace_back("per-projection routes", plan);
  }
  for (const auto& [what, on] : configs) {
    auto ex = cuda::make_fast_executor(g, lim, on);
    const std::vector<float> got = rows(*ex);
    EXPECT_LE(rel_l2(got, want), 1e-2) << what << " swiglu epilogue " << on.prefill_swiglu_epilogue;
    EXPECT_LE(rel_l2(got, by_cublas), 5e-3) << what << " swiglu epilogue " << on.prefill_swiglu_epilogue;
  }
}

}  // namespace
