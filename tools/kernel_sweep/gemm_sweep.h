// kernel_sweep's SWEEP_FAMILY=gemm: the prompt's projection GEMMs, cuBLAS against gemm.wgmma.
#pragma once
#include <string>
#include <vector>

namespace ac::cuda {

// For each model's qkv, o, gate (and up), down GEMMs at SWEEP_TOKENS rows (default 2048), with the
// stores the prompt step uses (qkv f32, o and down added into an f32 residual, gate/up 16-bit):
// cublasGemmEx, then every gemm.wgmma point for that store, each checked against cuBLAS's result
// first and timed as a graph of back-to-back launches. One JSON line per point, a summary per
// GEMM on stderr. SWEEP_GEMMS=o,down (names, comma-separated) keeps those GEMMs only;
// SWEEP_POINTS=<text> only the points whose variant name contains it ("none": cuBLAS alone), for
// profiling one kernel (tools/gpu_gemm_ncu.sh). Returns the process's exit status.
int sweep_prompt_gemms(const std::vector<std::string>& models);

}  // namespace ac::cuda
