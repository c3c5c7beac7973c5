#pragma once
// The CUDA fast path's parameters (FastConfig): what its kernels read. Each member is a knob
// declared in fast_knobs.cpp, which derives from that one declaration plan.json's cuda_fast block,
// the developer override (AGENTCOMPILE_FAST_CONFIG) and where the search picks it; a member's
// initialiser is its default. No CUDA headers here.
#include <map>
#include <string>

namespace ac::cuda {

struct GemvChoice {
  int block = 256, rows = 1, unroll = 2, splitk = 1;
};
// A point of gemv.mma (the tensor-core GEMV for batch 2-8): rows of it are 16-row tiles (MT).
struct MmaChoice {
  int block = 256, mt = 1, unroll = 2, splitk = 1;
};
// A point of mlp.fused (a layer's MLP in one kernel): kc intermediate rows per unit, rows gate/up
// rows per warp per pass, bps blocks per SM (the grid is bps x SMs, capped by the occupancy and
// the units).
struct MlpChoice {
  int block = 256, kc = 16, rows = 1, unroll = 2, bps = 2;
};
// A prompt projection's GEMM route (prefill_gemm.<slot>): the library's (0: cublasGemmEx, or the
// plan's cuBLASLt rank), gemm.wgmma (1, sm_90) or gemm.mma (2, sm_80+) at this BN and STAGES, with
// gemm.wgmma's PIPE, LOAD, CLUSTER and SCHED. The compile searches it per prompt GEMM region, the
// library's routes and both families' points timed side by side.
inline constexpr int kGemmLibrary = 0, kGemmWgmma = 1, kGemmMma = 2;
struct OwnGemmChoice {
  int route = kGemmLibrary, bn = 128, stages = 4, pipe = 0, load = 0, cluster = 1, sched = 0;
};

// Parameters of every fused family the fast path launches; a compiled plan chooses them per
// model; the defaults are reasonable everywhere.
struct FastConfig {
  // Defaults: the points with the least total time over the three target models in the sweep of
  // bench/results/2026-11-30-gemv-sweep.txt (a plan picks per model). QKV: one row per warp since
  // the batch-1 attention runs in clusters (fewer registers, so the early-launched cluster finds
  // room sooner): W2 -0.8 / -0.7 / -1.3% against rows 2 on the H200
  // (bench/results/2026-11-30-cluster-attention/, "QKV point").
  GemvChoice qkv{256, 1, 4, 1};
  GemvChoice o{128, 2, 1, 4};
  GemvChoice gate_up{256, 1, 2, 1};
  GemvChoice down{256, 2, 2, 4};
  GemvChoice lm_head{256, 4, 1, 1};
  // Batches of at least mma_min_batch (bf16 weights, K % 32 == 0, sm_80+) run gemv.mma instead of
  // gemv.fused: at batch 8 it streams weights at 2.3-3.5 TB/s where gemv.fused manages 0.6-0.8
  // (bench/results/2026-11-30-mma/README.md); since gemv.mma's sweep points, batch 2 too (10.9-14.1%
  // faster per step than gemv.fused there, bench/results/2026-12-01-batch2-mma/).
  // Defaults: the best points of the batch-8 sweep there, common to most of the three models.
  bool batched_mma = true;
  int mma_min_batch = 2;
  int mma_terms = 2;
  MmaChoice qkv_mma{512, 1, 1, 1};
  MmaChoice o_mma{256, 1, 1, 4};
  MmaChoice gate_up_mma{128, 1, 1, 1};
  MmaChoice down_mma{128, 1, 1, 8};
  MmaChoice lm_head_mma{128, 4, 1, 1};
  // FP8 projections (e4m3 weights with row or 128 x 128 block scales) run gemv.fp8 at every batch,
  // with these points: it reads a byte per weight, so its best points differ from gemv.fused's
  // (a 16-bit lm_head, as FP8 checkpoints ship it, keeps lm_head's point). Defaults: per
  // projection the point with the least mean time relative to each case's best over the three
  // target models in both scale layouts (H100 sweep, bench/results/2026-12-06-fp8-points/: 1.03,
  // 1.00, 1.02 and 1.12x the best); at gemv.fused's points W2 decoded 18% / 17% slower
  // (Llama-3.2-1B / Qwen3-1.7B, 128 x 128 blocks). A plan searches them per model.
  GemvChoice qkv_fp8{128, 4, 2, 1};
  GemvChoice o_fp8{256, 4, 1, 4};
  GemvChoice gate_up_fp8{128, 2, 1, 1};
  GemvChoice down_fp8{256, 4, 1, 4};
  // An FP8 lm_head (compile --lm-head fp8; most checkpoints keep it 16-bit) runs gemv.fp8 at this
  // point, the argmax epilogue's. Not measured on a GPU yet: the 16-bit lm_head's block and rows,
  // which gate_up_fp8 (the widest projection) also nearly shares.
  GemvChoice lm_head_fp8{256, 4, 1, 1};
  // gemv.mma_fp8's points (FP8 weights at batches from mma_min_batch on): it reads a byte per
  // weight, so more 16-row tiles per block pay there. Defaults: the best points of the H100 batch-8
  // sweep on Qwen3-1.7B's projections with block scales (bench/results/2026-12-07-h100-sweeps/:
  // QKV 9.66 -> 6.80 us, o 5.43 -> 4.01, down 10.16 -> 7.26 against gemv.mma's points, gate/up the
  // same). A plan searches them per model.
  MmaChoice qkv_mma_fp8{512, 2, 1, 1};
  MmaChoice o_mma_fp8{256, 4, 1, 4};
  MmaChoice gate_up_mma_fp8{128, 1, 1, 1};
  MmaChoice down_mma_fp8{128, 2, 1, 8};
  MmaChoice lm_head_mma_fp8{128, 4, 1, 1};  // an FP8 lm_head's: not swept, lm_head_mma's
  // FP8 weights at batches from mma_min_batch on run gemv.mma_fp8 (the tensor cores, at the
  // points above) instead of gemv.fp8. On an H100, Qwen3-1.7B's W5 (batch 8) FP8 decode steps
  // took 1.61 ms with it and 7.78 ms with gemv.fp8, which reads every weight once per row.
  bool fp8_batched_mma = true;
  // How gemv.fp8 and gemv.mma_fp8 widen the e4m3 codes (their CVT): 0 with cvt instructions (e4m3
  // -> f16, then f32, and for the tensor cores f32 -> bf16), which run at a quarter of the integer
  // rate; 1 by bit moves and one bf16x2 multiply (the same values). Not run on a GPU yet, so 0.
  int fp8_cvt = 0;
  // Batch templates up to mlp_fused_batch (0: none) run a layer's MLP as one mlp.fused kernel
  // instead of the gate_up and down GEMVs (not yet measured on the GPU: off by default).
  int mlp_fused_batch = 0;
  MlpChoice mlp;
  int qkv_post_block = 128;
  int attn_block = 256, attn_tile = 32, attn_split = 32;
  int attn_ilp = 1;  // attn_decode.fused's ILP (1 or 4: within ±2% of each other end to end on the H200)
  // Decode steps whose longest sequence holds more than attn_long_from positions run the attention
  // with splits of attn_split_long (one more graph per batch size): short splits keep a short
  // context's blocks short, long ones keep a long context's merge short (the long ones may use
  // all of the GPU's shared memory). On the H200 split 256 decoded 21-29% faster than 32 at
  // 2048-2176 positions and 0.3-4.6% at 512-640, 32 was faster for Qwen3 at 128-256 (0.8-2.4%):
  // bench/results/2026-11-30-long-context/. 0: never.
  int attn_split_long = 256, attn_long_from = 384;
  // Batch-1 steps of at most attn_long_from positions run attn_decode.cluster with this many blocks
  // per KV head, merging their partials in a thread block cluster (2, 4 or 8; sm_90 and later),
  // instead of attn_decode.fused's splits of attn_split and their merge through global memory.
  // On the H200 at W2, 8: -5.4 / -8.1 / -2.2% per token (Llama-3.2-1B / Qwen3-1.7B / Qwen3-4B; 4
  // is better for Qwen3-4B, -4.9%); at batch 4-8 it was slower for Qwen3-4B (+17-27%), so batches
  // keep the splits (bench/results/2026-11-30-cluster-attention/). 0: never.
  int attn_cluster = 8;
  // Batch-1 steps past attn_long_from positions run attn_decode.cluster as well, with this many
  // blocks per KV head (2, 4, 8 or 16; 0: never), while CLUSTER blocks of attn_cluster_long_split
  // rows (0: 256) cover the context, then past their reach blocks of 512 rows where the GPU's
  // shared memory holds them (head dims up to 64 or so on sm_90; two more CUDA graphs per batch
  // size); longer steps keep attn_decode.fused's long splits. On the H200, 8 blocks of 256 rows
  // (2048 positions) decoded 5.1-9.0% faster than the long splits at 512-1152 positions for the
  // three target models (16 blocks or shorter splits were slower there), and Llama-3.2-1B's 8
  // blocks of 512 rows 5.0% faster at W3's 2048-2176 positions; head dim 128 fits only 384 rows,
  // which were -5.6% to +2.9% by model and plan there (bench/results/2026-11-30-cluster-long/).
  int attn_cluster_long = 8;
  int attn_cluster_long_split = 0;
  // Batch-1 steps in the short range run the attention and the output projection as one kernel
  // (attn_o.cluster) with this many clusters of attn_cluster blocks per KV head (1, 2 or 4), each
  // computing the whole attention and 1/attn_o of W_o's rows, where the model allows it (no
  // o_proj bias; hidden a multiple of the blocks per KV head; the tile within the shared memory);
  // 0: the attention and the output GEMV as two kernels. Off by default: on the H200 every form
  // was slower at W2 than the two kernels (best, 1 cluster with LATE 1: +0.9% Llama-3.2-1B, +2.0%
  // Qwen3-1.7B; bench/results/2026-12-01-attn-o/); the compile measures attn_o=1 per model.
  int attn_o = 0;
  // Batch-1 steps in the short range run attn_decode.parts (attn_decode.cluster's point without
  // the cluster: each block writes its partial to global memory) and the output projection as
  // gemv.merged (o's point), which merges the partials while staging x': the cluster's barriers
  // and merge leave the end of the attention, which is on a layer's critical path
  // (bench/results/2026-12-02-merge-proxy/). Needs the cluster attention there; attn_o wins.
  int attn_merge_o = 0;
  // attn_o.cluster's LATE: where its W_o tile is copied: 0 before the wait on the QKV projection,
  // 1 once the query is in (the fastest of the three on the H200), 2 as 1 with the tile asked
  // into L2 before the wait.
  int attn_o_late = 1;
  // Batch-1 decode steps run every decoder layer as one persistent kernel (decode_layers.persistent:
  // one block per SM whose producer warp streams the block's weight tiles of every layer into a
  // shared-memory ring across what are kernel boundaries in the chain) instead of the chain of
  // GEMVs and attention kernels; persistent_stage_kb sizes a ring stage (a tile's rows follow from
  // it), persistent_splits is the attention's splits per KV head. Off by default: it loses to the
  // chain on some models; the compile measures it per model (bench/results/2026-12-01-persistent/).
  int persistent = 0;
  int persistent_block = 288, persistent_stages = 5, persistent_splits = 8, persistent_stage_kb = 32;
  // The preferred shared-memory carveout (percent of the unified L1/shared store, 0-100) set on
  // every kernel the fast path launches; -1: none (the driver picks per kernel). On the H200 one
  // carveout for the whole chain decoded W2 faster by model-dependent values (Qwen3-1.7B best at
  // 40, Llama-3.2-1B at 25, Qwen3-4B at 60; 100 was slower everywhere:
  // bench/results/2026-12-01-smem-carveout/); the compile measures a few per model.
  int smem_carveout = -1;
  // Per decode region (valid_carveout_region: the five GEMV slots and "attention"): a carveout for that
  // region's kernels instead of smem_carveout (a launch attribute). The driver rounds a preference
  // to a split per kernel at thresholds set by its shared memory, and each decode kernel has
  // splits it runs well under; a GEMV point of another K split (other shared memory) may need
  // another value than the step's to land on a good one (on the H200, Qwen3-1.7B's down projection
  // at 256:4:1:8 was 1.8% slower under the step's 40 and 0.28% faster than the plan's point under
  // 30: bench/results/2026-12-03-carveout-map/). Absent: the step's.
  std::map<std::string, int> region_carveout;
  // Prefill steps (any step that is not a batch of one-token decodes) run attn_prefill.pipe
  // (query tiles of one sequence against double-buffered K/V tiles on tensor cores, each K/V tile
  // read once per tile of rows) instead of the decode attention once per row (0), where the head
  // dim is 32, 64 or 128; prefill_flash_block threads (16 query rows per warp), prefill_flash_bk
  // positions per K/V tile. On an H100 a 2048-token prompt's time to first token went from
  // 64.0 / 120.5 ms (per row) to 12.3 / 22.6 ms with a single-buffered tile kernel and to 11.0 /
  // 17.0 ms with this one on Llama-3.2-1B / Qwen3-1.7B, shorter prompts unchanged within noise
  // (bench/results/2026-12-06-prefill-flash/, 2026-12-06-prefill-pipe/).
  int prefill_flash = 1;
  int prefill_flash_block = 128, prefill_flash_bk = 64;
  // The prompt attention's form: attn_prefill.pipe, Q held in registers (0), or attn_prefill.qs
  // with Q in shared memory and this many 16-row tiles per warp (1, 2): fewer registers per lane
  // at MT 1 (124 instead of 164 at head dim 128 and BK 32 on sm_90), more MMAs per ldmatrix at
  // MT 2. The same values as pipe's. Searched with BLOCK and BK; not yet run on a GPU.
  int prefill_flash_qs = 0;
  // attn_prefill.pipe's blocks take the last query tile of every head first (0: the longest causal
  // rows start first, the short ones fill the last wave) or tile x of head y (1). The same bits
  // either way; 0 has not been timed on a GPU in this form.
  int prefill_flash_in_order = 0;
  // Each prompt-attention block runs two query tiles in turn, the costliest causal tile left with
  // the cheapest (1), instead of one (0): a 2048-token prompt's blocks then cost about the same, so
  // no SM waits out the last wave alone (Nsight Compute saw the SMs busy for 73% of the kernel's
  // cycles with one tile per block). Half the blocks, each twice as long; steps of at most two
  // blocks per SM (short prompts) keep one tile per block. The same bits either way. Searched with
  // the attention's point; not yet run on a GPU.
  int prefill_flash_pair = 0;
  // Prefill steps hand their GEMMs 16-bit inputs written by the pass before (rms_norm.cast, the
  // attention's cast, swiglu.w16 over 16-bit gate/up outputs), and the output and down GEMMs add
  // into the f32 residual stream themselves; 0: the f32 passes with a cast before every GEMM, an
  // f32 SwiGLU and separate residual adds.
  int prefill_w16 = 1;
  // With attn_prefill.pipe: qkv_post.rows writes Q as the attention's bf16 fragments (scaled and
  // rounded as the attention would round them: the same bits) instead of f32, half its bytes
  // written and read; 0 keeps f32 Q. On an H100 a 2048-token prompt took 9.04 / 14.46 ms with it
  // and 9.12 / 14.57 ms without (Llama-3.2-1B / Qwen3-1.7B, two interleaved rounds).
  int prefill_q16 = 1;
  // A prompt step's projection GEMMs (steps of at least kLtFromTokens tokens): -1 runs
  // cublasGemmEx (cuBLAS's own choice), r >= 0 the r-th algorithm of cuBLASLt's heuristic list for
  // the GEMM's shape (cuda:gemm.lt's ALGO, searched on a 2048-token prompt). Shorter steps always
  // run cublasGemmEx: the rank was measured at the search's length. The lm_head reads only the
  // sequences' last rows and stays on cublasGemmEx.
  int prefill_algo_qkv = -1, prefill_algo_o = -1, prefill_algo_gate_up = -1, prefill_algo_down = -1;
  // A prompt step's projection GEMMs (steps of at least kWgmmaFromTokens tokens, on sm_90, K a
  // multiple of 64) run the project's own gemm.wgmma at this BN and STAGES (1) instead of cuBLAS
  // or the plan's cuBLASLt rank (0): the GEMM whose epilogue the norms and SwiGLU could join. It
  // matches a double-precision GEMM on an H100; its best points ran at 0.58-0.87x cuBLAS's speed
  // there (bench/results/2026-12-08-h100-pingpong-plan/), so off.
  int prefill_wgmma = 0, prefill_wgmma_bn = 128, prefill_wgmma_stages = 4;
  // gemm.wgmma's PIPE: its consumers keep one stage's wgmma in flight (1) instead of waiting for
  // each stage's (0). Correct on an H100, within a few percent of PIPE 0 there, so 0.
  int prefill_wgmma_pipe = 0;
  // gemm.wgmma's LOAD: one producer thread's TMA box copies (1) instead of the producer warpgroup's
  // cp.async (0). Correct on an H100 and the faster there (0.77-0.87x cuBLAS at BN 256 against
  // 0.41-0.55x); 0 with the switch off.
  int prefill_wgmma_load = 0;
  // gemm.wgmma's CLUSTER: pairs of row tiles, each block copying half of B into both by TMA
  // multicast (2, LOAD 1 only), or none (1). Correct on an H100, within 3% of 1 there, so 1.
  int prefill_wgmma_cluster = 1;
  // gemm.wgmma's SCHED: persistent blocks whose consumer warpgroups take whole tiles in turns (1,
  // LOAD 1, CLUSTER 1, BN up to 128) or a block per tile (0). Correct on an H100 but slower there
  // (bench/results/2026-12-08-h100-pingpong-plan/), so 0.
  int prefill_wgmma_sched = 0;
  // A prompt step's projection GEMMs on the project's mma.sync GEMM (gemm.mma, sm_80+; 1) at this BN
  // and STAGES instead of cuBLAS (0), where gemm.wgmma does not take them (prefill_wgmma on sm_90).
  // Correct on an H100, 0.32-0.34x cuBLAS there (it is the sm_80 form), so off.
  int prefill_mma = 0, prefill_mma_bn = 128, prefill_mma_stages = 4;
  // Each prompt projection's own route (plans: the search's pick per region); where its route is the
  // library's, the switches above apply to it (developer overrides for every projection at once).
  OwnGemmChoice prefill_gemm_qkv, prefill_gemm_o, prefill_gemm_gate_up, prefill_gemm_down;
  // On either of our own GEMM routes, a dense layer's gate and up GEMMs and SwiGLU run as one launch
  // (1: EPI 3, the GEMMs' 16-bit outputs never written) instead of two GEMMs and swiglu.w16 (0).
  int prefill_swiglu_epilogue = 1;
  // A sparse (mixture-of-experts) layer's MLP: moe_gate_up.gemv and moe_down.gemv at this block
  // and rows per warp, for every step (decode and prompt). On an H100, Qwen3-30B-A3B's W2 decoded
  // at 5.39 ms/token with (128, 1) and 5.69 with (256, 2): the down GEMV's 2048 outputs make 512
  // blocks instead of 128 (1341 vs 1029 GB/s); its 128-token prompt took 137 instead of 121 ms
  // (bench/results/2026-12-06-moe30b-fast/).
  int moe_block = 128, moe_rows = 1;
  // Measured on an H100 on Qwen3-30B-A3B's first 8 layers (W2 decode, ms/token): the fused router
  // 1.200; the split router 1.029, with moe_ilp 1.019, with moe_direct 1.009, with both 1.078.
  // The expert GEMVs' loads in flight (moe/gemv.cuh ILP): 1 unrolls a row's dot product and runs
  // the down projection over the picks together, one reduction per output. Off: no clear gain.
  int moe_ilp = 0;
  // The expert GEMVs read their input rows through L1 (moe/gemv.cuh DIRECT) instead of staging
  // them in shared memory before the first weight load.
  int moe_direct = 1;
  // Decode steps run the down projection with a grid row per pick (moe_down.split: each warp one
  // expert's rows, the last block per outputs adds the picks in order; the same bits), 1; or
  // moe_down.gemv, whose warps walk the picks in turn, 0. On an H200, Qwen3-30B-A3B's first 8
  // layers: the down projection 0.148 -> 0.119 ms per step (1.36 -> 1.69 TB/s)
  // (bench/results/2026-12-07-h200-moe-decode/).
  int moe_down_split = 1;
  // The router: one block per token for the norm, the logits and the picks (moe_router.fused, 0),
  // or the logits over blocks of eight experts then the picks by a warp per token
  // (moe_router.logits, moe_route.warp: 1), or the picks by the last of each token's blocks to
  // finish (moe_router.logits PICK 1, 2: one launch fewer per layer; router and picks 0.160 ->
  // 0.142 ms per step on the H200's 8-layer cut).
  int moe_router_split = 2;
  // The split router's loads of an expert's row in flight per lane (moe_router.logits ILP): 0 one,
  // 1 four, 2 eight (all of a 2048-wide row's). On an H100, Qwen3-30B-A3B's first 8 layers (W2,
  // CUDA graphs): 0.788 -> 0.780 ms/token alone, 0.775 -> 0.768 with moe_early
  // (bench/results/2026-12-07-h100-moe-early/).
  int moe_router_ilp = 2;
  // At moe_router_split 2: the last block's picks with each probability computed once and each
  // round's best by warp-wide integer reductions (moe_router.logits PICK 2; the same picks), 1;
  // or recomputed and reduced by shuffles each round (PICK 1), 0. And the router's gamma loaded
  // before its wait, the residual row read once (NORM), 1. On an H100, Qwen3-30B-A3B's first 8
  // layers (W2, CUDA graphs, two rounds): 0.760 -> 0.734 ms/token with PICK 2, 0.747 with NORM 1
  // (bench/results/2026-12-07-h100-moe-router/).
  int moe_pick_redux = 1, moe_router_norm = 1;
  // The gate/up GEMV's registers bounded for a full SM of its blocks (moe_gate_up.gemv OCC 1: 32
  // at BLOCK 128 instead of 34), so with moe_early the down projection's blocks can wait beside it.
  // Only at moe_rows 1 and moe_ilp 0 (the other points would spill under the bound). Alone 0.760
  // -> 0.762 ms/token on the 8-layer cut; with the two above 0.728, the fastest measured, and the
  // whole model's 3.525 -> 3.329 ms/token (without it, with the two above: not measured yet).
  int moe_gate_up_occ = 1;
  // Decode steps launch the router, the picks and the expert GEMVs with programmatic dependent
  // launch (with pdl): each waits for the kernel before it in the kernel, the router after asking
  // L2 for its weights, so launches overlap the previous kernel's end as the dense GEMVs' do.
  // 0: ordinary launches. With the two above, the 8-layer cut's W2 decode went from 0.897-0.914
  // to 0.821-0.828 ms/token on an H200 (three rounds, the same tokens); moe_pdl alone 0.905.
  int moe_pdl = 1;
  // Under moe_pdl, the MoE kernels let the next one launch early (pdl_launch_dependents): the router
  // at once, the gate/up GEMV once it has waited, the decode down projection after asking L2 for
  // its picked rows (it reads the picks before waiting), so the next layer's QKV GEMV streams its
  // weights during the down projection's end. 0: each launches when the one before has ended (the
  // timeline of an H100 showed 2-3.6 us from one's end to the next's first wait return there; with
  // it the QKV GEMV's 3.4 us became 0.75). The same 8 layers: 0.788 -> 0.775 ms/token.
  int moe_early = 1;
  // Prompt steps of at least 64 tokens run a sparse layer's experts as cuBLAS grouped GEMMs over
  // the tokens each expert was picked by (each expert's weights read once per step instead of once
  // per token), 1; or the expert GEMVs, 0. On an H100, Qwen3-30B-A3B's 128-token W2 prompt took
  // 19.9 ms instead of 129.2 (the compiled PyTorch peer: 101 in an earlier run); decode unchanged
  // (bench/results/2026-12-07-h100-moe-early/). Its experts' outputs are rounded to 16 bits (the
  // grouped call writes no f32 from 16-bit inputs), so its logits differ from the GEMVs' within
  // the bf16 bound.
  int moe_prefill_grouped = 1;
  bool cuda_graph = true;
  bool pdl = true;
  // Top-k sampling selects its k candidates on the device (topk.radix) instead of copying every
  // logit to the host; off: the host selects them (the same candidates).
  bool gpu_top_k = true;
  int top_k_block = 1024;
  // Greedy decode steps are enqueued one ahead of the host (Executor::decode_ahead): a step's
  // token ids are the previous step's argmax, written on the device by the lm_head's epilogue.
  bool decode_ahead = true;
  // A chained decode-ahead step's inputs come from the device: the step before advanced every
  // position by one and wrote its tokens into page-locked host memory itself (argmax_finish), so
  // no copy runs between two steps' graphs; off: one upload before and one download after each.
  bool device_chain = true;
};

// The prompt step's GEMM search (FastConfig::prefill_algo_*): the library family's id, how many
// of cuBLASLt's heuristic algorithms a shape offers it at most (its ALGO domain, 0..count-1), and
// the shortest step whose GEMMs take the plan's rank.
inline constexpr const char* kLtFamily = "cuda:gemm.lt";
inline constexpr int kLtAlgorithms = 8;
inline constexpr long long kLtFromTokens = 512;
// The shortest prompt step whose projections take gemm.wgmma (prefill_wgmma): one 128-row tile.
inline constexpr long long kWgmmaFromTokens = 128;

// The decode GEMV regions by the names plans, overrides and the search use, with their points in
// FastConfig (gemv.fused at batch 1, gemv.mma from mma_min_batch on, gemv.fp8 for FP8 weights).
// The one list of them: the knobs (fast_knobs.cpp) and the carveout regions derive from it.
struct GemvSlotField {
  const char* name;
  const char* region;  // the decode region (graph region kind) the slot runs: plan routes' region
  GemvChoice FastConfig::*gemv;
  MmaChoice FastConfig::*mma;
  GemvChoice FastConfig::*fp8;      // gemv.fp8's point (the lm_head's only where it is FP8 itself)
  MmaChoice FastConfig::*mma_fp8;  // gemv.mma_fp8's point, likewise
  int FastConfig::*prefill_algo;  // the prompt step's GEMM algorithm; null: cublasGemmEx only (the lm_head)
  OwnGemmChoice FastConfig::*prefill_gemm;  // the prompt step's own-GEMM route; null for the lm_head
};
inline constexpr GemvSlotField kGemvSlots[] = {
    {"qkv", "attn_in", &FastConfig::qkv, &FastConfig::qkv_mma, &FastConfig::qkv_fp8, &FastConfig::qkv_mma_fp8,
     &FastConfig::prefill_algo_qkv, &FastConfig::prefill_gemm_qkv},
    {"o", "attn_out", &FastConfig::o, &FastConfig::o_mma, &FastConfig::o_fp8, &FastConfig::o_mma_fp8, &FastConfig::prefill_algo_o,
     &FastConfig::prefill_gemm_o},
    {"gate_up", "mlp_in", &FastConfig::gate_up, &FastConfig::gate_up_mma, &FastConfig::gate_up_fp8, &FastConfig::gate_up_mma_fp8,
     &FastConfig::prefill_algo_gate_up, &FastConfig::prefill_gemm_gate_up},
    {"down", "mlp_out", &FastConfig::down, &FastConfig::down_mma, &FastConfig::down_fp8, &FastConfig::down_mma_fp8,
     &FastConfig::prefill_algo_down, &FastConfig::prefill_gemm_down},
    {"lm_head", "head", &FastConfig::lm_head, &FastConfig::lm_head_mma, &FastConfig::lm_head_fp8, &FastConfig::lm_head_mma_fp8,
     nullptr, nullptr}};
// The one named `name`; throws Internal for any other name (the names are code, not input).
const GemvSlotField& gemv_slot(const std::string& name);

// The decode regions a carveout may be set for (FastConfig::region_carveout, plan.json
// region_carveout, override carveout.<region>): the GEMV slots and the attention.
inline constexpr const char* kAttentionRegion = "attention";
bool valid_carveout_region(const std::string& name);

// Clusters per KV head attn_o.cluster may run with (0: not at all): the attn_o knob's domain.
bool valid_attn_o(int n);

// Applies a developer override, e.g. AGENTCOMPILE_FAST_CONFIG="o=128:2:1:4,attn_split=64,pdl=0":
// every knob of fast_knobs.cpp by its override key, an integer within its domain (booleans: 0 or
// not); a GEMV region (qkv, o, gate_up, down, lm_head) takes block:rows:unroll:splitk, its FP8 point
// (qkv_fp8, ...) the same, its batched tensor-core point (qkv_mma, ...) block:mt:unroll:splitk, mlp block:kc:rows:unroll:bps;
// carveout.<region> -1 (removing it) or 0-100. Throws BadInput naming the key on anything else.
FastConfig apply_fast_config_override(FastConfig cfg, const std::string& spec);

}  // namespace ac::cuda
