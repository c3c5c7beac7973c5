#include "agentcompile/backends/cuda/cuda_executor.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "agentcompile/core/error.h"
#include "agentcompile/ir/rope.h"
#include "backends/cuda/cublas_route.h"
#include "backends/cuda/device.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/kernel_loader.h"
#include "backends/cuda/plan_config.h"
#include "backends/cuda/step_inputs.h"

extern "C" {
#include "../../../kernels/cuda/common/params.h"
}

namespace ac {

bool cuda_available(std::string* why_not) {
  if (cuda::driver_api(why_not) == nullptr) return false;
  try {
    cuda::Device::get();
  } catch (const Error& e) {
    if (why_not) *why_not = e.reason();
    return false;
  }
  return true;
}

namespace {

using cuda::DeviceBuffer;
using cuda::Dim3;
using cuda::LoadedKernel;

constexpr unsigned kBlock = 256;  // block size of the reference kernels

class CudaExecutor final : public Executor {
 public:
  CudaExecutor(const Graph& g, const ExecutorLimits& lim, const CudaExecutorOptions& opts)
      : g_(g), lim_(lim), opts_(opts), dev_(cuda::Device::get()), stream_(dev_.stream()) {
    const ModelConfig& c = g.config;
    arch_ = dev_.info().arch();
    if (opts_.route == "library") cublas_ = std::make_unique<cuda::CublasHandle>(stream_);

    // Weights: uploaded once, as stored.
    for (const Op& op : g.ops)
      for (const TensorInfo* w : op.weights)
        if (!weights_.count(w)) {
          DeviceBuffer b(w->nbytes());
          b.upload(w->data, w->nbytes(), stream_);
          weights_.emplace(w, std::move(b));
        }
    std::vector<float> inv = rope_inv_freq(c.rope, c.head_dim);
    inv_freq_ = DeviceBuffer(inv.size() * 4);
    inv_freq_.upload(inv.data(), inv.size() * 4, stream_);

    // KV cache, f32: [layer][slot][position][kv_dim].
    const size_t kv_bytes = size_t(lim_.max_slots) * size_t(lim_.max_seq) * size_t(c.kv_dim()) * 4;
    for (int64_t l = 0; l < c.num_layers; ++l) {
      k_cache_.emplace_back(kv_bytes);
      v_cache_.emplace_back(kv_bytes);
    }
    plan_activation_memory();
    const int64_t nt = lim_.step_tokens(), nr = lim_.logit_rows();
    in_ = cuda::StepInputs(nt, nr);
    argmax_ = DeviceBuffer(size_t(nr) * 4);
    host_logits_ = cuda::PinnedBuffer(size_t(nr) * size_t(c.vocab_size) * 4);
    host_argmax_ = cuda::PinnedBuffer(size_t(nr) * 4);
    int64_t max_in = 0;
    for (const Op& op : g.ops)
      if (op.kind == OpKind::Linear || op.kind == OpKind::Logits) max_in = std::max(max_in, g.value(op.inputs[0]).width);
    cast_scratch_ = DeviceBuffer(size_t(std::max(nt, nr)) * size_t(max_in) * 4);
    gather_scratch_ = DeviceBuffer(size_t(nr) * size_t(c.hidden_size) * 4);
    plan_moe(nt);
    load_kernels();
    dev_.synchronize();
  }

  std::string name() const override { return "cuda"; }
  int64_t vocab_size() const override { return g_.config.vocab_size; }
  const ExecutorLimits& limits() const override { return lim_; }

  const float* logits() const override {
    if (!logits_on_host_) {
      const size_t bytes = size_t(rows_in_step_) * size_t(g_.config.vocab_size) * 4;
      value_buffer(g_.logits).download(host_logits_.data(), bytes, stream_);
      CU_CHECK(cuda::drv().cuStreamSynchronize(stream_));
      logits_on_host_ = true;
    }
    return host_logits_.as<float>();
  }

