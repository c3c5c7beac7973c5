#include "backends/cuda/fast_executor.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <sstream>

#include "agentcompile/core/error.h"
#include "agentcompile/ir/decoder_layers.h"
#include "agentcompile/ir/rope.h"
#include "agentcompile/plan/plan.h"
#include "backends/cuda/cublas_route.h"
#include "backends/cuda/device.h"
#include "backends/cuda/fast/variants.h"
#include "backends/cuda/fast/weights.h"
#include "backends/cuda/kernel_loader.h"
#include "backends/cuda/step_inputs.h"
#include "backends/cuda/timeline.h"

extern "C" {
#include "../../../kernels/cuda/common/params.h"
}

namespace ac::cuda {

namespace {

constexpr unsigned kRefBlock = 256;
constexpr int kMaxBatch = 8;

}  // namespace

int batch_template(long long n) { return n <= 1 ? 1 : n <= 2 ? 2 : n <= 4 ? 4 : 8; }

const GemvSlotField& gemv_slot(const std::string& name) {
  for (const GemvSlotField& s : kGemvSlots)
    if (name == s.name) return s;
  throw_internal("fast path", "no GEMV region named " + name);
}

TopKShape topk_shape(long long vocab, int k) {
  const long long chunk = std::max<long long>(4096, k);
  return TopKShape{chunk, (vocab + chunk - 1) / chunk};
}

Variant topk_variant(const FastConfig& cfg, const std::string& arch) {
  return make_variant(find_family("topk", "radix"), {{"BLOCK", cfg.top_k_block}}, {}, arch);
}

void launch_argmax_finish(unsigned long long* best, int* tokens, long long B, CUstream s, bool pdl,
                          const std::string& arch, int carveout, int* positions, int* host_tokens, long long slot_len) {
  ArgmaxFinishParams f{best, tokens, B, positions, host_tokens, slot_len};
  const Variant v = make_variant(find_family("argmax_finish", "ref"), {{"BLOCK", int(kRefBlock)}}, {}, arch);
  launch_kernel(load_kernel(v), Dim3{1}, kRefBlock, 0, s, &f, pdl, carveout);
}

namespace {

class FastExecutor final : public Executor {
 public:
  FastExecutor(const Graph& g, const ExecutorLimits& lim, const FastConfig& cfg, ExecutorShare* share)
      : g_(g), ops_(match_decoder_ops(g)), lim_(lim), cfg_(cfg), dev_(Device::get()), s_(dev_.stream()),
        arch_(dev_.info().arch()), cublas_(s_) {
    if (std::string why = fast_path_unsupported(g); !why.empty()) throw_input("cuda fast path", why);
    const ModelConfig& c = g.config;
    wt_ = g.ops.front().weights.at(0)->dtype;
    cluster_reach_ = cluster_long_reaches(c, cfg_, wt_, arch_);
    fw_ = fast_weights(g, ops_, cfg_, wt_, s_, share);
    std::vector<float> inv = rope_inv_freq(c.rope, c.head_dim);
    inv_freq_ = DeviceBuffer(inv.size() * 4);
    inv_freq_.upload(inv.data(), inv.size() * 4, s_);
    // cos/sin of every position the cache can hold, computed as the reference does: the decode
    // attention kernel reads its row instead of evaluating trigonometry per block.
    {
      const size_t half = size_t(c.head_dim / 2), npos = size_t(lim_.max_seq);
      std::vector<float> cs(npos * half), sn(npos * half);
      for (size_t p = 0; p < npos; ++p) rope_cos_sin(inv, int64_t(p), cs.data() + p * half, sn.data() + p * half);
      rope_cos_ = DeviceBuffer(cs.size() * 4);
      rope_sin_ = DeviceBuffer(sn.size() * 4);
      rope_cos_.upload(cs.data(), cs.size() * 4, s_);
      rope_sin_.upload(sn.data(), sn.size() * 4, s_);
      dev_.synchronize();  // the host vectors go out of scope
    }
    const size_t kv = size_t(lim_.max_slots) * size_t(c.num_kv_heads) * size_t(lim_.max_seq) * size_t(c.head_dim) * 2;
    for (int64_t l = 0; l < c.num_layers; ++l) {
      kcache_.emplace_back(kv);
      vcache_.emplace_back(kv);
    }
    const long long nt = std::max<long long>(lim_.step_tokens(), kMaxBatch), nr = std::max<long long>(lim_.logit_rows(), kMaxBatch);
    const long long qkvd = c.q_dim() + 2 * c.kv_dim();
    max_splits_ = std::max(splits_of(attn_split(c, cfg_, arch_)), splits_of(attn_split(c, cfg_, arch_, true)));
    auto f32 = [](long long n) { return DeviceBuffer(size_t(std::max<long long>(n, 1)) * 4); };
    resid_ = f32(nt * c.hidden_size);
    h_ = f32(nt * c.hidden_size);
    qkv_ = f32(nt * qkvd);
    q_ = f32(nt * c.q_dim());
    attn_ = f32(nt * c.q_dim());
    gate_ = f32(nt * c.intermediate_size);
    up_ = f32(nt * c.intermediate_size);
    tmp_ = f32(nt * std::max(c.hidden_size, c.intermediate_size));
    cast_ = DeviceBuffer(size_t(nt) * size_t(std::max({c.hidden_size, c.q_dim(), c.intermediate_size})) * 2);
    // Also attn_decode.parts's partials (attn_merge_o): attn_cluster per (KV head, token).
    const long long parts = std::max<long long>(max_splits_, cfg_.attn_cluster);
    part_o_ = f32(nt * c.num_heads * parts * c.head_dim);
    part_ml_ = f32(nt * c.num_heads * parts * 2);
    gathered_ = f32(nr * c.hidden_size);
    logits_ = f32(nr * c.vocab_size);
    // The argmax GEMV's (logit, row) key per batch row: zero before it, zeroed again by argmax_finish.
    best_ = DeviceBuffer(size_t(kMaxBatch) * 8);
    CU_CHECK(drv().cuMemsetD32Async(best_.ptr(), 0, size_t(kMaxBatch) * 2, s_));
    mlp_counters_ = DeviceBuffer(8);
    CU_CHECK(drv().cuMemsetD32Async(mlp_counters_.ptr(), 0, 2, s_));
    attn_counters_ = DeviceBuffer(size_t(kMaxBatch * c.num_kv_heads) * 4);
    CU_CHECK(drv().cuMemsetD32Async(attn_counters_.ptr(), 0, size_t(kMaxBatch * c.num_kv_heads), s_));
    token_out_ = DeviceBuffer(size_t(nr) * 4);
    if (cfg_.gpu_top_k) {
      const size_t slots = size_t(kGpuTopKRows) * size_t(kGpuTopKMax);
      topk_ = DeviceBuffer(2 * slots * 4);
      host_topk_ = PinnedBuffer(2 * slots * 4);
      topk_parts_ = DeviceBuffer(2 * slots * size_t(topk_shape(c.vocab_size, 1).chunks) * 4);  // the most chunks: k <= 4096
      topk_counters_ = DeviceBuffer(2 * kGpuTopKRows * 4);
      CU_CHECK(drv().cuMemsetD32Async(topk_counters_.ptr(), 0, 2 * kGpuTopKRows, s_));
    }
    in_ = StepInputs(nt, nr);
    host_logits_ = PinnedBuffer(size_t(nr) * size_t(c.vocab_size) * 4);
    host_tokens_ = PinnedBuffer(size_t(nr) * 4);
    host_ahead_ = PinnedBuffer(2 * kMaxBatch * 4);
    for (CUevent& e : ahead_done_) CU_CHECK(drv().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    // Compile (or load from the cache) every kernel now, so no step pays for it.
    for (const Variant& v : fast_path_variants(c, wt_, cfg_, arch_)) load_kernel(v);
    setup_persistent();
    for (const char* op : {"embed", "rms_norm", "cast", "bias"}) ref(op, {}, {wt_});
    for (const char* op : {"add", "swiglu", "gather_rows", "argmax", "argmax_finish"}) ref(op, {});
    profile_ = std::getenv("AGENTCOMPILE_PROFILE") != nullptr;
    dev_.synchronize();
  }

  ~FastExecutor() override {
    print_profile();
    if (const DriverApi* d = driver_api()) {
      d->cuStreamSynchronize(s_);  // steps in flight copy into host_ahead_
      for (auto& [b, exec] : graphs_) d->cuGraphExecDestroy(exec);
      for (CUevent e : ahead_done_)
        if (e) d->cuEventDestroy(e);
    }
  }

  std::string name() const override { return "cuda"; }
  int64_t vocab_size() const override { return g_.config.vocab_size; }
  const ExecutorLimits& limits() const override { return lim_; }

  void forward(const StepBatch& b) override {
    validate_step(b, lim_, g_.config.vocab_size);
    drop_ahead();
    const long long n = (long long)b.tokens.size(), r = (long long)b.logit_rows.size();
    in_.upload(b, s_);
    rows_in_step_ = r;
    last_positions_ = b.positions;
    logits_on_host_ = false;
    tokens_ready_ = false;
    host_tokens_valid_ = false;
    decode_step_ = is_decode_step(b);
    if (decode_step_) {
      run_decode(n);
      // The greedy tokens come back with the step's one synchronisation (argmax_rows reads them).
      CU_CHECK(drv().cuMemcpyDtoHAsync(host_tokens_.data(), CUdeviceptr(in_.tokens()), size_t(n) * 4, s_));
      host_tokens_valid_ = true;
    } else {
      run_prefill(n, r);
    }
    CU_CHECK(drv().cuStreamSynchronize(s_));  // staging is reused by the next step
  }

  const float* logits() const override {
    if (!logits_on_host_) {
      logits_.download(host_logits_.data(), size_t(rows_in_step_) * size_t(g_.config.vocab_size) * 4, s_);
      CU_CHECK(drv().cuStreamSynchronize(s_));
      logits_on_host_ = true;
    }
    return host_logits_.as<float>();
  }

  bool argmax_rows(std::vector<int32_t>& out) override {
    if (!decode_step_ && !tokens_ready_) {  // prefill: the reference argmax over the logit rows
      ArgmaxParams p{logits_.as<float>(), token_out_.as<int>(), rows_in_step_, g_.config.vocab_size};
      launch(ref("argmax", {}), Dim3{unsigned(rows_in_step_)}, kRefBlock, 0, &p);
    }
    if (!host_tokens_valid_) {
      // A decode step's lm_head wrote them over its token ids (the next chained step's input).
      const CUdeviceptr src = decode_step_ ? CUdeviceptr(in_.tokens()) : token_out_.ptr();
      CU_CHECK(drv().cuMemcpyDtoHAsync(host_tokens_.data(), src, size_t(rows_in_step_) * 4, s_));
      CU_CHECK(drv().cuStreamSynchronize(s_));
      host_tokens_valid_ = true;
    }
    tokens_ready_ = true;
    out.assign(host_tokens_.as<int32_t>(), host_tokens_.as<int32_t>() + rows_in_step_);
    return true;
  }

  bool top_k_rows(int k, std::vector<std::pair<float, int32_t>>& out) override {
    const int64_t vocab = g_.config.vocab_size;
    if (!cfg_.gpu_top_k || k < 1 || k > kGpuTopKMax || k >= vocab || rows_in_step_ > kGpuTopKRows) return false;
    // Values then ids, back to back in one buffer: one copy to the host.
    const size_t n = size_t(rows_in_step_) * size_t(k);
    const TopKShape sh = topk_shape(vocab, k);
    const size_t parts = size_t(rows_in_step_) * size_t(sh.chunks) * size_t(k);
    TopKParams p{logits_.as<float>(), topk_.as<float>(), reinterpret_cast<int*>(topk_.as<float>() + n),
                 topk_parts_.as<float>(), reinterpret_cast<int*>(topk_parts_.as<float>() + parts), topk_counters_.as<unsigned>(),
                 rows_in_step_, vocab, sh.chunk, k};
    launch(load_kernel(topk_variant(cfg_, arch_)), Dim3{unsigned(sh.chunks), unsigned(rows_in_step_)},
           unsigned(cfg_.top_k_block), 0, &p);
    topk_.download(host_topk_.data(), 2 * n * 4, s_);
    CU_CHECK(drv().cuStreamSynchronize(s_));
    out.resize(n);
    const float* hv = host_topk_.as<float>();
    const int32_t* hi = reinterpret_cast<const int32_t*>(hv + n);
    for (size_t i = 0; i < n; ++i) out[i] = {hv[i], hi[i]};
    return true;
  }

  // Decode ahead (Executor::decode_ahead): the step is enqueued with its greedy tokens (written
  // over the step's token ids by the lm_head's argmax, so a chained step's embedding reads them
  // there) going into one of two pinned slots, and an event; nothing waits here. With
  // device_chain the argmax writes the slot itself (slot: the step's first position % 2) and a
  // chained step whose inputs the device already advanced uploads nothing, so two steps' graphs
  // follow each other with no copy between them; otherwise one upload before and one copy after.
  void decode_ahead(const StepBatch& b, bool chained) override {
    if (!cfg_.decode_ahead) return Executor::decode_ahead(b, chained);
    validate_step(b, lim_, g_.config.vocab_size);
    const long long n = (long long)b.tokens.size();
    if (!is_decode_step(b)) throw_internal("decode ahead", "not a decode step");
    if (ahead_.size() >= 2) throw_internal("decode ahead", "more than two steps in flight");
    if (chained && ahead_n_ != n) throw_internal("decode ahead", "a chained step differs from the step before it");
    const int slot = cfg_.device_chain ? int(b.positions[0] & 1) : int(ahead_count_ % 2);
    ++ahead_count_;
    // A step in flight on the same slot (not the step before this one: a new sequence of the
    // same parity): its tokens are taken off the slot first.
    for (Ahead& a : ahead_)
      if (a.slot == slot && !a.stashed) {
        CU_CHECK(drv().cuEventSynchronize(ahead_done_[slot]));
        std::copy_n(host_ahead_.as<int32_t>() + slot * kMaxBatch, a.n, a.stash.begin());
        a.stashed = true;
      }
    if (!(cfg_.device_chain && chained && in_.on_device(b))) in_.upload(b, s_, chained);
    rows_in_step_ = n;
    last_positions_ = b.positions;
    logits_on_host_ = false;
    host_tokens_valid_ = false;
    decode_step_ = true;
    run_decode(n);
    if (!cfg_.device_chain)
      CU_CHECK(drv().cuMemcpyDtoHAsync(host_ahead_.as<int32_t>() + slot * kMaxBatch, CUdeviceptr(in_.tokens()), size_t(n) * 4, s_));
    CU_CHECK(drv().cuEventRecord(ahead_done_[slot], s_));
    ahead_.push_back({slot, n});
    ahead_n_ = n;
  }

  void next_greedy(std::vector<int32_t>& out) override {
    if (!cfg_.decode_ahead) return Executor::next_greedy(out);
    if (ahead_.empty()) throw_internal("decode ahead", "no step in flight");
    const Ahead a = ahead_.front();
    ahead_.pop_front();
    if (a.stashed) {
      out.assign(a.stash.begin(), a.stash.begin() + a.n);
      return;
    }
    CU_CHECK(drv().cuEventSynchronize(ahead_done_[a.slot]));
    const int32_t* t = host_ahead_.as<int32_t>() + a.slot * kMaxBatch;
    out.assign(t, t + a.n);
  }

  void end_ahead() override {
    if (!cfg_.decode_ahead) return Executor::end_ahead();
    drop_ahead();
  }

 private:
  // Waits for the decode-ahead steps in flight and forgets them; a later step cannot chain.
  void drop_ahead() {
    if (!ahead_.empty()) CU_CHECK(drv().cuStreamSynchronize(s_));
    ahead_.clear();
    ahead_n_ = 0;
  }

  // A decode step: at most 8 tokens, each of a different sequence, every row's logits wanted.
  static bool is_decode_step(const StepBatch& b) {
    const size_t n = b.tokens.size();
    if (n > size_t(kMaxBatch) || b.logit_rows.size() != n) return false;
    for (size_t i = 0; i < n; ++i) {
      if (b.logit_rows[i] != int32_t(i)) return false;
      for (size_t j = 0; j < i; ++j)
        if (b.slots[j] == b.slots[i]) return false;
    }
    return true;
  }

  // decode_layers.persistent (FastConfig::persistent): the layer table, its counters and partials.
  void setup_persistent() {
    const ModelConfig& c = g_.config;
    bool biased = false;
    for (const LayerOps& L : ops_.layers)
      for (const Op* op : {L.q, L.k, L.v, L.o, L.gate, L.up, L.down}) biased = biased || op->weights.size() > 1;
    pl_ = persistent_plan(c, cfg_, wt_, arch_, biased);
    if (!pl_) return;
    const LoadedKernel& k = load_kernel(pl_->v);
    int per_sm = 0;
    CU_CHECK(drv().cuFuncSetAttribute(k.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(pl_->smem)));
    CU_CHECK(drv().cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k.fn, pl_->v.threads(), pl_->smem));
    // Every block must be resident at once (they wait on one another): one per SM.
    if (per_sm < 1) throw_internal("decode_layers.persistent", k.name + " cannot be resident on an SM");
    std::vector<PersistentLayer> t;
    for (size_t l = 0; l < ops_.layers.size(); ++l) {
      const LayerOps& L = ops_.layers[l];
      t.push_back(PersistentLayer{wptr(L.input_norm, 0), reinterpret_cast<const void*>(fw_->wqkv[l].ptr()),
                                  L.q_norm ? wptr(L.q_norm, 0) : nullptr, L.k_norm ? wptr(L.k_norm, 0) : nullptr,
                                  wptr(L.o, 0), wptr(L.post_norm, 0), wptr(L.gate, 0), wptr(L.up, 0), wptr(L.down, 0),
                                  kcache_[l].as<unsigned short>(), vcache_[l].as<unsigned short>()});
    }
    pl_layers_ = DeviceBuffer(t.size() * sizeof(PersistentLayer));
    pl_layers_.upload(t.data(), t.size() * sizeof(PersistentLayer), s_);
    const size_t counters = size_t(c.num_layers) * 5 + size_t(c.num_kv_heads) + 1;
    pl_counters_ = DeviceBuffer(counters * 4);
    CU_CHECK(drv().cuMemsetD32Async(pl_counters_.ptr(), 0, counters, s_));
    const size_t parts = size_t(c.num_heads) * size_t(pl_->v.param("SPLITS"));
    pl_part_o_ = DeviceBuffer(parts * size_t(c.head_dim) * 4);
    pl_part_ml_ = DeviceBuffer(parts * 2 * 4);
    CU_CHECK(drv().cuStreamSynchronize(s_));  // t goes out of scope
  }

