#!/usr/bin/env bash
# Session 19: mlp.fused (one kernel per layer's MLP) against the two GEMVs on today's code, the fast
# route's defaults (no plan); build-device = f2ec34b (kernels as HEAD).
V="mlp_fused_batch=1,mlp=512:16:1:4:1 mlp_fused_batch=1,mlp=512:16:1:2:1 mlp_fused_batch=1,mlp=256:16:1:4:2 mlp_fused_batch=1,mlp=512:32:2:2:1 mlp_fused_batch=1,mlp=256:32:1:2:2 mlp_fused_batch=1,mlp=512:64:4:1:1"
BUILDS="build-device" ROUNDS=2 SKIP_TESTS=1 VARIANTS="$V" tools/gpu_ab.sh