  bool argmax_rows(std::vector<int32_t>& out) override {
    ArgmaxParams p{value_buffer(g_.logits).as<float>(), argmax_.as<int>(), rows_in_step_, g_.config.vocab_size};
    cuda::launch_kernel(*k_argmax_, Dim3{unsigned(rows_in_step_)}, kBlock, 0, stream_, &p);
    argmax_.download(host_argmax_.data(), size_t(rows_in_step_) * 4, stream_);
    CU_CHECK(cuda::drv().cuStreamSynchronize(stream_));
    out.assign(host_argmax_.as<int32_t>(), host_argmax_.as<int32_t>() + rows_in_step_);
    return true;
  }

  void forward(const StepBatch& b) override {
    validate_step(b, lim_, g_.config.vocab_size);
    const long long n = (long long)b.tokens.size();
    const long long r = (long long)b.logit_rows.size();
    in_.upload(b, stream_);
    for (const Op& op : g_.ops) run_op(op, n, r);
    rows_in_step_ = r;
    logits_on_host_ = false;
    // The pinned staging buffer is reused next step: the uploads must have read it by then.
    CU_CHECK(cuda::drv().cuStreamSynchronize(stream_));
  }

 private:
  // Activations: one buffer per value would hold every layer's intermediates at once; instead
  // values share buffers once their last reader has run (computed once, here).
  void plan_activation_memory() {
    std::vector<int> last = g_.last_uses();
    std::vector<size_t> free_list;
    buffer_of_.assign(g_.values.size(), -1);
    std::vector<size_t> sizes;
    for (size_t i = 0; i < g_.ops.size(); ++i) {
      const Op& op = g_.ops[i];
      const int64_t rows = op.kind == OpKind::Logits ? lim_.logit_rows() : lim_.step_tokens();
      const size_t need = size_t(rows) * size_t(g_.value(op.output).width) * 4;
      // Best fit among free buffers, else a new one (grown to fit).
      int pick = -1;
      for (size_t k = 0; k < free_list.size(); ++k)
        if (pick < 0 || (sizes[free_list[k]] >= need && sizes[free_list[k]] < sizes[free_list[size_t(pick)]]))
          pick = int(k);
      size_t buf;
      if (pick >= 0) {
        buf = free_list[size_t(pick)];
        free_list.erase(free_list.begin() + pick);
        sizes[buf] = std::max(sizes[buf], need);
      } else {
        buf = sizes.size();
        sizes.push_back(need);
      }
      buffer_of_[size_t(op.output)] = int(buf);
      for (int in : op.inputs)
        if (last[size_t(in)] == int(i) && in != op.output) free_list.push_back(size_t(buffer_of_[size_t(in)]));
    }
    for (size_t s : sizes) activations_.emplace_back(s);
  }

  const DeviceBuffer& value_buffer(int v) const { return activations_[size_t(buffer_of_[size_t(v)])]; }
  float* val(int v) const { return value_buffer(v).as<float>(); }
  const void* weight(const Op& op, size_t k) const {
    return k < op.weights.size() ? reinterpret_cast<const void*>(weights_.at(op.weights[k]).ptr()) : nullptr;
  }
  DType weight_dtype(const Op& op) const { return op.weights.at(0)->dtype; }

  const LoadedKernel& kernel(const std::string& op, std::map<std::string, int> params, std::vector<DType> types = {}) {
    params.emplace("BLOCK", int(kBlock));
    return cuda::load_kernel(cuda::make_variant(cuda::find_family(op, "ref"), std::move(params), std::move(types), arch_));
  }

  // Sparse layers: each layer's expert pointer tables (gate | up | down, E each), and the
  // step's routing scratch, sized for the widest layer.
  void plan_moe(int64_t nt) {
    int64_t experts = 0, picks = 0, inter = 0;
    for (const Op& op : g_.ops) {
      if (op.kind != OpKind::MoeMlp) continue;
      for (size_t k = 2; k < op.weights.size(); ++k)  // one kernel per layer reads every expert
        if (op.weights[k]->dtype != op.weights[1]->dtype) throw_input("cuda", op.name + ": experts stored in mixed dtypes");
      std::vector<const void*> table(size_t(3 * op.experts));
      for (int64_t e = 0; e < op.experts; ++e)
        for (int64_t k = 0; k < 3; ++k) table[size_t(k * op.experts + e)] = weight(op, size_t(1 + 3 * e + k));
      DeviceBuffer b(table.size() * sizeof(void*));
      b.upload(table.data(), table.size() * sizeof(void*), stream_);
      moe_tables_.emplace(&op, std::move(b));
      experts = std::max(experts, op.experts);
      picks = std::max(picks, op.top_k);
      inter = std::max(inter, op.expert_inter);
    }
    if (experts == 0) return;
    moe_logits_ = DeviceBuffer(size_t(nt * experts) * 4);
    moe_ids_ = DeviceBuffer(size_t(nt * picks) * 4);
    moe_weights_ = DeviceBuffer(size_t(nt * picks) * 4);
    moe_act_ = DeviceBuffer(size_t(nt * picks * inter) * 4);
  }

