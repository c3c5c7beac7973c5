// Prototype: would the QKV projection and the start of the attention in one thread block cluster
// per KV head beat the chain of two kernels? In a W2 step the attention waits for the whole QKV
// grid to finish (a kernel boundary under programmatic dependent launch) and then fetches its
// query, key and value from L2 under full DRAM load. Fused, each of a KV head's CLUSTER blocks
// computes 1/CLUSTER of the head's (GROUP + 2) * HD rows and the blocks exchange them through
// distributed shared memory behind one cluster barrier.
// Qwen3-1.7B's QKV shape (8 KV heads of 512 rows, K = 2048, bf16; 16.8 MB per layer), 28 layers
// in one CUDA graph, weights rotated over 6 copies (100 MB, past the 60 MiB L2). Each layer:
//   chain: gemv.fused{128,2,4,1} (the engine's own device function, as the plans run it), then an
//          attention stand-in, grid (8 heads, 8), that waits for it, reads its head's 512 values
//          from global memory, sums them (block reduction) and writes 32 values of the next
//          layer's x (x_next[head * 256 + j] = value j of the head * 0.5 + the sum / 512);
//   fused: grid (8, C) in clusters of C = 8 or 16 (16 is non-portable: 128 SMs), 256 to 1024
//          threads: each block 512 / C rows (the engine's gemv_load / gemv_stream), its results
//          into its shared memory, a cluster barrier, the head's 512 values read over the cluster,
//          the same sum and the same outputs (x_next[head * 256 + j] from value j of the head),
//          a second barrier before leaving. Prints how many clusters of each point can be resident.
// Both chain through x (the stand-in's outputs are the next layer's input), with PDL on every
// launch. Prints us per layer (median of graph launches) and the largest difference of the final x.
//   nvcc -O3 -arch=sm_90 -std=c++17 -I kernels/cuda -o build-sync/qkv_cluster_proto tools/qkv_cluster_proto.cu
//   build-sync/qkv_cluster_proto                                        (on the GPU machine)
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "attention/decode_cluster.cuh"
#include "cuda_tool.h"
#include "gemv/gemv.cuh"

constexpr int K = 2048, HEADS = 8, ROWS_PER_HEAD = 512, N = HEADS * ROWS_PER_HEAD, CLUSTER = 8;
constexpr int LAYERS = 28, COPIES = 6;

__global__ void __launch_bounds__(128) chain_gemv(GemvParams p) { gemv<128, 2, 4, 1, 1, EPI_STORE, ac_bf16>(p); }

// The head's 512 values summed over the block, then this block's K / (HEADS * C) outputs of the
// next x: x_next[head * 256 + j] = value j of the head * 0.5 + the sum / 512, whatever C (value_at(j)
// reads value j, locally or over the cluster).
template <int BLOCK, int C, typename At>
__device__ __forceinline__ void stand_in_tail(float v, At value_at, float* x_next, int head, int rank) {
  constexpr int OUT_PER_BLOCK = K / (HEADS * C);
  __shared__ float scratch[BLOCK / 32];
  const float s = block_sum<BLOCK>(v, scratch);
  if (threadIdx.x < OUT_PER_BLOCK) {
    const int j = rank * OUT_PER_BLOCK + threadIdx.x;
    x_next[head * (K / HEADS) + j] = value_at(j) * 0.5f + s * (1.0f / 512.0f);
  }
}

__global__ void __launch_bounds__(128) chain_attn(const float* qkv, float* x_next) {
  pdl_launch_dependents();
  pdl_wait();
  const int head = blockIdx.x, rank = blockIdx.y;
  const float* h = qkv + head * ROWS_PER_HEAD;
  float v = 0.0f;
  for (int i = threadIdx.x; i < ROWS_PER_HEAD; i += 128) v += h[i];
  stand_in_tail<128, CLUSTER>(v, [&](int j) { return h[j]; }, x_next, head, rank);
}