  void persistent_layers() {
    const ModelConfig& c = g_.config;
    PersistentParams p{pl_layers_.as<PersistentLayer>(), resid_.as<float>(), qkv_.as<float>(), attn_.as<float>(),
                       gate_.as<float>(), pl_part_o_.as<float>(), pl_part_ml_.as<float>(), pl_counters_.as<unsigned>(),
                       rope_cos_.as<float>(), rope_sin_.as<float>(), in_.positions(), in_.slots(), c.num_layers,
                       c.hidden_size, c.intermediate_size, c.num_heads, c.num_kv_heads, lim_.max_seq, pl_->stage_bytes,
                       float(c.rms_norm_eps), 1.0f / std::sqrt(float(c.head_dim))};
    launch(load_kernel(pl_->v), Dim3{unsigned(dev_.info().sm_count)}, unsigned(pl_->v.threads()), pl_->smem, &p, cfg_.pdl);
  }

  // Every launch of this executor on its stream, with its shared-memory carveout: the step's
  // (FastConfig::smem_carveout), or the region's where it has one (FastConfig::region_carveout,
  // both as the function's and as the launch's preference).
  void launch(const LoadedKernel& k, Dim3 grid, unsigned threads, size_t smem, const void* params, bool pdl = false,
              const char* region = nullptr) {
    const auto it = region ? cfg_.region_carveout.find(region) : cfg_.region_carveout.end();
    const int own = it != cfg_.region_carveout.end() ? it->second : -1;
    launch_kernel(k, grid, threads, smem, s_, params, pdl, own >= 0 ? own : cfg_.smem_carveout, own);
  }