  // Every variant the graph needs, compiled (or fetched from the cache) before the first step.
  void load_kernels() {
    const ModelConfig& c = g_.config;
    const int maxd = int((c.head_dim + kBlock - 1) / kBlock);
    if (maxd > 4) throw_input("cuda", "head_dim " + std::to_string(c.head_dim) + " is above the 1024 the kernels handle");
    for (const Op& op : g_.ops) {
      switch (op.kind) {
        case OpKind::Embed: k_embed_[weight_dtype(op)] = &kernel("embed", {}, {weight_dtype(op)}); break;
        case OpKind::RmsNorm: k_norm_[weight_dtype(op)] = &kernel("rms_norm", {}, {weight_dtype(op)}); break;
        case OpKind::Linear:
        case OpKind::Logits:
        case OpKind::MoeMlp: {  // (its router is a linear)
          DType t = weight_dtype(op);
          k_linear_[t] = &kernel("linear", {}, {t});
          if (t != DType::F32) k_cast_[t] = &kernel("cast", {}, {t});  // (library route)
          k_bias_[t] = &kernel("bias", {}, {t});
          if (op.kind == OpKind::MoeMlp) {  // the experts may be stored unlike the router (FP8: f32)
            const DType te = op.weights.at(1)->dtype;
            k_moe_route_ = &kernel("moe_route", {});
            k_moe_gate_up_[te] = &kernel("moe_gate_up", {}, {te});
            k_moe_down_[te] = &kernel("moe_down", {}, {te});
          }
          break;
        }
        default: break;
      }
    }
    k_rope_ = &kernel("rope", {});
    k_kv_write_ = &kernel("kv_write", {});
    k_attention_ = &kernel("attention", {{"MAXD", maxd == 3 ? 4 : maxd}});
    k_swiglu_ = &kernel("swiglu", {});
    k_add_ = &kernel("add", {});
    k_gather_ = &kernel("gather_rows", {});
    k_argmax_ = &kernel("argmax", {});
  }

  void linear(const Op& op, const float* x, long long n, long long in, long long out_dim, float* out) {
    linear(weight_dtype(op), weight(op, 0), weight(op, 1), x, n, in, out_dim, out);
  }

  // out[n, out_dim] = x[n, in] w^T (+ bias): cuBLAS on the library route, else the reference kernel.
  void linear(DType t, const void* w, const void* bias, const float* x, long long n, long long in, long long out_dim,
              float* out) {
    if (opts_.route == "library") {
      const void* xin = x;
      if (t != DType::F32) {
        CastParams cp{x, cast_scratch_.as<void>(), n * in};
        cuda::launch_kernel(*k_cast_.at(t), Dim3{cuda::elementwise_blocks(n * in, kBlock)}, kBlock, 0, stream_, &cp);
        xin = cast_scratch_.as<void>();
      }
      cuda::cublas_linear(*cublas_, t, xin, w, out, n, in, out_dim);
      if (bias) {
        BiasParams bp{out, bias, n, out_dim};
        cuda::launch_kernel(*k_bias_.at(t), Dim3{cuda::elementwise_blocks(n * out_dim, kBlock)}, kBlock, 0, stream_, &bp);
      }
      return;
    }
    LinearParams p{x, nullptr, w, bias, out, n, in, out_dim};
    cuda::launch_kernel(*k_linear_.at(t), Dim3{unsigned((out_dim + kBlock / 32 - 1) / (kBlock / 32)), unsigned(n)},
                        kBlock, 0, stream_, &p);
  }