template <int BLOCK, int ROWS, int UNROLL, int C>
__global__ void __launch_bounds__(BLOCK) fused(GemvParams p, float* x_next) {
  constexpr int WARPS = BLOCK / 32, PER = ROWS_PER_HEAD / C;
  static_assert(WARPS * ROWS == PER, "a block's rows");
  __shared__ __align__(16) float xs[K];
  __shared__ float ss_part[1][WARPS];
  __shared__ float part[PER];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int head = blockIdx.x;
  const unsigned rank = cluster_rank();
  const long long row0 = (long long)head * ROWS_PER_HEAD + rank * PER + warp * ROWS;
  const ac_bf16* w = static_cast<const ac_bf16*>(p.w);
  u32x4 wa[UNROLL][1][ROWS], wb[UNROLL][1][ROWS];
  gemv_load<ROWS, UNROLL, 1, ac_bf16>(wa, w, w, row0, N, K, 0, K / 8, 0, lane);
  pdl_launch_dependents();
  pdl_wait();
  gemv_stage_x_deferred<BLOCK, 1, ac_bf16>(p, xs, ss_part, K);
  float acc[1][ROWS][1];
  gemv_stream<ROWS, UNROLL, 1, 1, ac_bf16>(acc, wa, wb, w, w, row0, N, K, 0, K / 8, xs, K, lane, [] {});
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const float v = warp_sum(acc[0][r][0]);
    if (lane == 0) part[warp * ROWS + r] = v;
  }
  cluster_sync_all();
  // Value i of the head, from block i / PER of the cluster.
  float v = 0.0f;
  for (int i = threadIdx.x; i < ROWS_PER_HEAD; i += BLOCK) v += cluster_load(&part[i % PER], i / PER);
  stand_in_tail<BLOCK, C>(v, [&](int j) { return cluster_load(&part[j % PER], j / PER); }, x_next, head, (int)rank);
  cluster_sync_all();  // no block leaves while another still reads its part
}

__global__ void fill_bf16(unsigned short* p, size_t n, unsigned seed) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const unsigned h = (unsigned)(i * 2654435761u) ^ seed;
    const float f = ((h >> 8) & 0xffff) / 65536.0f - 0.5f;  // [-0.5, 0.5)
    p[i] = (unsigned short)(__float_as_uint(f * 0.05f) >> 16);
  }
}

