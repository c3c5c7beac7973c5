// The CUDA backend behind the tuning contract (tuning/backend.h): the GPU's environment and
// facts, its families and evaluators, the plan's cuda_fast block and kernel binaries, and the
// executor of a plan.
#include <memory>

#include "agentcompile/backends/cuda/bench_measure.h"
#include "agentcompile/backends/cuda/cuda_env.h"
#include "agentcompile/backends/cuda/cuda_executor.h"
#include "agentcompile/backends/cuda/kernels_info.h"
#include "agentcompile/core/error.h"
#include "agentcompile/ir/decoder_layers.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/tuning/backend.h"
#include "backends/cuda/fast/variants.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/fast_knobs.h"
#include "backends/cuda/plan_config.h"
#include "backends/cuda/search_eval.h"

namespace ac {

namespace {

class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }

  bool available(std::string* why_not) const override { return cuda_available(why_not); }

  Environment environment() const override {
    GpuDeviceFacts g;
    std::string why;
    if (!detect_gpu_device(&g, &why)) throw_input("--backend cuda", why);
    Environment e;
    e.device = g.name;
    e.arch = g.arch;
    e.sm_count = g.sm_count;
    const CudaVersions v = cuda_versions();
    e.driver = v.driver;
    e.cuda = v.toolkit;
    e.nvrtc = v.nvrtc;
    return e;
  }

  bool detect_target(TargetFacts* out, std::string* why_not) const override {
    GpuDeviceFacts d;
    if (!detect_gpu_device(&d, why_not)) return false;
    TargetFacts t;
    t.kind = "gpu";
    t.device = d.name;
    t.name = d.name;
    t.arch = d.arch;
    t.origin = "detected";
    t.sm_count = d.sm_count;
    t.max_threads_per_block = d.max_threads_per_block;
    t.smem_per_block = d.smem_per_block;
    t.smem_per_block_optin = d.smem_per_block_optin;
    t.regs_per_block = d.regs_per_block;
    t.l2_bytes = d.l2_bytes;
    t.memory_bytes = d.memory_bytes;
    apply_target_table(t);
    *out = t;
    return true;
  }

  bool measure_ceilings(TargetFacts* t, size_t bytes, std::string* why_not) const override {
    if (bytes == 0) bytes = cuda::kCeilingBytes;  // as `bench` measures them
    const int n = cuda::kCeilingRepeats;
    cuda::Measured copy, read;
    try {  // 3 GiB at most at a time: a GPU short of memory keeps the table's figures, said in why_not
      copy = cuda::copy_bandwidth_GBps(bytes, n);
      read = cuda::read_bandwidth_GBps(bytes, n);
    } catch (const std::exception& e) {
      if (why_not) *why_not = e.what();
      return false;
    }
    t->bandwidth_gbs = copy.median;
    t->bandwidth_measured = true;
    const std::string size = std::to_string(bytes >> 20) + " MiB";
    t->bandwidth_source = "device copy measured now: " + size + ", read + write counted, median of " + std::to_string(n);
    t->read_gbs = read.median;
    t->read_source = "reads alone measured now: " + size + " in 64 KiB tiles, median of " + std::to_string(n);
    return true;
  }

  std::vector<FamilySpace> families(const Graph& g, const Partition& part, const RegionSummary& s,
                                    const TargetFacts& target, std::vector<std::string>* notes) const override {
    (void)part;
    return cuda_fast_families(g, s, target, notes);
  }

  std::unique_ptr<Evaluator> evaluator(const Graph& g, const Partition& part, const RegionTask& t) const override {
    (void)part;
    return cuda_fast_evaluator(g, t);
  }

  // The attention last: its candidates cost the most to build (each config's every fast-path
  // variant), and the last region gets whatever time the others left (on an H200 the GEMVs of
  // Llama-3.2-1B took 12 s of a 38 s search and the attention, second with its proportional
  // share, explored 8 of 16).
  int search_rank(const RegionTask& t) const override { return t.summary.kind == RegionKind::Attention ? 1 : 0; }

  // The routes' points and own carveouts; the whole-step settings (carveout, persistent layers,
  // attention with the output projection) stay as the plan has them.
  void bind_routes(const Graph& g, Plan& plan) const override {
    if (!generic_route_reason(g).empty()) {  // the library route: reference kernels and cuBLAS
      plan.cuda_fast.reset();
      return;
    }
    KnobValues f = cuda_fast_from_routes(plan.routes);
    if (plan.cuda_fast)
      for (const char* k : {"smem_carveout", "persistent", "attn_o", "attn_merge_o"}) f.set(k, plan.cuda_fast->get(k));
    plan.cuda_fast = f;
  }

  std::string generic_route_reason(const Graph& g) const override { return cuda::fast_path_not_default(g); }

  bool tunes_whole_steps() const override { return true; }