  const void* wptr(const TensorInfo* t) const { return t ? reinterpret_cast<const void*>(fw_->w.at(t).ptr()) : nullptr; }
  const void* wptr(const Op* op, size_t k) const { return k < op->weights.size() ? wptr(op->weights[k]) : nullptr; }

  const LoadedKernel& ref(const std::string& op, std::map<std::string, int> params, std::vector<DType> types = {}) {
    params.emplace("BLOCK", int(kRefBlock));
    return load_kernel(make_variant(find_family(op, "ref"), std::move(params), std::move(types), arch_));
  }

  // ---- decode ----
  // `region`: the slot's name (qkv, o, ...), for its carveout.
  void gemv(const char* region, const GemvChoice& ch, const MmaChoice& mma, int epi, long long n, const float* x,
            const void* gamma, const void* w, const void* w2, const void* bias, float* out, long long N, long long K) {
    const int batch = batch_template(n);
    const Variant v = fast_decode_gemv(cfg_, ch, mma, epi, batch, K, wt_, arch_);
    GemvParams p{x, gamma, float(g_.config.rms_norm_eps), w, w2, bias, out, best_.as<unsigned long long>(), n, N, K};
    const LaunchShape ls = gemv_launch_shape(v, N, K);
    launch(load_kernel(v), Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, &p, cfg_.pdl, region);
    // The tokens, over the next step's input ids, from the blocks' keys.
    if (epi == kEpiArgmax) {
      int* positions = cfg_.device_chain ? in_.positions() : nullptr;  // every decode step's lm_head is ARGMAX
      launch_argmax_finish(best_.as<unsigned long long>(), in_.tokens(), n, s_, cfg_.pdl, arch_, cfg_.smem_carveout, positions,
                           host_ahead_.as<int32_t>(), kMaxBatch);
    }
  }