template <typename... Args>
void launch(void (*k)(Args...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, int cluster, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  attr[1].id = cudaLaunchAttributeClusterDimension;
  attr[1].val.clusterDim.x = 1;
  attr[1].val.clusterDim.y = cluster;
  attr[1].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = cluster > 0 ? 2 : 1;
  CK(cudaLaunchKernelEx(&cfg, k, args...));
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const size_t wbytes = size_t(N) * K * 2;
  std::vector<unsigned short*> w(COPIES);
  for (int c = 0; c < COPIES; ++c) {
    CK(cudaMalloc(&w[c], wbytes));
    fill_bf16<<<prop.multiProcessorCount * 8, 256>>>(w[c], wbytes / 2, 0x9e3779b9u * (c + 1));
  }
  float *x0, *xa[2], *xb[2], *qkv;
  CK(cudaMalloc(&x0, K * 4));
  for (int i = 0; i < 2; ++i) {
    CK(cudaMalloc(&xa[i], K * 4));
    CK(cudaMalloc(&xb[i], K * 4));
  }
  CK(cudaMalloc(&qkv, N * 4));
  std::vector<float> hx(K);
  for (int i = 0; i < K; ++i) hx[i] = std::sin(0.37f * i);
  CK(cudaMemcpy(x0, hx.data(), K * 4, cudaMemcpyHostToDevice));
  CK(cudaFuncSetAttribute(chain_gemv, cudaFuncAttributeMaxDynamicSharedMemorySize, K * 4));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // One graph of LAYERS layers per variant; layer l reads x from the previous layer (x0 first).
  auto capture = [&](bool fuse, auto kernel, int threads, int c) {
    float** xs = fuse ? xb : xa;
    cudaGraph_t g;
    cudaGraphExec_t e;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int l = 0; l < LAYERS; ++l) {
      GemvParams p = {};
      p.x = l == 0 ? x0 : xs[(l - 1) % 2];
      p.w = w[l % COPIES];
      p.out = qkv;
      p.B = 1, p.N = N, p.K = K;
      if (fuse) {
        launch(kernel, dim3(HEADS, c), dim3(threads), 0, s, c, p, xs[l % 2]);
      } else {
        launch(chain_gemv, dim3(N / 8), dim3(128), size_t(K * 4), s, 0, p);
        launch(chain_attn, dim3(HEADS, CLUSTER), dim3(128), 0, s, 0, (const float*)qkv, xs[l % 2]);
      }
    }
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&e, g, 0));
    return e;
  };
  struct Point {
    const char* name;
    void (*k)(GemvParams, float*);
    int threads, cluster;
  };
  // Clusters of 16 (non-portable: 128 SMs for the 8 KV heads, as many as the chain's GEMV
  // nearly) since session 27; 8 as in session 19.
  const Point points[] = {{"512 threads, 4 rows, unroll 2, cluster 8", fused<512, 4, 2, 8>, 512, 8},
                          {"1024 threads, 2 rows, unroll 2, cluster 8", fused<1024, 2, 2, 8>, 1024, 8},
                          {"512 threads, 2 rows, unroll 2, cluster 16", fused<512, 2, 2, 16>, 512, 16},
                          {"512 threads, 2 rows, unroll 4, cluster 16", fused<512, 2, 4, 16>, 512, 16},
                          {"1024 threads, 1 row, unroll 4, cluster 16", fused<1024, 1, 4, 16>, 1024, 16},
                          {"1024 threads, 1 row, unroll 8, cluster 16", fused<1024, 1, 8, 16>, 1024, 16},
                          {"256 threads, 4 rows, unroll 2, cluster 16", fused<256, 4, 2, 16>, 256, 16}};
  for (const Point& pt : points) {
    if (pt.cluster > 8) CK(cudaFuncSetAttribute(pt.k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(HEADS, pt.cluster);
    cfg.blockDim = dim3(pt.threads);
    cudaLaunchAttribute a;
    a.id = cudaLaunchAttributeClusterDimension;
    a.val.clusterDim.x = 1, a.val.clusterDim.y = pt.cluster, a.val.clusterDim.z = 1;
    cfg.attrs = &a;
    cfg.numAttrs = 1;
    int clusters = 0;
    CK(cudaOccupancyMaxActiveClusters(&clusters, pt.k, &cfg));
    std::printf("%s: at most %d clusters resident (%d needed)\n", pt.name, clusters, HEADS);
  }
  cudaGraphExec_t ga = capture(false, points[0].k, 0, 0);
  // µs per layer: the median of 21 event-timed graph launches.
  auto time = [&](cudaGraphExec_t g) {
    return median_event_ms([&](int) { CK(cudaGraphLaunch(g, s)); }, 21, 1, s) * 1e3 / LAYERS;
  };
  std::printf("%s; %d layers of QKV %d x %d bf16 (%.1f MB), %d weight copies\n", prop.name, LAYERS, N, K, wbytes / 1e6,
              COPIES);
  int rc = 0;
  for (const Point& pt : points) {
    cudaGraphExec_t gb = capture(true, pt.k, pt.threads, pt.cluster);
    for (int round = 0; round < 2; ++round) {
      const double a = time(ga), b = time(gb);
      std::printf("chain (gemv.fused 128:2:4:1 + stand-in) %.2f us per layer, fused cluster (%s) %.2f us (%+.1f%%); "
                  "%.2f us = the weights at 4.5 TB/s\n",
                  a, pt.name, b, 100.0 * (b - a) / a, wbytes / 4.5e6);
    }
    std::vector<float> ra(K), rb(K);
    CK(cudaMemcpy(ra.data(), xa[(LAYERS - 1) % 2], K * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(rb.data(), xb[(LAYERS - 1) % 2], K * 4, cudaMemcpyDeviceToHost));
    double diff = 0, mag = 0;
    for (int i = 0; i < K; ++i) diff = std::fmax(diff, std::fabs(ra[i] - rb[i])), mag = std::fmax(mag, std::fabs(ra[i]));
    std::printf("  final x: largest |chain - fused| %.3g (largest |x| %.3g)\n", diff, mag);
    if (!(diff <= 1e-3 * std::fmax(mag, 1e-30))) rc = 1;
  }
  CK(cudaGetLastError());
  return rc;
}