  void run_op(const Op& op, long long n, long long r) {
    const ModelConfig& c = g_.config;
    const long long width = g_.value(op.output).width;
    float* out = val(op.output);
    auto in = [&](size_t k) { return val(op.inputs[k]); };
    switch (op.kind) {
      case OpKind::Embed: {
        EmbedParams p{weight(op, 0), in_.tokens(), out, n, width, op.weights.at(0)->shape.at(0)};
        cuda::launch_kernel(*k_embed_.at(weight_dtype(op)), Dim3{unsigned(n)}, kBlock, 0, stream_, &p);
        break;
      }
      case OpKind::RmsNorm: {
        RmsNormParams p{in(0), weight(op, 0), out, n * op.groups, width / op.groups, op.eps};
        cuda::launch_kernel(*k_norm_.at(weight_dtype(op)), Dim3{unsigned(n * op.groups)}, kBlock, 0, stream_, &p);
        break;
      }
      case OpKind::Linear:
        linear(op, in(0), n, g_.value(op.inputs[0]).width, width, out);
        break;
      case OpKind::Rope: {
        RopeParams p{in(0), out, in_.positions(), inv_freq_.as<float>(), n, op.heads, op.head_dim};
        cuda::launch_kernel(*k_rope_, Dim3{unsigned(n)}, kBlock, 0, stream_, &p);
        break;
      }
      case OpKind::Attention: {
        const long long kv_dim = op.kv_heads * op.head_dim;
        float* kc = k_cache_[size_t(op.layer)].as<float>();
        float* vc = v_cache_[size_t(op.layer)].as<float>();
        KvWriteParams w{in(1), in(2), kc, vc, in_.positions(), in_.slots(), n, kv_dim, lim_.max_seq};
        cuda::launch_kernel(*k_kv_write_, Dim3{unsigned(n)}, kBlock, 0, stream_, &w);
        AttentionParams p{in(0), kc, vc, out, in_.positions(), in_.slots(), n, op.heads, op.kv_heads,
                          op.head_dim, lim_.max_seq, 1.0f / std::sqrt(float(op.head_dim)), op.window};
        cuda::launch_kernel(*k_attention_, Dim3{unsigned(op.heads), unsigned(n)}, kBlock, 0, stream_, &p);
        break;
      }
      case OpKind::SwiGlu: {
        ElementwiseParams p{in(0), in(1), out, n * width};
        cuda::launch_kernel(*k_swiglu_, Dim3{cuda::elementwise_blocks(n * width, kBlock)}, kBlock, 0, stream_, &p);
        break;
      }
      case OpKind::Add: {
        ElementwiseParams p{in(0), in(1), out, n * width};
        cuda::launch_kernel(*k_add_, Dim3{cuda::elementwise_blocks(n * width, kBlock)}, kBlock, 0, stream_, &p);
        break;
      }
      case OpKind::Logits: {
        const long long hidden = g_.value(op.inputs[0]).width;
        GatherRowsParams gp{in(0), in_.rows(), gather_scratch_.as<float>(), r, hidden};
        cuda::launch_kernel(*k_gather_, Dim3{unsigned(r)}, kBlock, 0, stream_, &gp);
        linear(op, gather_scratch_.as<float>(), r, hidden, c.vocab_size, out);
        break;
      }
      case OpKind::MoeMlp:
        moe(op, in(0), n, out);
        break;
    }
  }

