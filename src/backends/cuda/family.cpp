#include "backends/cuda/family.h"
#include "backends/cuda/timeline.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "agentcompile/core/error.h"

namespace ac::cuda {

namespace {

std::string type_name(DType t) {
  switch (t) {
    case DType::BF16: return "ac_bf16";
    case DType::F16: return "ac_f16";
    case DType::F32: return "float";
    default: throw_internal("kernel family", "unsupported type parameter dtype");
  }
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

Family ref(const std::string& op, const std::string& header, const std::string& params_struct, const std::string& fn,
           std::vector<std::string> types, std::vector<ParamDomain> extra = {}, std::string description = "") {
  Family f;
  f.op = op;
  f.name = "ref";
  f.header = header;
  f.params_struct = params_struct;
  f.device_fn = fn;
  f.params = {{"BLOCK", {128, 256}}};
  for (auto& p : extra) f.params.push_back(std::move(p));
  f.type_params = std::move(types);
  f.description = description.empty() ? "reference: simple, any shape, f32 accumulation" : std::move(description);
  return f;
}

// A GEMV family's form over FP8 e4m3 weights (W8A16): the same parameters, SCALE, the layout of
// its f32 scales (0 one per output row, 1 one per 128 x 128 block), and CVT, how the codes are
// widened (0 cvt instructions, 1 bit moves and a bf16x2 multiply: the same values), read by `fn`.
Family over_fp8(Family f, const std::string& name, const std::string& fn, std::string description) {
  f.name = name;
  f.device_fn = fn;
  f.params.push_back({"SCALE", {0, 1}});
  f.params.push_back({"CVT", {0, 1}});
  f.description = std::move(description);
  return f;
}

// Both decode attention kernels give each thread GROUP * HD / BLOCK outputs (query head, dim).
std::string attn_outputs_per_thread(const std::map<std::string, int>& v) {
  if ((v.at("GROUP") * v.at("HD")) % v.at("BLOCK") != 0) return "GROUP * HD must divide among the threads";
  if (v.at("GROUP") * v.at("HD") / v.at("BLOCK") > 16) return "more than 16 outputs per thread";
  return "";
}

// "" when `bytes` of dynamic shared memory fit what the largest GPU allows, else why not.
std::string dynamic_smem_fits(int bytes) {
  if (bytes <= kMaxDynamicSmem) return "";
  return "needs " + std::to_string(bytes) + " bytes of dynamic shared memory (" + std::to_string(kMaxDynamicSmem / 1024) +
         " KiB limit)";
}

// attn_decode.fused's and .cluster's split: its K and V rows and scores in dynamic shared memory.
std::string attn_split_smem_fits(const std::map<std::string, int>& v) {
  return dynamic_smem_fits(attn_fused_smem_bytes(v.at("SPLIT"), v.at("HD"), v.at("GROUP")));
}

std::vector<Family> build_families() {
  std::vector<Family> v;
  v.push_back(ref("embed", "embed/reference.cuh", "EmbedParams", "embed_ref", {"W"}));
  v.push_back(ref("rms_norm", "rms_norm/reference.cuh", "RmsNormParams", "rms_norm_ref", {"W"}));
  v.push_back(ref("linear", "linear/reference.cuh", "LinearParams", "linear_ref", {"W"}, {},
                  "reference: one warp per output, any shape, f32 accumulation"));
  v.push_back(ref("rope", "rope/reference.cuh", "RopeParams", "rope_ref", {}));
  v.push_back(ref("kv_write", "attention/reference.cuh", "KvWriteParams", "kv_write_ref", {}));
  // MAXD * BLOCK must cover head_dim: MAXD in {1, 2, 4} handles head_dim up to 4 * BLOCK.
  v.push_back(ref("attention", "attention/reference.cuh", "AttentionParams", "attention_ref", {}, {{"MAXD", {1, 2, 4}}},
                  "reference: one block per (head, token), online softmax over the KV cache"));
  v.push_back(ref("swiglu", "elementwise/reference.cuh", "ElementwiseParams", "swiglu_ref", {}));
  v.push_back(ref("add", "elementwise/reference.cuh", "ElementwiseParams", "add_ref", {}));
  v.push_back(ref("cast", "elementwise/reference.cuh", "CastParams", "cast_ref", {"OUT"}));
  v.push_back(ref("bias", "elementwise/reference.cuh", "BiasParams", "bias_ref", {"W"}));
  v.push_back(ref("fp8_dequant", "elementwise/reference.cuh", "Fp8DequantParams", "fp8_dequant_ref", {"OUT"}, {},
                  "reference: FP8 e4m3 codes times their f32 scales into a 16-bit matrix, any shape"));
  {  // the fast path's prefill GEMMs read FP8 projections through this
    Family f = ref("fp8_dequant", "elementwise/fp8_dequant.cuh", "Fp8DequantParams", "fp8_dequant_rows", {"OUT"}, {},
                   "FP8 e4m3 codes times their f32 scales into a 16-bit matrix: one grid row per matrix row, 16 codes "
                   "per 16-byte load (K % 16 == 0, scale blocks of whole 16-column groups)");
    f.name = "rows";
    f.type_domain = {DType::BF16, DType::F16};
    v.push_back(std::move(f));
  }
  {  // the fast path's prefill: 16-bit GEMM inputs written by the pass before, no cast pass
    Family f = ref("rms_norm", "rms_norm/cast.cuh", "NormCastParams", "rms_norm_cast", {"W"}, {},
                   "RMSNorm of f32 rows written in gamma's 16-bit dtype (the prefill GEMMs' input), one block per row");
    f.name = "cast";
    f.type_domain = {DType::BF16, DType::F16};
    v.push_back(std::move(f));
    Family g = ref("swiglu", "elementwise/swiglu16.cuh", "Swiglu16Params", "swiglu_w16", {"W"}, {},
                   "silu(gate) * up over 16-bit gate/up GEMM outputs, rounded to their dtype (the prefill's down input)");
    g.name = "w16";
    g.type_domain = {DType::BF16, DType::F16};
    v.push_back(std::move(g));
  }
  v.push_back(ref("gather_rows", "elementwise/reference.cuh", "GatherRowsParams", "gather_rows_ref", {}));
  v.push_back(ref("argmax", "sampling/argmax.cuh", "ArgmaxParams", "argmax_ref", {}));
  v.push_back(ref("moe_route", "moe/reference.cuh", "MoeRouteParams", "moe_route_ref", {}, {},
                  "reference: a token's experts from its router logits (f32 softmax, top-k, ties to the lower index)"));
  v.push_back(ref("moe_gate_up", "moe/reference.cuh", "MoeExpertParams", "moe_gate_up_ref", {"W"}, {},
                  "reference: silu(gate x) * (up x) of each picked expert, one warp per output"));
  v.push_back(ref("moe_down", "moe/reference.cuh", "MoeExpertParams", "moe_down_ref", {"W"}, {},
                  "reference: the picked experts' weighted down projections summed in expert order"));
  {  // the fast path's router and routing (moe/router.cuh, moe/route.cuh)
    Family fused = ref("moe_router", "moe/router.cuh", "MoeRouterParams", "moe_router_fused", {"W"}, {},
                       "a token's post-attention RMSNorm, its router logits (a warp per expert, 16-byte loads) and its "
                       "picks (one warp) in one block");
    fused.name = "fused";
    fused.params = {{"BLOCK", {256, 512, 1024}}};
    fused.type_domain = {DType::BF16, DType::F16};
    v.push_back(std::move(fused));
    Family r = ref("moe_router", "moe/router.cuh", "MoeRouterParams", "moe_router_logits", {"W"}, {},
                   "the post-attention RMSNorm of a token's row and its router logits, a warp per expert (16-byte loads), "
                   "BLOCK / 32 experts per block; PICK 1: the last of a token's blocks picks its experts (2: each "
                   "probability once, each round's best by warp-wide integer reductions); ILP: a warp's row loads in "
                   "flight (1, 4 or 8); NORM 1: gamma in registers before the wait, the row read once");
    r.name = "logits";
    r.params.push_back({"PICK", {0, 1, 2}});
    r.params.push_back({"ILP", {0, 1, 2}});
    r.params.push_back({"NORM", {0, 1}});
    r.type_domain = {DType::BF16, DType::F16};
    v.push_back(std::move(r));
    Family f = ref("moe_route", "moe/route.cuh", "MoeRouteParams", "moe_route_warp", {}, {},
                   "a token's experts from its router logits, one warp per token: f32 softmax by warp reductions, top-k "
                   "by warp argmax (ties to the lower index), stored in expert order");
    f.name = "warp";
    v.push_back(std::move(f));
    Family count = ref("moe_count", "moe/route.cuh", "MoeCountParams", "moe_count_union", {}, {},
                       "the distinct experts among a decode step's picks in one layer, added to a counter (for the "
                       "floor of a batched step)");
    count.name = "union";
    v.push_back(std::move(count));
  }
  {  // the passes around a prompt's grouped expert GEMMs (moe/grouped.cuh)
    Family gather = ref("moe_gather", "moe/grouped.cuh", "MoeGroupedParams", "moe_gather_rows", {"W"}, {},
                        "a prompt's normalised rows in their picks' expert order, rounded to 16 bits (the grouped "
                        "expert GEMMs' input), one block per pick");
    gather.name = "rows";
    gather.type_domain = {DType::BF16, DType::F16};
    v.push_back(std::move(gather));
    Family combine = ref("moe_combine", "moe/grouped.cuh", "MoeGroupedParams", "moe_combine_rows", {"W"}, {},
                         "each token's picks' 16-bit down outputs weighted and added into the residual in expert "
                         "order, one block per token");
    combine.name = "rows";
    combine.type_domain = {DType::BF16, DType::F16};
    v.push_back(std::move(combine));
  }
  for (const char* part : {"gate_up", "down"}) {  // the fast path's MoE MLP (moe/gemv.cuh)
    const bool gu = std::string(part) == "gate_up";
    Family f = ref(std::string("moe_") + part, "moe/gemv.cuh", "MoeGemvParams", gu ? "moe_gate_up_gemv" : "moe_down_gemv",
                   {"W"}, {{"ROWS", {1, 2, 4}}, {"ILP", {0, 1}}, {"DIRECT", {0, 1}}},
                   gu ? "silu(gate x) * (up x) of every picked expert, x RMSNorm'd in the block, ROWS features per warp, "
                        "16-byte weight loads; x staged in shared memory or (DIRECT) read through L1"
                      : "the picked experts' weighted down projections added to the residual in expert order, ROWS "
                        "outputs per warp, 16-byte weight loads; the activations staged or (DIRECT) read through L1");
    f.name = "gemv";
    f.type_domain = {DType::BF16, DType::F16};
    if (gu) {  // OCC 1: registers bounded for a full SM of blocks (32 at BLOCK 128), so with moe_early
               // the down projection's blocks find room to wait beside the gate/up GEMV's
      f.params.push_back({"OCC", {0, 1}});
      f.min_blocks = [](const std::map<std::string, int>& p) { return p.at("OCC") ? 2048 / p.at("BLOCK") : 0; };
      f.constraint = [](const std::map<std::string, int>& p) -> std::string {
        return p.at("OCC") && (p.at("ILP") || p.at("ROWS") > 1)
                   ? "OCC 1 bounds registers at 2048 threads per SM: only ROWS 1 at ILP 0 fits without spilling"
                   : "";
      };
    }
    v.push_back(std::move(f));
  }
  {
    Family f = ref("moe_down", "moe/down_split.cuh", "MoeGemvParams", "moe_down_split", {"W"},
                   {{"ROWS", {1, 2, 4}}, {"ILP", {0, 1}}},
                   "a decode step's down projection with a grid row per pick (ROWS outputs per warp of one expert, ILP: "
                   "a row's loads in flight); the last of a token's blocks adds the picks' products into the residual in "
                   "expert order");
    f.name = "split";
    f.type_domain = {DType::BF16, DType::F16};
    v.push_back(std::move(f));
  }
  v.push_back(ref("argmax_finish", "sampling/argmax.cuh", "ArgmaxFinishParams", "argmax_finish", {}, {},
                  "the token of each row from an argmax GEMV's published (logit, row) keys; one block, after it"));
  v.push_back(ref("read_probe", "probe/read.cuh", "ReadProbeParams", "read_probe", {}, {},
                  "the read ceiling: one contiguous tile per block read with the GEMVs' weight load, summed"));
  {  // the k largest logits per row, for top-k sampling on the device
    Family f;
    f.op = "topk";
    f.name = "radix";
    f.header = "sampling/topk.cuh";
    f.params_struct = "TopKParams";
    f.device_fn = "topk_radix";
    f.params = {{"BLOCK", {256, 512, 1024}}};
    f.description = "k largest logits of each row: 8-bit radix select of the k-th key, then a gather "
                    "(ties to the lower token id); one block per row";
    v.push_back(std::move(f));
  }

  // ---- fast decode families (issue 9): fused, memory-bound, searched over their parameters ----
  {
    Family f;
    f.op = "gemv";
    f.name = "fused";
    f.header = "gemv/gemv.cuh";
    f.params_struct = "GemvParams";
    f.device_fn = "gemv";
    f.params = {{"BLOCK", {128, 256}}, {"ROWS", {1, 2, 4}},  {"UNROLL", {1, 2, 4}},
                {"SPLITK", {1, 2, 4, 8}}, {"BATCH", {1, 2, 4, 8}}, {"EPI", {0, 1, 2, 3}}};
    f.type_params = {"W"};
    f.type_domain = {DType::BF16, DType::F16};
    f.description = "decode GEMV with fused RMSNorm prologue and store/residual/SwiGLU/argmax epilogues, "
                    "16-byte streaming weight loads, split-K, batch <= BATCH";
    f.constraint = [](const std::map<std::string, int>& v) -> std::string {
      const int mats = v.at("EPI") == 2 ? 2 : 1;
      if (v.at("SPLITK") > 1 && v.at("EPI") != 1) return "split-K needs the residual epilogue (atomic adds)";
      // The register budget the fast path binds a point under (fast_gemv_variant adapts a point
      // chosen at a smaller batch to it): at most 8 accumulators per lane and 8 loads x batch
      // columns in flight, or else one row and no unroll (batch 8 with two matrices: 16).
      const int rows = v.at("ROWS"), unroll = v.at("UNROLL"), batch = v.at("BATCH");
      if (rows > 1 && rows * batch * mats > 8) return "more than 8 accumulators per lane (registers)";
      if (unroll > 1 && rows * unroll * mats * batch > 8)
        return "more than 8 rows x chunks x batch columns in flight per lane (registers)";
      return "";
    };
    v.push_back(std::move(f));
  }
  v.push_back(over_fp8(v.back(), "fp8", "gemv_fp8",
                       "decode GEMV over FP8 e4m3 weights (one byte each, 16 per streaming load, converted exactly "
                       "in registers: cvt e4m3x2 on sm_89+, CVT 0, or bit moves and a bf16x2 multiply, CVT 1, "
                       "sm_80+) with f32 scales per output row (SCALE 0) or per "
                       "128 x 128 block (SCALE 1, staged in shared memory); gemv.fused's prologue, epilogues and "
                       "split-K; W is the 16-bit type of gamma and the bias"));
  {
    // gemv.fused's output projection (residual epilogue) staging x' from attn_decode.parts's partials.
    Family f = v[v.size() - 2];
    f.name = "merged";
    f.device_fn = "gemv_merged";
    f.params = {{"BLOCK", {128, 256}}, {"ROWS", {1, 2, 4}}, {"UNROLL", {1, 2, 4}},
                {"SPLITK", {1, 2, 4, 8}}, {"BATCH", {1}}, {"PARTS", {2, 4, 8, 16}}};
    f.description = "decode output projection (gemv.fused, residual epilogue) whose x' is the attention's output, "
                    "merged while it is staged from attn_decode.parts's PARTS partials (softmax of their maxima "
                    "and sums); batch 1";
    f.constraint = [](const std::map<std::string, int>& v) -> std::string {
      if (v.at("ROWS") * v.at("UNROLL") > 8) return "more than 8 rows x chunks in flight per lane (registers)";
      return "";
    };
    v.push_back(std::move(f));
  }
  {
    Family f;
    f.op = "gemv";
    f.name = "mma";
    f.header = "gemv/gemv_mma.cuh";
    f.params_struct = "GemvParams";
    f.device_fn = "gemv_mma";
    f.params = {{"BLOCK", {128, 256, 512}}, {"MT", {1, 2, 4}}, {"UNROLL", {1, 2, 4}}, {"SPLITK", {1, 2, 4, 8}},
                {"TERMS", {2, 3}}, {"BATCH", {1, 2, 4, 8}}, {"EPI", {0, 1, 2, 3}}};
    f.description = "batched decode GEMV (skinny GEMM) on the tensor cores: mma.sync m16n8k16 over 16-row bf16 "
                    "weight tiles and all batch columns, f32 activations split into bf16 terms, the block's "
                    "warps splitting K; same RMSNorm prologue and epilogues as gemv.fused (bf16 weights, sm_80+)";
    f.constraint = [](const std::map<std::string, int>& v) -> std::string {
      const int mats = v.at("EPI") == 2 ? 2 : 1;
      if (v.at("SPLITK") > 1 && v.at("EPI") != 1) return "split-K needs the residual epilogue (atomic adds)";
      if (v.at("MT") * v.at("UNROLL") * mats > 4) return "more than 4 tiles x chunks in flight per lane (registers)";
      return "";
    };
    v.push_back(std::move(f));
  }
  v.push_back(over_fp8(v.back(), "mma_fp8", "gemv_mma_fp8",
                       "batched decode GEMV on the tensor cores over FP8 e4m3 weights: gemv.mma with each lane's 16 "
                       "codes (one 16-byte load, 64-k chunks) converted exactly to bf16 in registers (CVT 0 through "
                       "cvt and f32, CVT 1 by bit moves and a bf16x2 multiply), f32 scales per "
                       "output row (SCALE 0, applied to the sums) or per 128 x 128 block (SCALE 1, folded into x per "
                       "chunk); K % 64 == 0, bf16 gamma and bias, sm_80+"));
  {
    Family f;
    f.op = "mlp";
    f.name = "fused";
    f.header = "gemv/mlp_fused.cuh";
    f.params_struct = "MlpParams";
    f.device_fn = "mlp_fused";
    f.params = {{"BLOCK", {128, 256, 512}}, {"KC", {16, 32, 64}}, {"ROWS", {1, 2, 4}}, {"UNROLL", {1, 2, 4}},
                {"BATCH", {1, 2}}};
    f.type_params = {"W"};
    f.type_domain = {DType::BF16, DType::F16};
    f.description = "a layer's MLP as one decode kernel (two regions): RMSNorm prologue, gate/up rows of KC "
                    "intermediate units, SwiGLU in shared memory, the matching W_down columns accumulated per "
                    "block and added into the residual stream with vector reductions once every block read it";
    f.constraint = [](const std::map<std::string, int>& v) -> std::string {
      const int warps = v.at("BLOCK") / 32, rows = v.at("ROWS"), kc = v.at("KC");
      if (kc % (warps * rows) != 0) return "KC gate/up rows must divide among WARPS x ROWS";
      if (rows * v.at("UNROLL") * 2 > 8) return "more than 8 rows x chunks in flight per lane (registers)";
      return "";
    };
    v.push_back(std::move(f));
  }
  {
    Family f = ref("qkv_post", "attention/qkv_post.cuh", "QkvPostParams", "qkv_post", {"W"}, {},
                   "q/k RMSNorm per head + rope + bf16 KV-cache write, one block per (head, token)");
    f.name = "fused";
    f.params = {{"BLOCK", {64, 128, 256}}};
    v.push_back(std::move(f));
  }
  {
    Family f = ref("qkv_post", "attention/qkv_post_rows.cuh", "QkvPostParams", "qkv_post_rows", {"W"},
                   {{"HD", {32, 64, 128, 256}}},
                   "qkv_post for prompt steps: one warp per (token, head) row, HD / 32 values per lane, rope from the "
                   "executor's tables");
    f.name = "rows";
    v.push_back(std::move(f));
  }
  {
    Family f;
    f.op = "attn_prefill";
    f.name = "pipe";
    f.header = "attention/prefill_pipe.cuh";
    f.params_struct = "PrefillAttnParams";
    f.device_fn = "attn_prefill_pipe";
    // PAIR 1: each block runs two query tiles in turn (a costly causal one and a cheap one).
    f.params = {{"BLOCK", {64, 128, 256}}, {"BK", {16, 32, 64}}, {"HD", {32, 64, 128}}, {"PAIR", {0, 1}}};
    f.min_sm = 80;  // mma.sync with bf16, ldmatrix, cp.async
    f.type_params = {"W"};  // the 16-bit output's type (PrefillAttnParams::out16); K/V are bf16
    f.type_domain = {DType::BF16, DType::F16};
    f.description = "prefill attention (FlashAttention-2): 16 query rows per warp of one sequence against BK-position "
                    "K/V tiles double-buffered by cp.async in dynamic shared memory, mma.sync bf16 with f32 "
                    "accumulation, fragments by ldmatrix (V transposed), online softmax in base 2, causal per row";
    f.constraint = [](const std::map<std::string, int>& v) -> std::string {
      if (std::string why = dynamic_smem_fits(attn_prefill_pipe_smem(v.at("BK"), v.at("HD"))); !why.empty()) return why;
      if (v.at("HD") / 2 + v.at("HD") / 8 + v.at("BK") / 2 > 128) return "more than 128 accumulator and fragment registers per lane";
      return "";
    };
    v.push_back(std::move(f));
  }
  {  // attn_prefill.pipe with Q in shared memory and MT m-tiles per warp (attention/prefill_qs.cuh)
    Family f = v.back();
    f.name = "qs";
    f.header = "attention/prefill_qs.cuh";
    f.device_fn = "attn_prefill_qs";
    f.params.push_back({"MT", {1, 2}});
    f.description = "prefill attention as attn_prefill.pipe (the same values) with the block's Q tile in shared memory "
                    "(A fragments by ldmatrix per k-chunk) and MT 16-row tiles per warp: each K and V fragment feeds MT "
                    "MMAs";
    f.constraint = [](const std::map<std::string, int>& v) -> std::string {
      if (std::string why = dynamic_smem_fits(attn_prefill_qs_smem(v.at("BLOCK"), v.at("MT"), v.at("BK"), v.at("HD")));
          !why.empty())
        return why;
      // O and S accumulators per lane. 160 (MT 2 at head dim 128 and BK 32: FlashAttention-2's 32
      // rows per warp) fits 255 registers without spilling at PAIR 0 and spilled 16 bytes at PAIR 1
      // (NVRTC, sm_90); 192 (BK 64) spilled at either.
      const int acc = v.at("MT") * (v.at("HD") / 2 + v.at("BK") / 2), most = v.at("PAIR") ? 144 : 160;
      if (acc > most) return "more than " + std::to_string(most) + " accumulator registers per lane";
      return "";
    };
    // MT 1 is for occupancy: 16 warps per SM (128 registers a lane) at BK up to 32, which NVRTC's
    // own choice missed by 3 registers at head dim 128, BK 32 (131: three 4-warp blocks). At BK 64
    // the bound spilled (40-48 bytes at head dims 64 and 128), as it did at PAIR 1 (the loop over
    // two tiles: 76 bytes at head dim 128, BK 32), which stays unbounded.
    f.min_blocks = [](const std::map<std::string, int>& v) {
      return v.at("MT") == 1 && v.at("BK") <= 32 && v.at("PAIR") == 0 ? 512 / v.at("BLOCK") : 0;
    };
    v.push_back(std::move(f));
  }
  {  // our own prompt GEMM (gemm/wgmma.cuh): a projection runs it where its plan route or prefill_wgmma says
    Family f;
    f.op = "gemm";
    f.name = "wgmma";
    f.header = "gemm/wgmma.cuh";
    f.params_struct = "GemmW16Params";
    f.device_fn = "gemm_wgmma";
    f.params = {{"BLOCK", {384}}, {"BN", {64, 128, 256}}, {"STAGES", {3, 4, 5}}, {"EPI", {0, 1, 2, 3}},
                {"PIPE", {0, 1}},    {"LOAD", {0, 1}},       {"CLUSTER", {1, 2}}, {"SCHED", {0, 1}}};
    f.type_params = {"W"};
    f.type_domain = {DType::BF16, DType::F16};
    f.needs_sm90a = true;
    f.min_sm = 90;
    f.grid_constant = true;  // LOAD 1: the tensor maps are read from the parameters
    f.cluster_dims = "1, CLUSTER, 1";  // CLUSTER 2: row-tile pairs sharing B (none at 1: see source_with)
    f.description = "prompt GEMM C = A B^T on wgmma (sm_90a): 128 x BN tiles (BN 256: two n128 wgmma), a producer "
                    "warpgroup filling STAGES "
                    "swizzled shared-memory stages by cp.async (LOAD 0) or one thread's TMA box copies (LOAD 1), two "
                    "consumer warpgroups waiting for each stage's wgmma "
                    "(PIPE 0) or keeping one stage's in flight (PIPE 1); C stored 16-bit (EPI 0), f32 (1), added into "
                    "f32 (2), or silu(gate) * up 16-bit from the gate and up projections' rows in one tile (3); "
                    "CLUSTER 2 (LOAD 1): pairs of row tiles each copying half of B into both by TMA multicast; "
                    "SCHED 1 (LOAD 1, CLUSTER 1, BN 64/128): persistent blocks whose two consumer warpgroups take "
                    "whole tiles in turns, one's stores overlapping the other's wgmma; "
                    "a prompt projection's route where its plan (prefill_gemm) or prefill_wgmma puts it there";
    f.constraint = [](const std::map<std::string, int>& v) -> std::string {
      if (v.at("CLUSTER") > 1 && v.at("LOAD") != 1) return "a cluster shares B through the copy engine (LOAD 1)";
      if (v.at("SCHED") == 1 && (v.at("LOAD") != 1 || v.at("CLUSTER") != 1 || v.at("BN") > 128))
        return "the persistent schedule takes LOAD 1, CLUSTER 1 and BN up to 128 (a warpgroup holds a whole tile's sums)";
      return dynamic_smem_fits(gemm_wgmma_smem(v.at("BN"), v.at("STAGES")));
    };
    v.push_back(std::move(f));
  }
  {  // our own prompt GEMM for sm_80+ (gemm/mma.cuh): a projection runs it where its plan route or prefill_mma says
    Family f;
    f.op = "gemm";
    f.name = "mma";
    f.header = "gemm/mma.cuh";
    f.params_struct = "GemmW16Params";
    f.device_fn = "gemm_mma";
    f.params = {{"BLOCK", {256}}, {"BN", {64, 128}}, {"STAGES", {3, 4}}, {"EPI", {0, 1, 2, 3}}};
    f.type_params = {"W"};
    f.type_domain = {DType::BF16, DType::F16};
    f.min_sm = 80;
    f.description = "prompt GEMM C = A B^T on mma.sync m16n8k16 (sm_80+): 128 x BN tiles of 8 warps, 32-wide K steps "
                    "through STAGES cp.async stages, ldmatrix from padded rows; C stored 16-bit (EPI 0), f32 (1), added "
                    "into f32 (2), or silu(gate) * up 16-bit (3); a prompt projection's route where its plan "
                    "(prefill_gemm) or prefill_mma puts it there";
    f.constraint = [](const std::map<std::string, int>& v) {
      return dynamic_smem_fits(gemm_mma_smem(v.at("BN"), v.at("STAGES")));
    };
    // Given the block size alone, ptxas held BN 128's SwiGLU epilogue to 128 registers and spilled
    // (4 bytes, NVRTC, sm_80 and sm_90); one block per SM lets it keep every accumulator.
    f.min_blocks = [](const std::map<std::string, int>& v) { return v.at("EPI") == 3 && v.at("BN") == 128 ? 1 : 0; };
    v.push_back(std::move(f));
  }
  {
    Family f;
    f.op = "attn_decode";
    f.name = "split";
    f.header = "attention/decode.cuh";
    f.params_struct = "DecodeAttnParams";
    f.device_fn = "attn_decode";
    f.params = {{"BLOCK", {64, 128, 256}}, {"TILE", {16, 32, 64}}, {"SPLIT", {16, 32, 64, 128, 256, 512}},
                {"HD", {32, 64, 128, 256}}, {"GROUP", {1, 2, 3, 4, 5, 6, 8}}};
    f.description = "flash-decoding over the bf16 KV cache: splits of the positions, a query group per KV head";
    f.constraint = [](const std::map<std::string, int>& v) -> std::string {
      if (v.at("SPLIT") % v.at("TILE") != 0) return "SPLIT must be whole tiles";
      if (std::string why = attn_outputs_per_thread(v); !why.empty()) return why;
      // Static shared memory (K and V tiles, q, scores) must stay under the 48 KiB static limit.
      const int tile = v.at("TILE"), hd = v.at("HD"), group = v.at("GROUP");
      const int bytes = 2 * tile * (hd + 8) * 2 + group * hd * 4 + group * tile * 4 + 3 * group * 4;
      if (bytes > 48 * 1024) return "needs " + std::to_string(bytes) + " bytes of static shared memory (48 KiB limit)";
      return "";
    };
    v.push_back(std::move(f));
  }
  {
    Family f;
    f.op = "attn_decode";
    f.name = "cluster";
    f.header = "attention/decode_cluster.cuh";
    f.params_struct = "FusedAttnParams";
    f.device_fn = "attn_decode_cluster";
    f.type_params = {"W"};
    f.type_domain = {DType::BF16, DType::F16};
    // CLUSTER 16 is a non-portable cluster size (sm_90 allows it; the loader opts in).
    f.params = {{"BLOCK", {64, 128, 256, 512}}, {"SPLIT", {16, 32, 64, 96, 128, 160, 192, 256, 384, 512}},
                {"HD", {32, 64, 128, 256}}, {"GROUP", {1, 2, 3, 4, 5, 6, 8}}, {"CLUSTER", {2, 4, 8, 16}}};
    f.min_sm = 90;
    f.cluster_dims = "1, CLUSTER, 1";
    f.description = "batch-1 decode attention: attn_decode.fused's steps on CLUSTER equal shares of the positions "
                    "(at most SPLIT each), the blocks of a KV head one thread block cluster that merges the partials "
                    "through distributed shared memory instead of global memory, a fence and a counter";
    f.constraint = [](const std::map<std::string, int>& v) -> std::string {
      if (std::string why = attn_outputs_per_thread(v); !why.empty()) return why;
      if ((v.at("GROUP") * v.at("HD")) % v.at("CLUSTER") != 0) return "GROUP * HD must divide among the cluster's blocks";
      return attn_split_smem_fits(v);
    };
    v.push_back(std::move(f));
  }
  {
    // attn_decode.cluster's attention (its parameters; SPLIT the short range's) and the output
    // projection: COPIES clusters per KV head, LATE where the W_o tile is copied.
    const Family& cluster = v.back();
    Family f = cluster;
    f.op = "attn_o";
    f.header = "attention/decode_cluster_o.cuh";
    f.params_struct = "AttnOParams";
    f.device_fn = "attn_o_cluster";
    for (ParamDomain& d : f.params)
      if (d.name == "SPLIT") d.values = {16, 32, 64, 128};
    f.params.push_back({"COPIES", {1, 2, 4}});
    f.params.push_back({"LATE", {0, 1, 2}});
    f.description = "batch-1 decode attention and output projection in one kernel: attn_decode.cluster's attention "
                    "in COPIES clusters per KV head, each block multiplying the merged outputs by its tile of W_o "
                    "(copied to shared memory before the wait, or with LATE once the query is in) and adding into the "
                    "residual stream";
    f.constraint = [attn = cluster.constraint](const std::map<std::string, int>& v) -> std::string {
      if ((v.at("GROUP") * v.at("HD")) % 64 != 0) return "GROUP * HD must be a multiple of 64 (whole chunks per thread)";
      return attn(v);
    };
    v.push_back(std::move(f));
  }
  {
    // attn_decode.cluster's blocks without the cluster: the merge moves into the output
    // projection (gemv.merged).
    Family f = *std::find_if(v.begin(), v.end(), [](const Family& x) { return x.op == "attn_decode" && x.name == "cluster"; });
    f.name = "parts";
    f.header = "attention/decode_parts.cuh";
    f.device_fn = "attn_decode_parts";
    f.cluster_dims.clear();
    f.min_sm = 0;
    for (ParamDomain& d : f.params)
      if (d.name == "CLUSTER") d.name = "PARTS";
    f.description = "batch-1 decode attention: attn_decode.cluster's steps on PARTS equal shares of the positions "
                    "(at most SPLIT each) in independent blocks, each writing its unnormalised partial with its "
                    "maxima and sums to global memory for the output projection (gemv.merged) to merge";
    f.constraint = [](const std::map<std::string, int>& v) -> std::string {
      if (std::string why = attn_outputs_per_thread(v); !why.empty()) return why;
      if ((v.at("GROUP") * v.at("HD")) % 4 != 0) return "GROUP * HD must be whole float4";
      return attn_split_smem_fits(v);
    };
    v.push_back(std::move(f));
  }
  {
    Family f;
    f.op = "attn_decode";
    f.name = "fused";
    f.header = "attention/decode_fused.cuh";
    f.params_struct = "FusedAttnParams";
    f.device_fn = "attn_decode_fused";
    f.type_params = {"W"};
    f.type_domain = {DType::BF16, DType::F16};
    f.params = {{"BLOCK", {64, 128, 256, 512}}, {"SPLIT", {16, 32, 64, 128, 256}}, {"HD", {32, 64, 128, 256}},
                {"GROUP", {1, 2, 3, 4, 5, 6, 8}}, {"ILP", {1, 4}}};
    // Blocks of 64 or 128 threads get room for 64 registers (ptxas alone chose 32 and spilled,
    // e.g. HD 32 at BLOCK 64). Larger blocks have no bound: a full SM of 256-thread blocks (32
    // registers) made batch-8 decode 0.4-2% slower (bench/results/2026-12-01-warp-pass/).
    f.min_blocks = [](const std::map<std::string, int>& v) { return v.at("BLOCK") <= 128 ? 1024 / v.at("BLOCK") : 0; };
    f.description = "decode attention in one kernel: cached K/V prefetched (cp.async) before the wait on the "
                    "QKV projection, q/k norm + rope + KV-cache write, one pass per split, the last block of a "
                    "KV head merges the splits; ILP: independent accumulators in the dot products and P.V sums";
    f.constraint = [](const std::map<std::string, int>& v) -> std::string {
      if (std::string why = attn_outputs_per_thread(v); !why.empty()) return why;
      // The whole split's K and V rows and scores in dynamic shared memory: at most what the
      // largest GPU allows; a smaller GPU's limit (max_dynamic_smem) is for those who bind a point
      // there to check (the executor halves SPLIT to it, the search leaves larger points out).
      return attn_split_smem_fits(v);
    };
    v.push_back(std::move(f));
  }
  {
    Family f;
    f.op = "attn_combine";
    f.name = "split";
    f.header = "attention/decode.cuh";
    f.params_struct = "DecodeAttnParams";
    f.device_fn = "attn_combine";
    f.params = {{"SPLIT", {16, 32, 64, 128, 256, 512}}, {"HD", {32, 64, 128, 256}}};
    f.threads_param = "HD";
    f.description = "merges the splits of attn_decode";
    v.push_back(std::move(f));
  }
  {
    Family f;
    f.op = "decode_layers";
    f.name = "persistent";
    f.header = "persistent/decode_layers.cuh";
    f.params_struct = "PersistentParams";
    f.device_fn = "decode_layers_persistent";
    f.type_params = {"W"};
    f.type_domain = {DType::BF16, DType::F16};
    const std::vector<int> rows = {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16};
    f.params = {{"BLOCK", {160, 288, 416, 544}}, {"STAGES", {2, 3, 4, 5, 6, 8}}, {"SPLITS", {1, 2, 4, 8, 16}},
                {"HD", {32, 64, 128}},      {"GROUP", {1, 2, 4, 8}},       {"RQKV", rows},
                {"RO", rows},               {"RGU", {1, 2, 3, 4, 5, 6, 7, 8}}, {"RDOWN", rows}};
    f.min_sm = 90;  // bulk copies and transaction barriers
    f.min_blocks = [](const std::map<std::string, int>&) { return 1; };
    f.description = "every decoder layer of a batch-1 decode step in one persistent kernel, one block per SM: a "
                    "producer warp streams the block's weight tiles of all layers into a shared-memory ring with bulk "
                    "copies while consumer warps wait on per-op counters and run RMSNorm + QKV, the attention "
                    "(splits merged by the last), the output projection, gate/up with SwiGLU and down";
    f.constraint = [](const std::map<std::string, int>& v) -> std::string {
      if (v.at("GROUP") > v.at("BLOCK") / 32 - 1) return "one consumer warp per query head of a KV group";
      return "";
    };
    v.push_back(std::move(f));
  }
  return v;
}

}  // namespace

const std::vector<Family>& families() {
  static const std::vector<Family> f = build_families();
  return f;
}

const Family& find_family(const std::string& op, const std::string& name) {
  for (const auto& f : families())
    if (f.op == op && f.name == name) return f;
  throw_internal("kernel family", "no family " + op + "." + name);
}

int resident_blocks_by_registers(int registers, int threads, const std::string& arch) {
  const int sm = arch.rfind("sm_", 0) == 0 ? std::atoi(arch.c_str() + 3) : 0;
  const int max_threads = sm == 80 || sm >= 90 ? 2048 : 1536;
  const int warps = (threads + 31) / 32;
  const int per_warp = (std::max(registers, 1) * 32 + 255) / 256 * 256;
  return std::max(0, std::min({65536 / (per_warp * warps), max_threads / threads, 32}));
}

int max_dynamic_smem(const std::string& arch) {
  int sm = 0;
  if (arch.rfind("sm_", 0) == 0) sm = std::atoi(arch.c_str() + 3);
  const int kib = sm >= 90 ? 227 : sm == 80 || sm == 87 ? 163 : 99;
  return (kib - 16) * 1024;
}

std::string arch_constraint(const Family& f, const std::string& arch) {
  if (f.needs_sm90a && arch != "sm_90a") return "needs sm_90a (wgmma/TMA)";
  if (f.min_sm > 0 && (arch.size() < 4 || std::atoi(arch.c_str() + 3) < f.min_sm))
    return "needs sm_" + std::to_string(f.min_sm) + " or later";
  return "";
}

Variant make_variant(const Family& f, std::map<std::string, int> values, std::vector<DType> types,
                     const std::string& arch) {
  Variant v{&f, std::move(values), std::move(types), arch};
  if (v.types.size() != f.type_params.size()) throw_internal(f.op + "." + f.name, "wrong number of type parameters");
  for (DType t : v.types)
    if (std::find(f.type_domain.begin(), f.type_domain.end(), t) == f.type_domain.end())
      throw_internal(f.op + "." + f.name, "type " + std::string(dtype_user_name(t)) + " is outside its domain");
  for (const auto& d : f.params) {
    auto it = v.values.find(d.name);
    if (it == v.values.end()) throw_internal(f.op + "." + f.name, "parameter " + d.name + " not bound");
    if (std::find(d.values.begin(), d.values.end(), it->second) == d.values.end())
      throw_internal(f.op + "." + f.name, d.name + "=" + std::to_string(it->second) + " is outside its domain");
  }
  if (v.values.size() != f.params.size()) throw_internal(f.op + "." + f.name, "unknown parameter bound");
  if (std::string why = arch_constraint(f, arch); !why.empty()) throw_internal(v.name(), why);
  if (f.constraint)
    if (std::string why = f.constraint(v.values); !why.empty()) throw_internal(v.name(), why);
  return v;
}

int Variant::param(const std::string& n) const {
  auto it = values.find(n);
  if (it == values.end()) throw_internal(name(), "no parameter " + n);
  return it->second;
}

int Variant::threads() const { return param(family->threads_param); }

std::string Variant::name() const {
  std::string s = family->op + "__" + family->name;
  for (size_t i = 0; i < types.size(); ++i)
    s += "__" + lower(family->type_params[i]) + "_" + std::string(dtype_user_name(types[i]));
  for (const auto& d : family->params) s += "__" + lower(d.name) + std::to_string(values.at(d.name));
  std::string a = arch;
  a.erase(std::remove(a.begin(), a.end(), '_'), a.end());
  return s + "__" + a;
}

std::string Variant::source() const { return source_with(timeline_enabled(), 0); }

std::string Variant::source_with(bool tl, int min_blocks_override) const {
  const Family& f = *family;
  std::string s = "// agentcompile kernel variant " + name() + " (generated: bindings only)\n";
  // The developer timeline (backends/cuda/timeline.h) instruments every block around the body.
  if (tl) s += "#define AC_TIMELINE 1\n#include \"common/timeline.cuh\"\n";
  s += "#include \"" + f.header + "\"\n";
  std::string targs;
  for (const auto& d : f.params) {
    s += "constexpr int " + d.name + " = " + std::to_string(values.at(d.name)) + ";\n";
    targs += (targs.empty() ? "" : ", ") + d.name;
  }
  for (size_t i = 0; i < types.size(); ++i) {
    s += "using " + f.type_params[i] + " = " + type_name(types[i]) + ";\n";
    targs += (targs.empty() ? "" : ", ") + f.type_params[i];
  }
  // A family whose CLUSTER may be 1 launches without a cluster there (the kernel as it was before).
  const bool no_cluster = f.cluster_dims.empty() || (values.count("CLUSTER") && values.at("CLUSTER") == 1);
  const std::string cluster = no_cluster ? "" : "__cluster_dims__(" + f.cluster_dims + ") ";
  const int min_blocks = min_blocks_override > 0 ? min_blocks_override : f.min_blocks ? f.min_blocks(values) : 0;
  const std::string bounds = f.threads_param + (min_blocks > 0 ? ", " + std::to_string(min_blocks) : "");
  const std::string param = std::string("const ") + (f.grid_constant ? "__grid_constant__ " : "") + f.params_struct + " p";
  s += "extern \"C\" __global__ void __launch_bounds__(" + bounds + ") " + cluster + name() + "(" + param + ") {\n  " +
       (tl ? "AcTimelineScope ac_timeline_scope;\n  " : "") + f.device_fn + "<" + targs + ">(p);\n}\n";
  return s;
}

size_t space_size(const Family& f) {
  size_t n = 1;
  for (const auto& d : f.params) n *= d.values.size();
  for (size_t i = 0; i < f.type_params.size(); ++i) n *= f.type_domain.size();
  return n;
}

std::vector<Variant> sample_variants(const Family& f, const std::string& arch, size_t max) {
  std::vector<Variant> out;
  if (!arch_constraint(f, arch).empty()) return out;
  size_t type_combos = 1;
  for (size_t i = 0; i < f.type_params.size(); ++i) type_combos *= f.type_domain.size();
  size_t param_combos = 1;
  for (const auto& d : f.params) param_combos *= d.values.size();
  // Point `k` of the cross product in a fixed order (types outermost), or none if a constraint fails.
  auto point = [&](size_t k) -> std::optional<std::pair<std::map<std::string, int>, std::vector<DType>>> {
    std::vector<DType> types;
    size_t x = k / param_combos;
    for (size_t i = 0; i < f.type_params.size(); ++i) {
      types.push_back(f.type_domain[x % f.type_domain.size()]);
      x /= f.type_domain.size();
    }
    std::map<std::string, int> vals;
    size_t y = k % param_combos;
    for (const auto& d : f.params) {
      vals[d.name] = d.values[y % d.values.size()];
      y /= d.values.size();
    }
    if (f.constraint && !f.constraint(vals).empty()) return std::nullopt;
    return std::make_pair(std::move(vals), std::move(types));
  };
  const size_t total = type_combos * param_combos;
  if (total > (size_t(1) << 20)) {
    // A large space (decode_layers.persistent's: millions of points) is not listed: points of the
    // cross product scattered by a multiplicative hash (so every parameter varies), each moved
    // forward to the next valid one.
    for (size_t i = 0; i < max; ++i)
      for (size_t k = size_t((uint64_t(i) * 2654435761u) % total); k < total; ++k)
        if (auto pt = point(k)) {
          out.push_back(make_variant(f, pt->first, pt->second, arch));
          break;
        }
    return out;
  }
  // Enumerate the cross product in a fixed order, then keep an evenly spaced subset.
  std::vector<std::pair<std::map<std::string, int>, std::vector<DType>>> all;
  for (size_t k = 0; k < total; ++k)
    if (auto pt = point(k)) all.push_back(std::move(*pt));
  const size_t n = std::min(max, all.size());
  for (size_t i = 0; i < n; ++i) {
    auto& [vals, types] = all[i * all.size() / n];
    out.push_back(make_variant(f, vals, types, arch));
  }
  return out;
}

}  // namespace ac::cuda