  void mlp(const Variant& v, const LayerOps& L, size_t layer, long long n) {
    const ModelConfig& c = g_.config;
    const LoadedKernel& k = load_kernel(v);
    const LaunchShape ls = mlp_launch_shape(k, v, c.hidden_size, c.intermediate_size, cfg_.mlp.bps);
    MlpParams p{resid_.as<float>(), wptr(L.post_norm, 0), float(c.rms_norm_eps), wptr(L.gate, 0), wptr(L.up, 0),
                reinterpret_cast<const void*>(fw_->wdown_tiled.at(layer).ptr()), mlp_counters_.as<unsigned>(), n, c.hidden_size,
                c.intermediate_size};
    launch(k, Dim3{ls.grid_x}, ls.threads, ls.smem, &p, cfg_.pdl);
  }

  void attention(const LayerOps& L, size_t layer, long long n, bool pdl) {
    const ModelConfig& c = g_.config;
    const int hd = int(c.head_dim);
    QkvPostParams qp{qkv_.as<float>(), q_.as<float>(), L.q_norm ? wptr(L.q_norm, 0) : nullptr,
                     L.k_norm ? wptr(L.k_norm, 0) : nullptr, float(c.rms_norm_eps), in_.positions(),
                     in_.slots(), inv_freq_.as<float>(), kcache_[layer].as<unsigned short>(),
                     vcache_[layer].as<unsigned short>(), n, c.num_heads, c.num_kv_heads, c.head_dim, lim_.max_seq};
    const LoadedKernel& kp = load_kernel(qkv_post_variant(cfg_, wt_, arch_));
    launch(kp, Dim3{unsigned(c.num_heads + 2 * c.num_kv_heads), unsigned(n)}, unsigned(cfg_.qkv_post_block), 0, &qp, pdl);
    if (pdl) mark("qkv_post", 0);
    DecodeAttnParams ap{q_.as<float>(), kcache_[layer].as<unsigned short>(), vcache_[layer].as<unsigned short>(),
                        part_o_.as<float>(), part_ml_.as<float>(), attn_.as<float>(), in_.positions(),
                        in_.slots(), n, c.num_heads, c.num_kv_heads, lim_.max_seq, max_splits_,
                        1.0f / std::sqrt(float(hd))};
    const Variant va = attn_variant(c, cfg_, arch_);
    launch(load_kernel(va), Dim3{unsigned(c.num_kv_heads), unsigned(max_splits_), unsigned(n)},
           unsigned(va.threads()), 0, &ap, pdl, "attention");
    if (pdl && profile_) {  // bytes: the K and V rows every token reads (positions come from the host copy)
      double kv = 0;
      for (long long t = 0; t < n; ++t) kv += double(last_positions_[size_t(t)] + 1) * double(c.kv_dim()) * 2 * 2;
      mark("attn_decode", kv);
    }
    const LoadedKernel& kc = load_kernel(combine_variant(c, cfg_, arch_));
    launch(kc, Dim3{unsigned(c.num_heads), unsigned(n)}, unsigned(hd), 0, &ap, pdl);
    if (pdl) mark("attn_combine", 0);
  }

