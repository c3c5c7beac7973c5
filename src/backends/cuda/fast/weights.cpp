// The fast path's weights: uploaded in its layout or taken from the share that holds them.
#include "backends/cuda/fast/weights.h"

#include <cstring>
#include <set>
#include <string>

#include "agentcompile/model/quantization.h"

namespace ac::cuda {

std::vector<uint16_t> tile_mlp_down(const void* w, long long H, long long I, int kc) {
  const long long units = (I + kc - 1) / kc;
  const auto* bytes = static_cast<const uint8_t*>(w);  // may be unaligned (a mapped safetensors file)
  std::vector<uint16_t> t(size_t(units * H * kc), 0);
  for (long long r = 0; r < H; ++r)
    for (long long i = 0; i < I; ++i) std::memcpy(&t[size_t(((i / kc) * H + r) * kc + i % kc)], bytes + 2 * (r * I + i), 2);
  return t;
}

std::string fast_weights_key(const FastConfig& cfg) {
  return "cuda fast weights/1|mlp.fused kc " + std::to_string(cfg.mlp_fused_batch > 0 ? cfg.mlp.kc : 0);
}

namespace {

// An FP8 projection as stored: its codes, and its scales one per output row (channel scales as
// they are, a tensor's one scale repeated) or per 128 x 128 block.
void upload_fp8(const Fp8Weight& f, const TensorInfo* t, FastWeights& fw, CUstream s) {
  DeviceBuffer codes(size_t(f.out * f.in));
  codes.upload(f.codes, size_t(f.out * f.in), s);
  fw.w.emplace(t, std::move(codes));
  std::vector<float> rows;
  const std::vector<float>* sc = &f.scales;
  if (fw.fp8 == Fp8Scales::Row && f.bo != 1) {  // a tensor scale (one block)
    rows.assign(size_t(f.out), f.scales.at(0));
    sc = &rows;
  }
  DeviceBuffer b(sc->size() * 4);
  b.upload(sc->data(), sc->size() * 4, s);
  CU_CHECK(drv().cuStreamSynchronize(s));  // rows goes out of scope
  fw.scale.emplace(t, std::move(b));
}

std::shared_ptr<FastWeights> upload_fast_weights(const Graph& g, const DecoderOps& ops, const FastConfig& cfg, DType wt,
                                                 CUstream s) {
  auto fw = std::make_shared<FastWeights>();
  const ModelConfig& c = g.config;
  fw->fp8 = fast_fp8_scales(g);
  std::set<const TensorInfo*> experts;  // uploaded per layer below
  for (const LayerOps& L : ops.layers)
    if (L.moe) experts.insert(L.moe->weights.begin() + 1, L.moe->weights.end());
  for (const Op& op : g.ops)
    for (const TensorInfo* w : op.weights)
      if (!fw->w.count(w) && !experts.count(w)) {
        if (auto f = g.fp8.find(w); f != g.fp8.end()) {
          upload_fp8(*f->second, w, *fw, s);
          continue;
        }
        DeviceBuffer buf(w->nbytes());
        buf.upload(w->data, w->nbytes(), s);
        fw->w.emplace(w, std::move(buf));
      }
  // q, k and v of a layer as one matrix: one GEMV (or GEMM) instead of three.
  const size_t es = fw->fp8 != Fp8Scales::None ? 1 : dtype_size(wt);
  for (const LayerOps& L : ops.layers) {
    const size_t rows_q = size_t(c.q_dim()), rows_kv = size_t(c.kv_dim()), h = size_t(c.hidden_size);
    DeviceBuffer w((rows_q + 2 * rows_kv) * h * es);
    CU_CHECK(drv().cuMemcpyDtoDAsync(w.ptr(), fw->w.at(L.q->weights[0]).ptr(), rows_q * h * es, s));
    CU_CHECK(drv().cuMemcpyDtoDAsync(w.ptr() + rows_q * h * es, fw->w.at(L.k->weights[0]).ptr(), rows_kv * h * es, s));
    CU_CHECK(drv().cuMemcpyDtoDAsync(w.ptr() + (rows_q + rows_kv) * h * es, fw->w.at(L.v->weights[0]).ptr(),
                                     rows_kv * h * es, s));
    fw->wqkv.push_back(std::move(w));
    if (fw->fp8 != Fp8Scales::None) {  // their scales in the same order (block rows end on a block)
      const size_t nq = fw->scale.at(L.q->weights[0]).bytes(), nk = fw->scale.at(L.k->weights[0]).bytes();
      DeviceBuffer sc(nq + 2 * nk);
      CU_CHECK(drv().cuMemcpyDtoDAsync(sc.ptr(), fw->scale.at(L.q->weights[0]).ptr(), nq, s));
      CU_CHECK(drv().cuMemcpyDtoDAsync(sc.ptr() + nq, fw->scale.at(L.k->weights[0]).ptr(), nk, s));
      CU_CHECK(drv().cuMemcpyDtoDAsync(sc.ptr() + nq + nk, fw->scale.at(L.v->weights[0]).ptr(), nk, s));
      fw->sqkv.push_back(std::move(sc));
    }
    if (L.q->weights.size() > 1) {
      DeviceBuffer b((rows_q + 2 * rows_kv) * es);
      CU_CHECK(drv().cuMemcpyDtoDAsync(b.ptr(), fw->w.at(L.q->weights[1]).ptr(), rows_q * es, s));
      CU_CHECK(drv().cuMemcpyDtoDAsync(b.ptr() + rows_q * es, fw->w.at(L.k->weights[1]).ptr(), rows_kv * es, s));
      CU_CHECK(drv().cuMemcpyDtoDAsync(b.ptr() + (rows_q + rows_kv) * es, fw->w.at(L.v->weights[1]).ptr(), rows_kv * es, s));
      fw->bqkv.push_back(std::move(b));
    } else {
      fw->bqkv.emplace_back();
    }
  }
  // mlp.fused reads W_down tiled by its unit (kc columns); built only where it may run (not FP8).
  if (cfg.mlp_fused_batch > 0 && fw->fp8 == Fp8Scales::None && !c.is_moe())
    for (const LayerOps& L : ops.layers) {
      const TensorInfo* d = L.down->weights[0];
      std::vector<uint16_t> t = tile_mlp_down(d->data, c.hidden_size, c.intermediate_size, cfg.mlp.kc);
      DeviceBuffer b(t.size() * 2);
      b.upload(t.data(), t.size() * 2, s);
      CU_CHECK(drv().cuStreamSynchronize(s));  // t goes out of scope
      fw->wdown_tiled.push_back(std::move(b));
    }
  // A sparse layer's experts in one buffer, expert-major (every gate, every up, every down), each
  // matrix 256-byte aligned: one allocation per layer instead of 3E (Qwen3-30B-A3B has 18 432
  // expert tensors of 3 MiB, each of which the allocator may round up to its page size), and the
  // table of their device pointers that moe/gemv.cuh indexes by the picked ids (empty for a dense
  // layer).
  for (const LayerOps& L : ops.layers) {
    fw->moe_table.emplace_back();
    fw->moe_experts.emplace_back();
    fw->moe_host_table.emplace_back();
    if (!L.moe) continue;
    const long long E = L.moe->experts;
    auto aligned = [](size_t b) { return (b + 255) / 256 * 256; };
    std::vector<size_t> offset(size_t(3 * E));
    size_t total = 0;
    for (long long k = 0; k < 3; ++k)
      for (long long e = 0; e < E; ++e) {
        offset[size_t(k * E + e)] = total;
        total += aligned(L.moe->weights.at(size_t(1 + 3 * e + k))->nbytes());
      }
    DeviceBuffer all(total);
    std::vector<CUdeviceptr> table(size_t(3 * E));
    for (long long k = 0; k < 3; ++k)
      for (long long e = 0; e < E; ++e) {
        const TensorInfo* w = L.moe->weights.at(size_t(1 + 3 * e + k));
        table[size_t(k * E + e)] = all.ptr() + offset[size_t(k * E + e)];
        CU_CHECK(drv().cuMemcpyHtoDAsync(table[size_t(k * E + e)], w->data, w->nbytes(), s));
      }
    DeviceBuffer b(table.size() * sizeof(CUdeviceptr));
    b.upload(table.data(), table.size() * sizeof(CUdeviceptr), s);
    CU_CHECK(drv().cuStreamSynchronize(s));  // table goes out of scope
    fw->moe_table.back() = std::move(b);
    fw->moe_host_table.back() = table;
    fw->moe_experts.back() = std::move(all);
  }
  // The separate q/k/v copies are no longer needed: the fused matrix replaces them.
  for (const LayerOps& L : ops.layers)
    for (const Op* op : {L.q, L.k, L.v})
      for (const TensorInfo* w : op->weights) {
        fw->w.erase(w);
        fw->scale.erase(w);
      }
  return fw;
}

}  // namespace

std::shared_ptr<const FastWeights> fast_weights(const Graph& g, const DecoderOps& ops, const FastConfig& cfg, DType wt,
                                                CUstream s, ExecutorShare* share) {
  const std::string key = fast_weights_key(cfg);
  if (share && share->graph == &g && share->key == key && share->state)
    return std::static_pointer_cast<const FastWeights>(share->state);
  if (share) share->state.reset();  // freed before the next upload (unless an executor still holds it)
  std::shared_ptr<FastWeights> fw = upload_fast_weights(g, ops, cfg, wt, s);
  if (share) {
    share->graph = &g;
    share->key = key;
    share->state = fw;
  }
  return fw;
}

}  // namespace ac::cuda