  // A sparse layer's MLP: router linear, routing, the picked experts' gate/up, then their
  // weighted down projections (moe/reference.cuh).
  void moe(const Op& op, const float* x, long long n, float* out) {
    const DType t = weight_dtype(op), te = op.weights.at(1)->dtype;  // router's, experts'
    const long long hidden = g_.value(op.inputs[0]).width, k = op.top_k, inter = op.expert_inter;
    // The router on the reference kernel (f32 activations) on every route: its top-k is a discrete
    // choice, and the library route's bf16 inputs to cuBLAS flip it near ties, which changes the
    // layer's output wholesale (a tiny qwen3_moe's logits were 2.2% off the CPU reference's). It is
    // E x hidden: the cost is noise next to the experts'.
    LinearParams lp{x, nullptr, weight(op, 0), nullptr, moe_logits_.as<float>(), n, hidden, op.experts};
    cuda::launch_kernel(*k_linear_.at(t), Dim3{unsigned((op.experts + kBlock / 32 - 1) / (kBlock / 32)), unsigned(n)},
                        kBlock, 0, stream_, &lp);
    MoeRouteParams rp{moe_logits_.as<float>(), moe_ids_.as<int>(), moe_weights_.as<float>(), n, op.experts, k,
                      op.norm_topk ? 1 : 0};
    cuda::launch_kernel(*k_moe_route_, Dim3{unsigned(n)}, kBlock, 0, stream_, &rp);
    const void* const* table = moe_tables_.at(&op).as<const void*>();
    const unsigned warps = kBlock / 32;
    MoeExpertParams gu{x, moe_ids_.as<int>(), moe_weights_.as<float>(), table, table + op.experts, moe_act_.as<float>(),
                       n, k, hidden, inter};
    cuda::launch_kernel(*k_moe_gate_up_.at(te), Dim3{unsigned((inter + warps - 1) / warps), unsigned(n * k)}, kBlock, 0,
                        stream_, &gu);
    MoeExpertParams dp{moe_act_.as<float>(), moe_ids_.as<int>(), moe_weights_.as<float>(), table + 2 * op.experts,
                       nullptr, out, n, k, hidden, inter};
    cuda::launch_kernel(*k_moe_down_.at(te), Dim3{unsigned((hidden + warps - 1) / warps), unsigned(n)}, kBlock, 0,
                        stream_, &dp);
  }

  const Graph& g_;
  ExecutorLimits lim_;
  CudaExecutorOptions opts_;
  cuda::Device& dev_;
  CUstream stream_;
  std::string arch_;
  std::unique_ptr<cuda::CublasHandle> cublas_;
  std::map<const TensorInfo*, DeviceBuffer> weights_;
  DeviceBuffer inv_freq_;
  std::vector<DeviceBuffer> k_cache_, v_cache_;
  std::vector<DeviceBuffer> activations_;
  std::vector<int> buffer_of_;
  cuda::StepInputs in_;
  DeviceBuffer argmax_, cast_scratch_, gather_scratch_;
  std::map<const Op*, DeviceBuffer> moe_tables_;
  DeviceBuffer moe_logits_, moe_ids_, moe_weights_, moe_act_;
  cuda::PinnedBuffer host_logits_, host_argmax_;
  long long rows_in_step_ = 0;
  mutable bool logits_on_host_ = false;
  std::map<DType, const LoadedKernel*> k_embed_, k_norm_, k_linear_, k_cast_, k_bias_, k_moe_gate_up_, k_moe_down_;
  const LoadedKernel *k_rope_ = nullptr, *k_kv_write_ = nullptr, *k_attention_ = nullptr, *k_swiglu_ = nullptr,
                     *k_add_ = nullptr, *k_gather_ = nullptr, *k_argmax_ = nullptr, *k_moe_route_ = nullptr;
};

}  // namespace

std::unique_ptr<Executor> make_cuda_executor(const Graph& graph, const ExecutorLimits& limits,
                                             const CudaExecutorOptions& opts) {
  CudaExecutorOptions o = opts;
  for (const PlanKernel& k : o.kernels) cuda::use_prebuilt_kernel(k.name, k.source_key, k.bytes);
  if (o.route == "auto") o.route = cuda::fast_path_not_default(graph).empty() ? "fast" : "library";
  if (o.route == "fast") {
    // A compiled plan's choices are never overridden; without a plan a developer may override
    // the defaults (AGENTCOMPILE_FAST_CONFIG, fast_executor.h).
    cuda::FastConfig cfg = fast_config_of(o.fast);
    if (const char* spec = std::getenv("AGENTCOMPILE_FAST_CONFIG"); spec && !o.fast)
      cfg = cuda::apply_fast_config_override(cfg, spec);
    return cuda::make_fast_executor(graph, limits, cfg, o.share);
  }
  if (o.route != "library" && o.route != "reference")
    throw_input("cuda route", "\"" + o.route + "\" is not one of auto, fast, library, reference");
  return std::make_unique<CudaExecutor>(graph, limits, o);
}

}  // namespace ac