  // AGENTCOMPILE_PROFILE=1: decode steps run launch by launch with events in between; each
  // kernel's time and the bytes it must move are summed per kind and printed at exit.
  struct ProfileEntry {
    double ms = 0.0, bytes = 0.0;
    long long calls = 0;
  };
  void mark(const std::string& kind, double bytes) {
    if (!profile_) return;
    CUevent e;
    CU_CHECK(drv().cuEventCreate(&e, CU_EVENT_DEFAULT));
    CU_CHECK(drv().cuEventRecord(e, s_));
    marks_.push_back({e, kind, bytes});
  }
  void flush_profile() {
    if (marks_.empty()) return;
    CU_CHECK(drv().cuStreamSynchronize(s_));
    for (size_t i = 1; i < marks_.size(); ++i) {
      float ms = 0;
      CU_CHECK(drv().cuEventElapsedTime(&ms, marks_[i - 1].e, marks_[i].e));
      ProfileEntry& p = profile_sum_[marks_[i].kind];
      p.ms += ms;
      p.bytes += marks_[i].bytes;
      p.calls += 1;
    }
    for (auto& m : marks_) drv().cuEventDestroy(m.e);
    marks_.clear();
    ++profiled_steps_;
  }
  void print_profile() const {
    if (profile_sum_.empty()) return;
    double total = 0;
    for (const auto& [k, p] : profile_sum_) total += p.ms;
    std::fprintf(stderr, "profile: %lld decode steps, %.3f ms/step in kernels\n", profiled_steps_, total / double(profiled_steps_));
    for (const auto& [k, p] : profile_sum_)
      std::fprintf(stderr, "  %-16s %8.4f ms/step  %5.1f%%  %7.1f GB/s  (%lld launches/step)\n", k.c_str(),
                   p.ms / double(profiled_steps_), 100 * p.ms / total, p.bytes / (p.ms * 1e6),
                   p.calls / profiled_steps_);
  }
  struct Mark {
    CUevent e;
    std::string kind;
    double bytes;
  };

  // The decode attention of the step's range (`parts`: attn_decode.parts instead, attn_merge_o).
  void fused_attention(const LayerOps& L, size_t layer, long long n, const Variant* parts = nullptr) {
    const ModelConfig& c = g_.config;
    FusedAttnParams ap = attn_params(layer, L, n);
    const Variant va = parts ? *parts : decode_attention_variant(c, cfg_, wt_, arch_, batch_template(n), longest_);
    const size_t smem = size_t(attn_fused_smem_bytes(va.param("SPLIT"), va.param("HD"), va.param("GROUP")));
    launch(load_kernel(va), Dim3{unsigned(c.num_kv_heads), unsigned(decode_attention_blocks(va, lim_.max_seq)), unsigned(n)},
           unsigned(va.threads()), smem, &ap, cfg_.pdl, "attention");
    if (profile_) {
      double kv = 0;
      for (long long t = 0; t < n; ++t) kv += double(last_positions_[size_t(t)] + 1) * double(c.kv_dim()) * 2 * 2;
      mark("attention", kv);
    }
  }

  FusedAttnParams attn_params(size_t layer, const LayerOps& L, long long n) const {
    const ModelConfig& c = g_.config;
    return FusedAttnParams{qkv_.as<float>(), L.q_norm ? wptr(L.q_norm, 0) : nullptr, L.k_norm ? wptr(L.k_norm, 0) : nullptr,
                           float(c.rms_norm_eps), rope_cos_.as<float>(), rope_sin_.as<float>(),
                           kcache_[layer].as<unsigned short>(), vcache_[layer].as<unsigned short>(), part_o_.as<float>(),
                           part_ml_.as<float>(), attn_counters_.as<unsigned>(), attn_.as<float>(), in_.positions(),
                           in_.slots(), n, c.num_heads, c.num_kv_heads, lim_.max_seq, max_splits_,
                           1.0f / std::sqrt(float(c.head_dim))};
  }

  // attn_o.cluster: the attention and the output projection with its residual add, one kernel.
  void attention_and_output(const AttnOPlan& ao, const LayerOps& L, size_t layer, long long n) {
    const ModelConfig& c = g_.config;
    AttnOParams p{attn_params(layer, L, n), wptr(L.o, 0), resid_.as<float>(), c.hidden_size};
    launch(load_kernel(ao.v),
           Dim3{unsigned(c.num_kv_heads), unsigned(ao.v.param("CLUSTER")), unsigned(n * ao.v.param("COPIES"))},
           unsigned(ao.v.threads()), ao.smem, &p, cfg_.pdl, "attention");
    mark("attention_o", double(c.hidden_size * c.q_dim() * dtype_size(wt_)));
  }