  std::vector<StepSetting> step_settings() const override {
    // The knobs the fast path declares as whole-step settings, with the values it tries
    // (fast_knobs.cpp says why each). The carveout goes before the routes' tuning, which then
    // times its points under the kept value.
    const KnobTable& t = cuda::fast_knobs().table();
    StepSetting carveout{"smem_carveout", "smem_carveout", "smem-carveout/2|", "carveout",
                         t.knob("smem_carveout").step_values, true,
                         "one shared-memory carveout for every kernel (timed before the tuning)"};
    StepSetting attn_o{"attn_o", "attention_output", "attention-output/1|", "fused", t.knob("attn_o").step_values, false,
                       "attention and output projection in one kernel"};
    StepSetting persistent{"persistent", "persistent_layers", "persistent-layers/1|", "persistent",
                           t.knob("persistent").step_values, false, "every layer in one persistent kernel"};
    StepSetting moe_block{"moe_block", "moe_block", "moe-block/1|", "moe_block", t.knob("moe_block").step_values, false,
                          "a sparse layer's expert GEMVs' block"};
    StepSetting moe_rows{"moe_rows", "moe_rows", "moe-rows/1|", "moe_rows", t.knob("moe_rows").step_values, false,
                         "a sparse layer's expert GEMVs' rows per warp"};
    return {carveout, attn_o, persistent, moe_block, moe_rows};
  }

  std::optional<Plan> with_step_setting(const Graph& g, const Plan& plan, const std::string& name, int value,
                                        std::string* variant, std::string* why_not) const override {
    if (!plan.cuda_fast) {
      if (why_not) *why_not = "not applicable to a plan without the fast path";
      return std::nullopt;
    }
    Plan with = plan;
    cuda::FastConfig on = fast_config_of(plan.cuda_fast);
    const DType wt = g.ops.front().weights.at(0)->dtype;
    const std::string& arch = plan.environment.arch;
    // attn_o.cluster and decode_layers.persistent read 16-bit weights (fp8_fast_config turns them off).
    if ((name == "attn_o" || name == "persistent") && cuda::fast_fp8_scales(g) != cuda::Fp8Scales::None) {
      if (why_not) *why_not = "not applicable: its kernel reads 16-bit weights, this model's projections are FP8";
      return std::nullopt;
    }
    if (name == "smem_carveout") {
      with.cuda_fast->set("smem_carveout", value);
      if (variant) *variant = "smem_carveout=" + std::to_string(value);
    } else if (name == "attn_o") {
      bool o_bias = false;
      for (const LayerOps& L : match_decoder_ops(g).layers) o_bias = o_bias || L.o->weights.size() > 1;
      on.attn_o = value;
      const auto ao = cuda::attn_o_plan(g.config, on, wt, arch, 1, 0, o_bias);
      if (!ao) {
        if (why_not) *why_not = "not applicable to this model, plan or GPU";
        return std::nullopt;
      }
      with.cuda_fast->set("attn_o", value);
      if (variant) *variant = ao->v.name();
    } else if (name == "persistent") {
      on.persistent = value;
      std::optional<cuda::PersistentPlan> pp;
      try {
        pp = cuda::persistent_plan(g.config, on, wt, arch, false);
      } catch (const Error& e) {
        if (why_not) *why_not = "not applicable: " + e.reason();
        return std::nullopt;
      }
      if (!pp) {
        if (why_not) *why_not = "not applicable to this model or GPU";
        return std::nullopt;
      }
      with.cuda_fast->set("persistent", value);
      if (variant) *variant = pp->v.name();
    } else if (name == "moe_block" || name == "moe_rows") {
      if (!g.config.is_moe()) {
        if (why_not) *why_not = "not applicable: the model has no sparse layers";
        return std::nullopt;
      }
      (name == "moe_block" ? on.moe_block : on.moe_rows) = value;
      try {  // the expert GEMVs at that point (the family's domain and constraint)
        const cuda::Variant v = cuda::moe_gate_up_variant(on, wt, arch);
        if (variant) *variant = v.name();
      } catch (const Error& e) {
        if (why_not) *why_not = "not applicable: " + e.reason();
        return std::nullopt;
      }
      with.cuda_fast->set(name, value);
    } else {
      return Backend::with_step_setting(g, plan, name, value, variant, why_not);
    }
    return with;
  }

  // A route's own carveouts: the values its region's carveout knob is picked from.
  std::vector<int> route_carveouts() const override {
    return cuda::fast_knobs().table().knob("region_carveout.qkv").search.at(0).values;
  }

  std::vector<PlanKernelBinary> plan_kernels(const Graph& g, const Plan& plan) const override {
    if (!plan.cuda_fast) return {};
    return cuda_plan_kernels(g, *plan.cuda_fast, plan.environment.arch);
  }

  std::unique_ptr<Executor> executor(const Graph& g, const ExecutorLimits& limits,
                                     const ExecutorRequest& request) const override {
    CudaExecutorOptions o;
    o.route = request.route;
    o.share = request.share;
    if (const Plan* plan = request.plan) {
      o.route = plan->cuda_fast ? "fast" : "library";
      o.fast = plan->cuda_fast;
      for (const PlanKernel& k : plan->kernels)  // only binaries read from the plan folder (none when rebuilding)
        if (!k.bytes.empty()) o.kernels.push_back(k);
    }
    return make_cuda_executor(g, limits, o);
  }

  std::vector<std::string> stale_plan_kernels(const Graph& g, const Plan& plan) const override {
    return cuda_stale_plan_kernels(g, plan);
  }
};

const BackendRegistration kRegistration(std::make_unique<CudaBackend>());

}  // namespace

}  // namespace ac
