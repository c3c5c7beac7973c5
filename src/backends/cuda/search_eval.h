#pragma once
// The CUDA backend's side of the search (tuning contract): the fast path's parameters
// (FastConfig) as region families, and the evaluators that build, check and time their points.
//   GEMV slots (decode regions attn_in -> qkv, attn_out -> o, mlp_in -> gate_up, mlp_out -> down,
//   head -> lm_head): every valid gemv.fused point at batch 1 (or --max-batch), compiled with
//   NVRTC, checked against the f32 CPU composition (RMSNorm prologue, store/residual/SwiGLU/argmax
//   epilogue; 2 seeds, outputs poisoned or residual-seeded), timed as a CUDA graph of 24
//   back-to-back launches over weight copies that defeat the L2 (median of the repeats).
//   attention (decode): BLOCK x SPLIT of attn_decode.fused, the kernel alone at the summary's
//   batch and context (as the executor binds it): checked against the f32 CPU reference (q/k
//   norm, rope, attention with GQA sharing; 3 contexts, outputs and unwritten cache rows poisoned;
//   relative L2 <= 1e-5, the written K/V row <= 1e-2) and timed like the GEMVs, as a CUDA graph of
//   back-to-back launches over KV-cache copies that defeat the L2.
//   prompt steps: the attention (attn_prefill.pipe's BLOCK x BK, the kernel alone on a prompt of at
//   least 2048 tokens, against double precision at ragged lengths) and the four projection GEMMs
//   (cuda:gemm.lt: the rank in cuBLASLt's heuristic list; cuda:gemm.wgmma / cuda:gemm.mma: our own
//   GEMM's point, gate/up with SwiGLU in one launch; the GEMM alone on the same prompt length,
//   sampled rows against double precision).
// The fallback of each is FastConfig's default for it. Each evaluator's prepare() compiles all
// the candidates' variants with NVRTC in parallel threads before the first is measured.
#include <memory>
#include <string>
#include <vector>

#include "agentcompile/plan/plan.h"
#include "agentcompile/tuning/evaluator.h"

namespace ac {

struct Graph;

// The fast path's family of a decode region (GEMV slots: gemv.fused, or gemv.mma where the
// executor runs it at the summary's batch; attention: attn_decode.cluster at batch 1 within the
// short range, else attn_decode.fused), its constraint bound to the region's shapes on `t`'s
// architecture; none for other regions (notes say why).
std::vector<FamilySpace> cuda_fast_families(const Graph& g, const RegionSummary& s, const TargetFacts& t,
                                            std::vector<std::string>* notes);
// The evaluator of a decode region whose space holds a fast-path family; null otherwise.
std::unique_ptr<Evaluator> cuda_fast_evaluator(const Graph& g, const RegionTask& t);

// A prompt step's projection GEMM region (attn_in, attn_out, mlp_in, mlp_out: out_dim N, in K) on
// `tokens` rows; its candidates are cublasGemmEx (the fallback), cuda:gemm.lt's ranks and our own
// gemm.wgmma and gemm.mma points at store `epi` (prefill_gemm_epi: mlp_in's 3 fuses SwiGLU).
std::unique_ptr<Evaluator> make_prefill_gemm_evaluator(RegionKind kind, long long N, long long K, long long tokens, DType wt,
                                                       int epi);

// The attention region's evaluator (exposed for tests): the fused decode attention kernel at
// `batch` tokens of `context` positions each (their own slots), as the executor binds it.
std::unique_ptr<Evaluator> make_cuda_attention_evaluator(const Graph& g, int batch, int context);

// The fast path's kernel binaries for a plan: every variant it launches (all batch sizes),
// compiled by NVRTC in parallel (the kernel cache first) for `arch`; no GPU needed. BadInput when
// one does not compile.
std::vector<PlanKernelBinary> cuda_plan_kernels(const Graph& g, const KnobValues& fast, const std::string& arch);

// The plan's cuda_fast block from its decode routes: each knob the search picks (fast_knobs.cpp:
// gemv.fused / gemv.mma points by region, attn_decode.fused / .cluster (or .split, in older
// records) parameters, a route's own carveout) from the routes that bind it, the rest FastConfig's
// defaults (a fallback route keeps the default point).
KnobValues cuda_fast_from_routes(const std::vector<PlanRoute>& routes);
// The FastConfig::region_carveout key of a decode region ("attn_in" -> "qkv", ..., "attention");
// "" for a region without one.
std::string carveout_region_of(const std::string& region);

}  // namespace ac