  void record_decode(long long n) {
    const ModelConfig& c = g_.config;
    const double es = double(dtype_size(wt_));
    mark("start", 0);
    EmbedParams ep{wptr(ops_.embed, 0), in_.tokens(), resid_.as<float>(), n, c.hidden_size, c.vocab_size};
    launch(ref("embed", {}, {wt_}), Dim3{unsigned(n)}, kRefBlock, 0, &ep, cfg_.pdl);
    mark("embed", double(n * c.hidden_size) * es);
    const long long qkvd = c.q_dim() + 2 * c.kv_dim();
    const bool persistent = pl_ && n == 1;  // decode_layers.persistent runs every layer
    if (persistent) {
      persistent_layers();
      mark("decode_layers", double(ops_.layers.size()) *
                                double(qkvd * c.hidden_size + c.hidden_size * c.q_dim() + 3 * c.intermediate_size * c.hidden_size) * es);
    }
    // The same for every layer but one with an o_proj bias (attn_o_plan: then the two kernels).
    std::optional<AttnOPlan> ao;
    if (!persistent) ao = attn_o_plan(c, cfg_, wt_, arch_, batch_template(n), longest_, false);
    std::optional<MergeOPlan> mo;  // attn_merge_o (never beside attn_o): partials merged by the output GEMV
    if (!persistent) mo = merge_o_plan(c, cfg_, wt_, arch_, batch_template(n), longest_, false);
    for (size_t l = 0; !persistent && l < ops_.layers.size(); ++l) {
      const LayerOps& L = ops_.layers[l];
      gemv("qkv", cfg_.qkv, cfg_.qkv_mma, kEpiStore, n, resid_.as<float>(), wptr(L.input_norm, 0), reinterpret_cast<const void*>(fw_->wqkv[l].ptr()),
           nullptr, fw_->bqkv[l].ptr() ? reinterpret_cast<const void*>(fw_->bqkv[l].ptr()) : nullptr, qkv_.as<float>(), qkvd,
           c.hidden_size);
      mark("qkv_gemv", double(qkvd * c.hidden_size) * es);
      if (ao && L.o->weights.size() == 1) {
        attention_and_output(*ao, L, l, n);
      } else if (mo) {
        fused_attention(L, l, n, &mo->attn);
        GemvParams p{part_o_.as<float>(), nullptr, float(c.rms_norm_eps), wptr(L.o, 0), nullptr, wptr(L.o, 1),
                     resid_.as<float>(), best_.as<unsigned long long>(), n, c.hidden_size, c.q_dim(),
                     part_ml_.as<float>(), c.num_heads / c.num_kv_heads, c.head_dim};
        const LaunchShape ls = gemv_launch_shape(mo->o, c.hidden_size, c.q_dim());
        launch(load_kernel(mo->o), Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, &p, cfg_.pdl, "o");
        mark("o_gemv", double(c.hidden_size * c.q_dim()) * es);
      } else {
        fused_attention(L, l, n);
        gemv("o", cfg_.o, cfg_.o_mma, kEpiResidual, n, attn_.as<float>(), nullptr, wptr(L.o, 0), nullptr, wptr(L.o, 1), resid_.as<float>(),
             c.hidden_size, c.q_dim());
        mark("o_gemv", double(c.hidden_size * c.q_dim()) * es);
      }
      if (auto mv = fast_mlp_variant(cfg_, batch_template(n), c.hidden_size, c.intermediate_size, wt_, arch_)) {
        mlp(*mv, L, l, n);
        mark("mlp_fused", double(3 * c.intermediate_size * c.hidden_size) * es);
        continue;
      }
      gemv("gate_up", cfg_.gate_up, cfg_.gate_up_mma, kEpiSwiglu, n, resid_.as<float>(), wptr(L.post_norm, 0), wptr(L.gate, 0), wptr(L.up, 0), nullptr,
           gate_.as<float>(), c.intermediate_size, c.hidden_size);
      mark("gate_up_gemv", double(2 * c.intermediate_size * c.hidden_size) * es);
      gemv("down", cfg_.down, cfg_.down_mma, kEpiResidual, n, gate_.as<float>(), nullptr, wptr(L.down, 0), nullptr, nullptr, resid_.as<float>(),
           c.hidden_size, c.intermediate_size);
      mark("down_gemv", double(c.hidden_size * c.intermediate_size) * es);
    }
    gemv("lm_head", cfg_.lm_head, cfg_.lm_head_mma, kEpiArgmax, n, resid_.as<float>(), wptr(ops_.final_norm, 0), wptr(ops_.logits, 0), nullptr,
         nullptr, logits_.as<float>(), c.vocab_size, c.hidden_size);
    mark("lm_head_gemv", double(c.vocab_size * c.hidden_size) * es);
  }

  // Blocks per (token, KV head) for splits of `split` positions over the whole cache.
  long long splits_of(int split) const { return (lim_.max_seq + split - 1) / split; }

  void run_decode(long long n) {
    long long longest = 0;
    for (int32_t p : last_positions_) longest = std::max<long long>(longest, p + 1);
    longest_ = longest;
    // The developer timeline records the kernels of one step or a few (backends/cuda/timeline.h).
    const long long step = ++decode_steps_;
    if (timeline_enabled() && step == timeline_step()) timeline_reset(s_);
    run_decode_step(n);
    if (cfg_.device_chain) in_.advanced_on_device();  // the step's argmax_finish adds one to every position
    if (timeline_enabled() && step == timeline_step() + timeline_steps() - 1) timeline_write(s_);
  }

