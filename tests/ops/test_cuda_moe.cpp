// moe_gate_up.gemv and moe_down.gemv (kernels/cuda/moe/gemv.cuh) against a double-precision
// computation here from the same bf16 experts: every (BLOCK, ROWS, ILP, DIRECT) point, and
// moe_down.split at each (BLOCK, ROWS, ILP) bit for bit against moe_down.gemv (ILP 0), on a small case whose
// widths leave partial warps of rows, with tokens that pick the same expert, and the Qwen3-30B-A3B
// shapes (hidden 2048, 128 experts of width 768, 8 per token) at the default point. The down GEMV
// adds into a residual row that is already there. Skipped, with the reason, where there is no GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "agentcompile/tuning/reference_ops.h"
#include "backends/cuda/family.h"
#include "backends/cuda/kernel_loader.h"
#include "ops/cuda_test_util.h"

extern "C" {
#include "../../kernels/cuda/common/params.h"
}

using namespace ac;
using namespace ac::test;

namespace {

struct MoeCase {
  long long n, hidden, experts, top_k, inter;
  std::vector<std::pair<int, int>> points;  // (BLOCK, ROWS)
};

void check_moe(const MoeCase& c) {
  const long long E = c.experts, k = c.top_k, H = c.hidden, F = c.inter, n = c.n;
  // The experts: gate | up | down per expert, bf16, scaled like a trained layer's (about 1/sqrt(K)).
  std::vector<std::vector<float>> w(size_t(3 * E));
  std::vector<cuda::DeviceBuffer> dw;
  std::vector<CUdeviceptr> table(size_t(3 * E));
  for (long long part = 0; part < 3; ++part)
    for (long long e = 0; e < E; ++e) {
      const long long rows = part < 2 ? F : H, cols = part < 2 ? H : F;
      std::vector<float>& r = w[size_t(part * E + e)];
      const auto bytes = store_as(random_vec(size_t(rows * cols), uint64_t(100 + part * E + e), 1.0f / std::sqrt(float(cols))),
                                  DType::BF16, r);
      dw.push_back(to_device(bytes));
      table[size_t(part * E + e)] = dw.back().ptr();
    }
  const std::vector<float> x = random_vec(size_t(n * H), 7), resid = random_vec(size_t(n * H), 8);
  // Picks: increasing per token, token 1 sharing expert ids with token 0 where there are two.
  std::vector<int32_t> ids(size_t(n * k));
  std::vector<float> wts(size_t(n * k));
  for (long long t = 0; t < n; ++t)
    for (long long j = 0; j < k; ++j) {
      ids[size_t(t * k + j)] = int32_t((j * (E / k) + (t == 1 ? 0 : t)) % E);
      wts[size_t(t * k + j)] = 0.5f / float(j + 1);
    }
  // The reference: act = silu(gate x) * (up x); out = resid + sum_j w_j down_j act_j.
  std::vector<float> act(size_t(n * k * F)), out(resid);
  for (long long t = 0; t < n; ++t)
    for (long long j = 0; j < k; ++j) {
      const long long e = ids[size_t(t * k + j)];
      for (long long f = 0; f < F; ++f) {
        double g = 0, u = 0;
        for (long long i = 0; i < H; ++i) {
          g += double(w[size_t(e)][size_t(f * H + i)]) * x[size_t(t * H + i)];
          u += double(w[size_t(E + e)][size_t(f * H + i)]) * x[size_t(t * H + i)];
        }
        act[size_t((t * k + j) * F + f)] = float(g / (1 + std::exp(-g)) * u);
      }
    }
  for (long long t = 0; t < n; ++t)
    for (long long o = 0; o < H; ++o) {
      double total = 0;
      for (long long j = 0; j < k; ++j) {
        const long long e = ids[size_t(t * k + j)];
        double d = 0;
        for (long long f = 0; f < F; ++f) d += double(w[size_t(2 * E + e)][size_t(o * F + f)]) * act[size_t((t * k + j) * F + f)];
        total += double(wts[size_t(t * k + j)]) * d;
      }
      out[size_t(t * H + o)] += float(total);
    }

  auto dx = to_device(x), dids = to_device(ids), dwts = to_device(wts), dtable = to_device(table);
  for (auto [block, rows] : c.points) {
    std::vector<float> gemv_out;  // moe_down.gemv's output at ILP 0 (ILP 1 adds in another order)
    for (int ilp : {0, 1})
    for (int direct : {0, 1}) {
      auto dact = poisoned(act.size());
      auto dout = to_device(resid);
      MoeGemvParams p{dx.as<float>(), dids.as<int>(), dwts.as<float>(), reinterpret_cast<const void* const*>(dtable.ptr()),
                      dact.as<float>(), dout.as<float>(), n, k, E, H, F};
      const cuda::Variant gu = cuda::make_variant(cuda::find_family("moe_gate_up", "gemv"),
                                                  {{"BLOCK", block}, {"ROWS", rows}, {"ILP", ilp}, {"DIRECT", direct},
                                                   {"OCC", direct && !ilp && rows == 1}},
                                                  {DType::BF16}, arch());
      const cuda::Variant dn = cuda::make_variant(cuda::find_family("moe_down", "gemv"),
                                                  {{"BLOCK", block}, {"ROWS", rows}, {"ILP", ilp}, {"DIRECT", direct}},
                                                  {DType::BF16}, arch());
      const unsigned per_block = unsigned(block / 32 * rows);
      cuda::launch_kernel(cuda::load_kernel(gu), cuda::Dim3{unsigned((F + per_block - 1) / per_block), unsigned(n * k)},
                          unsigned(block), direct ? 0 : size_t(H) * 4, stream(), &p);
      EXPECT_LE(rel_l2(to_host<float>(dact, act.size()), act), 1e-5) << gu.name();
      cuda::launch_kernel(cuda::load_kernel(dn), cuda::Dim3{unsigned((H + per_block - 1) / per_block), unsigned(n)},
                          unsigned(block), direct ? 0 : size_t(k * F) * 4, stream(), &p);
      EXPECT_LE(rel_l2(to_host<float>(dout, out.size()), out), 1e-5) << dn.name();
      if (!direct) continue;
      // moe_down.split (a grid row per pick, the last block per outputs adding them in order) at
      // this ILP: moe_down.gemv's bits, twice (the second launch needs the first's reset of the
      // counts), the second asking L2 for its rows first (p.early; its PDL trigger is a no-op here).
      if (ilp == 0) gemv_out = to_host<float>(dout, out.size());
      const cuda::Variant sp = cuda::make_variant(cuda::find_family("moe_down", "split"),
                                                  {{"BLOCK", block}, {"ROWS", rows}, {"ILP", ilp}}, {DType::BF16}, arch());
      const unsigned blocks = unsigned((H + per_block - 1) / per_block);
      auto dpart = poisoned(size_t(n * k * H));
      std::vector<int32_t> zeros(size_t(n) * blocks, 0);
      auto ddone = to_device(zeros);
      p.part = dpart.as<float>();
      p.done = ddone.as<int>();
      for (int launch = 0; launch < 2; ++launch) {
        auto sout = to_device(resid);
        p.out = sout.as<float>();
        p.early = launch;
        cuda::launch_kernel(cuda::load_kernel(sp), cuda::Dim3{blocks, unsigned(n * k)}, unsigned(block), 0, stream(), &p);
        EXPECT_EQ(to_host<float>(sout, out.size()), gemv_out) << sp.name() << " launch " << launch;
        EXPECT_EQ(to_host<int32_t>(ddone, zeros.size()), zeros) << sp.name() << ": the counts are reset";
      }
    }
  }
}

TEST(CudaMoeGemv, EveryPointMatchesDoublePrecision) {
  AC_REQUIRE_GPU();
  std::vector<std::pair<int, int>> all;
  for (int block : {128, 256})
    for (int rows : {1, 2, 4}) all.push_back({block, rows});
  // 72 features and 264 outputs: the last warps hold partial rows; width 264 and 72 are 8-multiples.
  check_moe(MoeCase{3, 264, 6, 2, 72, all});
  check_moe(MoeCase{2, 264, 12, 10, 72, {{128, 2}}});  // ILP 1 takes the picks 8 at a time: 8, then 2
}

TEST(CudaMoeGemv, Qwen3_30bA3bShapes) {
  AC_REQUIRE_GPU();
  check_moe(MoeCase{1, 2048, 128, 8, 768, {{256, 2}}});
}

// moe_router.fused, and moe_router.logits then moe_route.warp, against the CPU reference's norm,
// router and routing: the normalised rows
// within float rounding, the same experts in expert order, weights within rounding, with and
// without renormalisation. Some router rows are copies of others (equal logits: the lower index
// must win) and there are five tokens.
TEST(CudaMoeRouter, BothFormsMatchTheCpuReference) {
  AC_REQUIRE_GPU();
  struct Case {
    long long hidden, experts, top_k;
  };
  // (4352 is past the 8 values per thread that NORM 1 keeps in registers: its row takes moe_norm_row.)
  for (const Case c : {Case{64, 8, 2}, Case{256, 60, 4}, Case{2048, 128, 8}, Case{128, 40, 32}, Case{4352, 16, 2}}) {
    for (int renorm : {0, 1}) {
      SCOPED_TRACE(std::to_string(c.experts) + " experts, top " + std::to_string(c.top_k) + ", renorm " + std::to_string(renorm));
      const long long n = 5, H = c.hidden, E = c.experts, k = c.top_k;
      const std::vector<float> x = random_vec(size_t(n * H), uint64_t(60 + E));
      std::vector<float> gamma, w;
      const auto gamma16 = store_as(random_vec(size_t(H), 61, 0.5f), DType::BF16, gamma);
      std::vector<float> wsrc = random_vec(size_t(E * H), uint64_t(62 + E), 1.0f / std::sqrt(float(H)));
      for (long long e = 3; e < E; e += 5)  // expert e's row is expert e - 2's: tied logits
        std::copy(wsrc.begin() + (e - 2) * H, wsrc.begin() + (e - 1) * H, wsrc.begin() + e * H);
      const auto w16 = store_as(wsrc, DType::BF16, w);
      const float eps = 1e-6f;
      std::vector<float> want_h(size_t(n * H));
      std::vector<int32_t> want_ids(size_t(n * k));
      std::vector<float> want_w(size_t(n * k));
      for (long long t = 0; t < n; ++t) {
        double ss = 0;
        for (long long i = 0; i < H; ++i) ss += double(x[size_t(t * H + i)]) * x[size_t(t * H + i)];
        const float inv = float(1.0 / std::sqrt(ss / double(H) + eps));
        for (long long i = 0; i < H; ++i) want_h[size_t(t * H + i)] = gamma[size_t(i)] * (x[size_t(t * H + i)] * inv);
        std::vector<float> logits(static_cast<size_t>(E));
        for (long long e = 0; e < E; ++e) {
          double acc = 0;
          for (long long i = 0; i < H; ++i) acc += double(w[size_t(e * H + i)]) * want_h[size_t(t * H + i)];
          logits[size_t(e)] = float(acc);
        }
        std::vector<int32_t> ids(static_cast<size_t>(k));
        std::vector<float> wt(static_cast<size_t>(k));
        ref::moe_route(logits.data(), E, k, renorm != 0, ids.data(), wt.data());
        std::vector<size_t> order(static_cast<size_t>(k));
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ids[a] < ids[b]; });
        for (long long j = 0; j < k; ++j) {
          want_ids[size_t(t * k + j)] = ids[order[size_t(j)]];
          want_w[size_t(t * k + j)] = wt[order[size_t(j)]];
        }
      }
      auto dx = to_device(x), dg = to_device(gamma16), dw = to_device(w16);
      // moe_router.logits PICK 1's per-token counts: zero before its first launch, reset by it.
      std::vector<int32_t> zeros(size_t(n), 0);
      auto ddone = to_device(zeros);
      // The fused form, the split one (with the routing kernel, or picking in its last block twice,
      // so the second launch needs the first's reset), each with and without the L2 prefetch.
      for (int form = 0; form < 6; ++form) {
        const int split = form % 3, prefetch = form / 3;
        const int ilp = split == 1 ? 1 : 2 * prefetch;  // every ILP of the split router: its row loads in flight
        // PICK 2 (the probabilities once, redux.sync) and NORM 1 (gamma before the wait) with the prefetch;
        // NORM 1 also before moe_route.warp without it.
        const int pick = split == 2 ? 1 + prefetch : 0, norm = split == 2 ? prefetch : split == 1 ? 1 - prefetch : 0;
        SCOPED_TRACE(std::string(split == 1 ? "moe_router.logits + moe_route.warp" : split == 2 ? "moe_router.logits PICK " + std::to_string(pick)
                                                                                                 : "moe_router.fused") +
                     (prefetch ? ", prefetch" : "") +
                     (split ? ", ILP " + std::to_string(ilp) + ", NORM " + std::to_string(norm) : std::string()));
        auto dh = poisoned(size_t(n * H)), dl = poisoned(size_t(n * E)), dids = poisoned(size_t(n * k)), dwt = poisoned(size_t(n * k));
        MoeRouterParams lp{dx.as<float>(), reinterpret_cast<const void*>(dg.ptr()), reinterpret_cast<const void*>(dw.ptr()),
                           dh.as<float>(), dl.as<float>(), dids.as<int>(), dwt.as<float>(), n, H, E, k, eps, renorm, prefetch,
                           ddone.as<int>(), prefetch};
        if (split == 2) {
          const cuda::Variant lv = cuda::make_variant(cuda::find_family("moe_router", "logits"),
                                                      {{"BLOCK", 256}, {"PICK", pick}, {"ILP", ilp}, {"NORM", norm}},
                                                      {DType::BF16}, arch());
          for (int launch = 0; launch < 2; ++launch)
            cuda::launch_kernel(cuda::load_kernel(lv), cuda::Dim3{unsigned((E + 7) / 8), unsigned(n)}, 256u, size_t(H + E) * 4,
                                stream(), &lp);
          EXPECT_EQ(to_host<int32_t>(ddone, size_t(n)), zeros) << "the counts are reset";
        } else if (split) {
          const cuda::Variant lv =
              cuda::make_variant(cuda::find_family("moe_router", "logits"),
                                 {{"BLOCK", 256}, {"PICK", 0}, {"ILP", ilp}, {"NORM", norm}}, {DType::BF16}, arch());
          cuda::launch_kernel(cuda::load_kernel(lv), cuda::Dim3{unsigned((E + 7) / 8), unsigned(n)}, 256u, size_t(H) * 4, stream(),
                              &lp);
          MoeRouteParams rp{dl.as<float>(), dids.as<int>(), dwt.as<float>(), n, E, k, renorm};
          const cuda::Variant rv = cuda::make_variant(cuda::find_family("moe_route", "warp"), {{"BLOCK", 128}}, {}, arch());
          cuda::launch_kernel(cuda::load_kernel(rv), cuda::Dim3{unsigned((n + 3) / 4)}, 128u, 0, stream(), &rp);
        } else {
          const cuda::Variant fv =
              cuda::make_variant(cuda::find_family("moe_router", "fused"), {{"BLOCK", 512}}, {DType::BF16}, arch());
          cuda::launch_kernel(cuda::load_kernel(fv), cuda::Dim3{unsigned(n)}, 512u, size_t(H + E) * 4, stream(), &lp);
        }
        EXPECT_LE(rel_l2(to_host<float>(dh, want_h.size()), want_h), 2e-6);
        const std::vector<int32_t> ids = to_host<int32_t>(dids, size_t(n * k));
        const std::vector<float> wt = to_host<float>(dwt, size_t(n * k));
        for (size_t i = 0; i < ids.size(); ++i) {
          ASSERT_EQ(ids[i], want_ids[i]) << "pick " << i;
          EXPECT_NEAR(wt[i], want_w[i], 1e-5f * std::max(1.0f, want_w[i])) << "pick " << i;
        }
      }
    }
  }
}

}  // namespace