  void run_decode_step(long long n) {
    if (profile_) {
      record_decode(n);
      flush_profile();
      tokens_ready_ = true;
      return;
    }
    if (!cfg_.cuda_graph) {
      record_decode(n);
      tokens_ready_ = true;
      return;
    }
    const int key = int(n) * 4 + int(attn_range_of(cfg_, batch_template(n), longest_, cluster_reach_));
    auto it = graphs_.find(key);
    if (it == graphs_.end()) {
      // First step of this batch size: run it directly (loads every kernel), then capture it.
      record_decode(n);
      CU_CHECK(drv().cuStreamSynchronize(s_));
      CUgraph graph;
      CU_CHECK(drv().cuStreamBeginCapture(s_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
      try {
        record_decode(n);
      } catch (...) {
        CUgraph discard;
        drv().cuStreamEndCapture(s_, &discard);
        throw;
      }
      CU_CHECK(drv().cuStreamEndCapture(s_, &graph));
      CUgraphExec exec;
      CU_CHECK(drv().cuGraphInstantiateWithFlags(&exec, graph, 0));
      CU_CHECK(drv().cuGraphDestroy(graph));
      graphs_.emplace(key, exec);
      tokens_ready_ = true;
      return;
    }
    CU_CHECK(drv().cuGraphLaunch(it->second, s_));
    tokens_ready_ = true;
  }

  // ---- prefill: cuBLAS GEMMs over the step's tokens ----
  void linear(const void* w, const void* bias, const float* x, long long n, long long in, long long out_dim, float* out) {
    CastParams cp{x, cast_.as<void>(), n * in};
    launch(ref("cast", {}, {wt_}), Dim3{elementwise_blocks(n * in, kRefBlock)}, kRefBlock, 0, &cp);
    cublas_linear(cublas_, wt_, cast_.as<void>(), w, out, n, in, out_dim);
    if (bias) {
      BiasParams bp{out, bias, n, out_dim};
      launch(ref("bias", {}, {wt_}), Dim3{elementwise_blocks(n * out_dim, kRefBlock)}, kRefBlock, 0, &bp);
    }
  }
  void rms_norm(const Op* norm, const float* x, long long rows, long long dim, float* out) {
    RmsNormParams p{x, wptr(norm, 0), out, rows, dim, float(g_.config.rms_norm_eps)};
    launch(ref("rms_norm", {}, {wt_}), Dim3{unsigned(rows)}, kRefBlock, 0, &p);
  }
  void add(float* acc, const float* x, long long count) {
    ElementwiseParams p{acc, x, acc, count};
    launch(ref("add", {}), Dim3{elementwise_blocks(count, kRefBlock)}, kRefBlock, 0, &p);
  }

  void run_prefill(long long n, long long r) {
    const ModelConfig& c = g_.config;
    EmbedParams ep{wptr(ops_.embed, 0), in_.tokens(), resid_.as<float>(), n, c.hidden_size, c.vocab_size};
    launch(ref("embed", {}, {wt_}), Dim3{unsigned(n)}, kRefBlock, 0, &ep);
    const long long qkvd = c.q_dim() + 2 * c.kv_dim();
    for (size_t l = 0; l < ops_.layers.size(); ++l) {
      const LayerOps& L = ops_.layers[l];
      rms_norm(L.input_norm, resid_.as<float>(), n, c.hidden_size, h_.as<float>());
      linear(reinterpret_cast<const void*>(fw_->wqkv[l].ptr()),
             fw_->bqkv[l].ptr() ? reinterpret_cast<const void*>(fw_->bqkv[l].ptr()) : nullptr, h_.as<float>(), n, c.hidden_size,
             qkvd, qkv_.as<float>());
      attention(L, l, n, false);
      linear(wptr(L.o, 0), wptr(L.o, 1), attn_.as<float>(), n, c.q_dim(), c.hidden_size, tmp_.as<float>());
      add(resid_.as<float>(), tmp_.as<float>(), n * c.hidden_size);
      rms_norm(L.post_norm, resid_.as<float>(), n, c.hidden_size, h_.as<float>());
      linear(wptr(L.gate, 0), nullptr, h_.as<float>(), n, c.hidden_size, c.intermediate_size, gate_.as<float>());
      linear(wptr(L.up, 0), nullptr, h_.as<float>(), n, c.hidden_size, c.intermediate_size, up_.as<float>());
      ElementwiseParams sp{gate_.as<float>(), up_.as<float>(), gate_.as<float>(), n * c.intermediate_size};
      launch(ref("swiglu", {}), Dim3{elementwise_blocks(n * c.intermediate_size, kRefBlock)}, kRefBlock, 0, &sp);
      linear(wptr(L.down, 0), nullptr, gate_.as<float>(), n, c.intermediate_size, c.hidden_size, tmp_.as<float>());
      add(resid_.as<float>(), tmp_.as<float>(), n * c.hidden_size);
    }
    GatherRowsParams gp{resid_.as<float>(), in_.rows(), gathered_.as<float>(), r, c.hidden_size};
    launch(ref("gather_rows", {}), Dim3{unsigned(r)}, kRefBlock, 0, &gp);
    rms_norm(ops_.final_norm, gathered_.as<float>(), r, c.hidden_size, h_.as<float>());
    linear(wptr(ops_.logits, 0), nullptr, h_.as<float>(), r, c.hidden_size, c.vocab_size, logits_.as<float>());
  }

  const Graph& g_;
  DecoderOps ops_;
  ExecutorLimits lim_;
  FastConfig cfg_;
  Device& dev_;
  CUstream s_;
  std::string arch_;
  CublasHandle cublas_;
  DType wt_ = DType::BF16;
  std::shared_ptr<const FastWeights> fw_;  // the weights, perhaps shared (ExecutorShare)
  DeviceBuffer inv_freq_, rope_cos_, rope_sin_;  // rope_*: [max_seq, head_dim / 2]
  std::vector<DeviceBuffer> kcache_, vcache_;  // bf16 [slot][kv_head][position][head_dim]
  long long max_splits_ = 1;
  DeviceBuffer resid_, h_, qkv_, q_, attn_, gate_, up_, tmp_, cast_, part_o_, part_ml_, gathered_, logits_;
  DeviceBuffer best_, attn_counters_, token_out_;
  DeviceBuffer topk_;  // gpu_top_k: [rows * k] values, then [rows * k] ids (at most kGpuTopKMax per row)
  DeviceBuffer topk_parts_, topk_counters_;  // the chunks' candidates (values, then ids); counters
  PinnedBuffer host_topk_;
  std::optional<PersistentPlan> pl_;  // decode_layers.persistent for batch-1 steps, when on and able
  DeviceBuffer pl_layers_, pl_counters_, pl_part_o_, pl_part_ml_;
  DeviceBuffer mlp_counters_;  // mlp.fused: blocks that read h / blocks done (reset by its last block)
  StepInputs in_;  // token ids, positions, slots, logit rows of the step
  PinnedBuffer host_logits_, host_tokens_;
  struct Ahead {
    int slot;
    long long n;
    bool stashed = false;  // its tokens were taken off the slot early (stash)
    std::array<int32_t, kMaxBatch> stash{};
  };
  std::deque<Ahead> ahead_;   // decode-ahead steps in flight, oldest first
  PinnedBuffer host_ahead_;   // their greedy tokens: two slots of kMaxBatch
  CUevent ahead_done_[2] = {nullptr, nullptr};
  long long ahead_count_ = 0, ahead_n_ = 0;  // steps enqueued; tokens of the last (0: none to chain)
  std::map<int, CUgraphExec> graphs_;  // by batch template * 4 + the attention's AttnRange
  long long longest_ = 0;  // positions of this decode step's longest sequence (picks the attention)
  long long decode_steps_ = 0;  // decode steps run (the developer timeline records one of them)
  // How far the batch-1 long ranges' cluster attention reaches (cluster_long_reaches): computed
  // once, so that picking a step's graph builds no variants.
  std::vector<long long> cluster_reach_;
  bool profile_ = false;
  std::vector<Mark> marks_;
  std::map<std::string, ProfileEntry> profile_sum_;
  long long profiled_steps_ = 0;
  std::vector<int32_t> last_positions_;
  long long rows_in_step_ = 0;
  bool decode_step_ = false, tokens_ready_ = false;
  bool host_tokens_valid_ = false;  // host_tokens_ holds this step's token_out_ (decode steps)
  mutable bool logits_on_host_ = false;
};

}  // namespace

bool valid_carveout_region(const std::string& name) {
  const auto& names = plan_carveout_regions();
  return std::find(names.begin(), names.end(), name) != names.end();
}

FastConfig apply_fast_config_override(FastConfig cfg, const std::string& spec) {
  std::map<std::string, GemvChoice FastConfig::*> gemvs;
  std::map<std::string, MmaChoice FastConfig::*> mmas;
  for (const GemvSlotField& s : kGemvSlots) {
    gemvs[s.name] = s.gemv;
    mmas[std::string(s.name) + "_mma"] = s.mma;
  }
  const std::map<std::string, int FastConfig::*> ints = {{"attn_block", &FastConfig::attn_block},
                                                         {"mma_terms", &FastConfig::mma_terms},
                                                         {"mma_min_batch", &FastConfig::mma_min_batch},
                                                         {"attn_tile", &FastConfig::attn_tile},
                                                         {"attn_split", &FastConfig::attn_split},
                                                         {"attn_ilp", &FastConfig::attn_ilp},
                                                         {"attn_split_long", &FastConfig::attn_split_long},
                                                         {"attn_long_from", &FastConfig::attn_long_from},
                                                         {"attn_cluster", &FastConfig::attn_cluster},
                                                         {"attn_cluster_long", &FastConfig::attn_cluster_long},
                                                         {"attn_o", &FastConfig::attn_o},
                                                         {"attn_o_late", &FastConfig::attn_o_late},
                                                         {"attn_merge_o", &FastConfig::attn_merge_o},
                                                         {"attn_cluster_long_split", &FastConfig::attn_cluster_long_split},
                                                         {"mlp_fused_batch", &FastConfig::mlp_fused_batch},
                                                         {"qkv_post_block", &FastConfig::qkv_post_block},
                                                         {"top_k_block", &FastConfig::top_k_block},
                                                         {"persistent", &FastConfig::persistent},
                                                         {"persistent_block", &FastConfig::persistent_block},
                                                         {"persistent_stages", &FastConfig::persistent_stages},
                                                         {"persistent_splits", &FastConfig::persistent_splits},
                                                         {"persistent_stage_kb", &FastConfig::persistent_stage_kb},
                                                         {"smem_carveout", &FastConfig::smem_carveout}};
  const std::map<std::string, bool FastConfig::*> bools = {{"cuda_graph", &FastConfig::cuda_graph},
                                                           {"pdl", &FastConfig::pdl},
                                                           {"batched_mma", &FastConfig::batched_mma},
                                                           {"gpu_top_k", &FastConfig::gpu_top_k},
                                                           {"decode_ahead", &FastConfig::decode_ahead},
                                                           {"device_chain", &FastConfig::device_chain}};
  auto number = [&](const std::string& key, const std::string& text) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(text, &used);
    } catch (const std::exception&) {
      used = std::string::npos;
    }
    if (used != text.size() || text.empty()) throw_input("fast config override", "'" + key + "': '" + text + "' is not an integer");
    return v;
  };
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) throw_input("fast config override", "'" + item + "' is not key=value");
    const std::string key = item.substr(0, eq), val = item.substr(eq + 1);
    if (auto g = mmas.find(key); g != mmas.end()) {
      std::vector<int> f;
      std::stringstream parts(val);
      for (std::string x; std::getline(parts, x, ':');) f.push_back(number(key, x));
      if (f.size() != 4) throw_input("fast config override", "'" + key + "' needs block:mt:unroll:splitk");
      cfg.*(g->second) = MmaChoice{f[0], f[1], f[2], f[3]};
    } else if (auto g = gemvs.find(key); g != gemvs.end()) {
      std::vector<int> f;
      std::stringstream parts(val);
      for (std::string x; std::getline(parts, x, ':');) f.push_back(number(key, x));
      if (f.size() != 4) throw_input("fast config override", "'" + key + "' needs block:rows:unroll:splitk");
      cfg.*(g->second) = GemvChoice{f[0], f[1], f[2], f[3]};
    } else if (key == "mlp") {
      std::vector<int> f;
      std::stringstream parts(val);
      for (std::string x; std::getline(parts, x, ':');) f.push_back(number(key, x));
      if (f.size() != 5) throw_input("fast config override", "'mlp' needs block:kc:rows:unroll:bps");
      cfg.mlp = MlpChoice{f[0], f[1], f[2], f[3], f[4]};
    } else if (auto i = ints.find(key); i != ints.end()) {
      cfg.*(i->second) = number(key, val);
      if ((key == "attn_cluster" || key == "attn_cluster_long") && !valid_attn_cluster(cfg.*(i->second)))
        throw_input("fast config override", "'" + key + "' must be 0, 2, 4, 8 or 16");
      if (key == "attn_o" && !valid_attn_o(cfg.attn_o)) throw_input("fast config override", "'attn_o' must be 0, 1, 2 or 4");
      if (key == "attn_merge_o" && cfg.attn_merge_o != 0 && cfg.attn_merge_o != 1)
        throw_input("fast config override", "'attn_merge_o' must be 0 or 1");
      if (key == "attn_o_late" && (cfg.attn_o_late < 0 || cfg.attn_o_late > 2))
        throw_input("fast config override", "'attn_o_late' must be 0, 1 or 2");
      if (key == "smem_carveout" && (cfg.smem_carveout < -1 || cfg.smem_carveout > 100))
        throw_input("fast config override", "'smem_carveout' must be -1 (none) or a percentage 0-100");
      if (key == "attn_cluster_long_split" && cfg.attn_cluster_long_split != 0) {
        const auto& dom = find_family("attn_decode", "cluster").params;
        const auto split = std::find_if(dom.begin(), dom.end(), [](const auto& d) { return d.name == "SPLIT"; });
        if (std::find(split->values.begin(), split->values.end(), cfg.attn_cluster_long_split) == split->values.end())
          throw_input("fast config override", "'attn_cluster_long_split' must be 0 or one of attn_decode.cluster's SPLITs");
      }
      if (key == "top_k_block" && cfg.top_k_block != 256 && cfg.top_k_block != 512 && cfg.top_k_block != 1024)
        throw_input("fast config override", "'top_k_block' must be 256, 512 or 1024");
    } else if (auto b = bools.find(key); b != bools.end()) {
      cfg.*(b->second) = number(key, val) != 0;
    } else if (key.rfind("carveout.", 0) == 0) {
      const std::string region = key.substr(9);
      if (!valid_carveout_region(region))
        throw_input("fast config override", "'" + key + "': no such region (qkv, o, gate_up, down, lm_head, attention)");
      const int v = number(key, val);
      if (v < -1 || v > 100) throw_input("fast config override", "'" + key + "' must be -1 (none) or a percentage 0-100");
      if (v < 0) cfg.region_carveout.erase(region);
      else cfg.region_carveout[region] = v;
    } else {
      throw_input("fast config override", "unknown key '" + key + "'");
    }
  }
  return cfg;
}

std::unique_ptr<Executor> make_fast_executor(const Graph& g, const ExecutorLimits& lim, const FastConfig& cfg,
                                             ExecutorShare* share) {
  return std::make_unique<FastExecutor>(g, lim, cfg, share);
}

}  // namespace ac::cuda
