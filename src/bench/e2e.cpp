// bench e2e: every model x workload on our engine, against the peers' recorded runs.
#include <functional>
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include "agentcompile/bench/peers.h"
#include "agentcompile/bench/tiers.h"
#include "agentcompile/bench/validator.h"
#include "agentcompile/core/error.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/runtime/backends.h"
#include "agentcompile/runtime/engine.h"
#include "agentcompile/runtime/plan_executor.h"
#include "bench/common.h"
#include "bench/runner.h"
#include "bench/stats.h"

namespace ac::bench {

namespace {

// The prompts of a workload: the peers' runs' (all peers must agree), else a reference's, else
// the synthetic ones.
std::vector<std::vector<int32_t>> workload_prompts(const Workload& w, const std::vector<const PeerFile*>& peers,
                                                   int64_t vocab) {
  std::vector<std::vector<int32_t>> prompts;
  const PeerFile* from = nullptr;
  for (const PeerFile* p : peers) {
    const PeerRun* r = p->find_run(w.prompt, w.gen, w.batch);
    if (!r) continue;
    if (!from) {
      prompts = r->prompts;
      from = p;
    } else if (r->prompts != prompts) {
      throw_input(p->path, "workload " + w.name + ": its prompts differ from those of " + from->path);
    }
  }
  // A record holding only a reference (as a recorded fixture does) gives row 0 a prompt of its length.
  if (!from)
    for (const PeerFile* p : peers)
      for (const Reference& ref : p->references)
        if (!from && int64_t(ref.prompt.size()) == w.prompt) {
          prompts = {ref.prompt};
          from = p;
        }
  for (int64_t r = int64_t(prompts.size()); r < w.batch; ++r) prompts.push_back(synthetic_prompt(w.prompt, int(r), vocab));
  for (const auto& row : prompts)
    for (int32_t id : row)
      if (id >= vocab)
        throw_input(from ? from->path : "prompt", "token id " + std::to_string(id) + " is outside the vocabulary (" +
                                                      std::to_string(vocab) + ")");
  return prompts;
}

const Reference* find_reference(const std::vector<const PeerFile*>& peers, const std::vector<int32_t>& prompt) {
  for (const PeerFile* p : peers)
    for (const Reference& r : p->references)
      if (r.prompt == prompt) return &r;
  return nullptr;
}

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b, size_t limit) {
  size_t i = 0;
  while (i < limit && i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

// One model, checked before anything is measured: its peers and every workload's prompts.
struct Prepared {
  BenchModel bm;
  std::vector<const PeerFile*> peers;
  std::vector<std::vector<std::vector<int32_t>>> prompts;  // per workload
};

// The reference the semantic check uses for a model: a peer's, or the CPU reference backend's.
bool reference_on_cpu(const BenchOptions& o, const Model& model) {
  return o.reference == "cpu" || (o.reference == "auto" && model.quant.kind != QuantConfig::Kind::None);
}

// The CPU reference backend's greedy run of the prompt on the same weights (an FP8 model's are
// fp8 x scale in f32: exact W8A16 semantics), one per distinct prompt.
const Reference& cpu_reference(std::map<std::vector<int32_t>, Reference>& cache, const Graph& graph, const Model& model,
                               const std::vector<int32_t>& prompt, const BenchOptions& o) {
  auto it = cache.find(prompt);
  if (it != cache.end()) return it->second;
  const int64_t seq = int64_t(prompt.size()) + o.validate_tokens;
  auto ex = make_executor("cpu", graph, ExecutorLimits{1, seq, int64_t(prompt.size()), 1});
  const std::string weights = model.quant.kind == QuantConfig::Kind::None ? "" : ", " + model.quant.describe();
  progress_line(o.progress, "bench e2e: the CPU reference of a %zu-token prompt (%d tokens)", prompt.size(), o.validate_tokens);
  return cache[prompt] = greedy_reference(*ex, prompt, o.validate_tokens, "agentcompile cpu reference" + weights);
}

// A profiled run's kernels (Executor::kernel_profile) as the row's "kernels": per phase and kind,
// ms per step and its share of the phase, and what it moved per step; the rates against this
// run's ceilings are added by run_e2e (add_kernel_rates).
Json kernel_profile_json(const KernelProfile& kp) {
  Json out = {{"status", "profiled"}, {"decode_steps", kp.decode_steps}, {"prompt_steps", kp.prompt_steps},
              {"prompt_tokens_per_step", kp.prompt_steps > 0 ? Json(double(kp.prompt_tokens) / double(kp.prompt_steps))
                                                              : Json(nullptr)},
              {"kinds", Json::array()}};
  std::map<std::string, double> total;
  for (const KernelKind& k : kp.kinds) total[k.phase] += k.ms_per_step;
  for (const KernelKind& k : kp.kinds)
    out["kinds"].push_back({{"phase", k.phase}, {"kind", k.kind}, {"ms_per_step", k.ms_per_step},
                            {"share_pct", total[k.phase] > 0 ? 100.0 * k.ms_per_step / total[k.phase] : 0.0},
                            {"bytes_per_step", k.bytes_per_step}, {"flops_per_step", k.flops_per_step},
                            {"launches_per_step", k.launches_per_step}});
  return out;
}

// Each profiled kind's rate against the ceilings measured in this run: GB/s against the copy
// bandwidth, or (a GEMM, which counts FLOPs) TFLOP/s against the GEMM rate.
void add_kernel_rates(Json& kernels, double copy_GBps, double gemm_tflops) {
  if (!kernels.is_object() || !kernels.contains("kinds")) return;
  for (Json& k : kernels["kinds"]) {
    const double ms = k.value("ms_per_step", 0.0), bytes = k.value("bytes_per_step", 0.0), flops = k.value("flops_per_step", 0.0);
    if (ms <= 0) continue;
    if (flops > 0) {
      k["TFLOPs"] = flops / (ms * 1e9);
      if (gemm_tflops > 0) k["pct_of_gemm"] = 100.0 * flops / (ms * 1e9) / gemm_tflops;
    } else if (bytes > 0) {
      k["GBps"] = bytes / (ms * 1e6);
      if (copy_GBps > 0) k["pct_of_copy"] = 100.0 * bytes / (ms * 1e6) / copy_GBps;
    }
  }
}

// floor_ms: the workload's floor; for a batched mixture of experts, the floor given the experts a
// sparse layer's decode step reads (counted in an untimed run after the timed ones), 0 if unknown.
Json measure(const Prepared& m, const Graph& graph, const Workload& w, const std::vector<std::vector<int32_t>>& prompts,
             const BenchOptions& o, const std::string& backend, const std::optional<Plan>& plan,
             const std::function<double(double)>& floor_of, const Reference* ref, const std::string& no_ref_detail) {
  const ModelConfig& cfg = m.bm.model->config;
  const ExecutorLimits lim{int(w.batch), w.prompt + w.gen, w.batch * w.prompt, w.batch};
  auto ex = plan ? make_plan_executor(*plan, graph, lim) : make_executor(backend, graph, lim, BackendOptions{o.cuda_route});
  for (int i = 0; i < o.warmup; ++i) run_greedy(*ex, cfg, prompts, std::min<int64_t>(w.gen, 16));
  std::vector<double> prefill, steps;
  std::vector<int32_t> first_tokens;
  for (int i = 0; i < std::max(o.repeats, 1); ++i) {
    RunOut r = run_greedy(*ex, cfg, prompts, w.gen);
    prefill.push_back(r.prefill_ms);
    steps.insert(steps.end(), r.step_ms.begin(), r.step_ms.end());
    if (i == 0) first_tokens = r.tokens.at(0);
  }
  // A batch of a mixture of experts reads the union of its rows' picks per sparse layer: counted
  // in a run of its own (counting adds work to the steps), where the executor can count them.
  const bool moe_batch = cfg.is_moe() && w.batch > 1;
  double experts_per_layer = moe_batch ? 0.0 : double(cfg.moe.experts_per_token);
  if (moe_batch && ex->count_expert_reads(true)) {
    run_greedy(*ex, cfg, prompts, std::min<int64_t>(w.gen, 16));
    experts_per_layer = ex->expert_reads().per_layer_step();
    ex->count_expert_reads(false);
  }
  const double floor_ms = experts_per_layer > 0 || !cfg.is_moe() ? floor_of(experts_per_layer) : 0.0;
  // --profile: the row's kernels by kind, from one more run of its own (profiled steps run launch
  // by launch), where the executor can profile them.
  Json kernels;
  if (o.profile) {
    if (ex->profile_kernels(true)) {
      run_greedy(*ex, cfg, prompts, std::min<int64_t>(w.gen, 16));
      kernels = kernel_profile_json(ex->kernel_profile());
      ex->profile_kernels(false);
    } else {
      kernels = {{"status", "not available on the " + ex->name() + " backend"}};
    }
  }
  // The semantic check, teacher-forced through the decode path of this same executor.
  Validation val;
  val.wanted = o.validate_tokens;
  val.epsilon = o.tie_epsilon;
  val.detail = no_ref_detail;
  if (ref) {
    const int n = int(std::min<int64_t>(o.validate_tokens, w.gen));
    auto ours = teacher_forced_choices(*ex, prompts[0], ref->tokens, n, w.batch);
    for (size_t row = 0; row < ours.size(); ++row) {
      Validation v = validate_tokens(ours[row], *ref, o.validate_tokens, o.tie_epsilon);
      if (row == 0 || (!v.passed() && val.passed())) val = v;
      if (!v.passed()) {
        val.detail = "batch row " + std::to_string(row) + ": " + v.detail;
        break;
      }
    }
  }
  const double decode = median(steps), pre = median(prefill);
  // A whole request: the prompt (its prefill gives the first token: time to first token), then
  // the other gen - 1 tokens. The headline speedup against a peer is this one.
  auto request_ms = [&](double prefill_ms, double decode_ms) { return prefill_ms + double(w.gen - 1) * decode_ms; };
  const double request = request_ms(pre, decode);
  Json row = {{"prefill_ms", pre},
              {"request_ms", request},
              {"prefill_samples_ms", prefill},
              {"decode_ms_per_token", decode},
              {"decode_samples_ms", steps},
              {"tokens_per_s", decode > 0 ? 1000.0 * double(w.batch) / decode : 0.0},
              {"floor_ms", floor_ms > 0 ? Json(floor_ms) : Json(nullptr)},
              {"experts_per_sparse_layer", cfg.is_moe() && experts_per_layer > 0 ? Json(experts_per_layer) : Json(nullptr)},
              {"pct_of_floor", floor_ms > 0 && decode > 0 ? Json(100.0 * floor_ms / decode) : Json(nullptr)},
              {"validation", val.to_json()},
              {"reference", ref ? Json(ref->source) : Json(nullptr)},
              {"counted", val.passed()},
              {"tokens", std::vector<int32_t>(first_tokens.begin(),
                                              first_tokens.begin() + std::min<size_t>(first_tokens.size(), 32))},
              {"peers", Json::object()}};
  if (!kernels.is_null()) row["kernels"] = kernels;
  for (const PeerFile* p : m.peers) {
    const PeerRun* pr = p->find_run(w.prompt, w.gen, w.batch);
    if (!pr) continue;
    row["peers"][p->peer] = {{"file", p->path},
                             {"prefill_ms", pr->prefill_median_ms},
                             {"decode_ms_per_token", pr->decode_median_ms},
                             {"tokens_per_s", 1000.0 * double(pr->batch) / pr->decode_median_ms},
                             {"request_ms", request_ms(pr->prefill_median_ms, pr->decode_median_ms)},
                             {"speedup", decode > 0 ? pr->decode_median_ms / decode : 0.0},
                             {"prefill_speedup", pre > 0 ? pr->prefill_median_ms / pre : 0.0},
                             {"request_speedup", request > 0 ? request_ms(pr->prefill_median_ms, pr->decode_median_ms) / request : 0.0},
                             {"free_running_prefix", common_prefix(first_tokens, pr->tokens.at(0), 32)}};
  }
  progress_line(o.progress, "bench e2e: %s %s: prefill %.2f ms, decode %.3f ms/token, %s", m.bm.name.c_str(),
                w.name.c_str(), pre, decode, (val.status + (val.detail.empty() ? "" : " (" + val.detail + ")")).c_str());
  return row;
}

}  // namespace

Json run_e2e(const BenchOptions& o) {
  if (o.workloads.empty()) throw_input("--workloads", "no workload given");
  if (!o.plan.empty() && o.models.size() != 1) throw_input("--plan", "a plan is made for one model: give exactly one --model");
  std::string backend = o.plan.empty() ? resolve_backend(o.backend) : "";
  std::vector<PeerFile> peers;
  for (const auto& f : o.peer_files) peers.push_back(load_peer_file(f));

  // Everything that can be wrong with the input is found before the first measurement.
  std::vector<Prepared> models;
  std::optional<Plan> plan;
  for (const std::string& spec : o.models) {
    Prepared m{resolve_model(spec, o), {}, {}};
    const ModelConfig& cfg = m.bm.model->config;
    if (!o.plan.empty()) {  // refused here when made for another model, machine or engine
      prepare_model_for_plan(o.plan, *m.bm.model);
      plan = load_plan_for(o.plan, *m.bm.model, o.backend, o.rebuild_kernels ? PlanKernels::Rebuild : PlanKernels::Load);
      backend = plan->environment.backend;
    }
    for (const PeerFile& p : peers) {
      if (p.model != m.bm.name) continue;
      if (p.parameters >= 0 && p.parameters != m.bm.model->weights.parameters)
        throw_input(p.path, "model " + m.bm.name + " has " + std::to_string(p.parameters) + " parameters there and " +
                                std::to_string(m.bm.model->weights.parameters) + " here (not the same folder?)");
      m.peers.push_back(&p);
    }
    for (const Workload& w : o.workloads) {
      check_context(cfg, w.prompt, w.gen);
      m.prompts.push_back(workload_prompts(w, m.peers, cfg.vocab_size));
    }
    models.push_back(std::move(m));
  }

  Json rep = report_header("e2e", o, backend);
  if (plan) {
    rep["settings"]["plan"] = fs::absolute(o.plan).string();
    rep["settings"]["rebuild_kernels"] = o.rebuild_kernels;
  }
  rep["ceilings"] = measure_ceilings(backend, o.progress);
  const double copy_GBps = ceiling(rep["ceilings"], "copy_GBps"), read_GBps = ceiling(rep["ceilings"], "read_GBps");
  const double gemm_tflops = ceiling(rep["ceilings"], "gemm_tflops");
  rep["models"] = Json::array();
  rep["peers"] = Json::array();
  rep["results"] = Json::array();
  for (const PeerFile& p : peers)
    rep["peers"].push_back({{"file", p.path}, {"peer", p.peer}, {"model", p.model}, {"environment", p.environment}});
  for (const Prepared& m : models) {
    // The weight bytes a decode step reads, as stored (an FP8 model's fp8 bytes and scales, which
    // its kernels are to stream; the generic route reads the f32 they load as, and shows it), by
    // Model::decode_step_bytes: one embedding row and every other weight once for a dense model,
    // whose batch rows share them (a tied model's table once more as its 16-bit head, or its FP8
    // copy's bytes where the head is FP8, not both); a mixture of experts the experts each sparse
    // layer reads: the top-k at batch 1, a batch the union of its rows' picks as the executor
    // counted it (no floor where it cannot count).
    const Model& model = *m.bm.model;
    auto step_bytes = [&](double experts_per_layer) {
      if (model.config.is_moe()) return experts_per_layer > 0 ? double(model.decode_step_bytes(experts_per_layer)) : 0.0;
      return double(model.decode_step_bytes());
    };
    const double top_k = model.config.is_moe() ? double(model.config.moe.experts_per_token) : 0.0;
    // And the KV cache an average decode step of the workload reads (decode_kv_bytes): long
    // contexts (W3) read hundreds of MB a step.
    auto kv_bytes = [&](const Workload& w) { return decode_kv_bytes(model.config, w); };
    auto row_bytes = [&](const Workload& w, double experts_per_layer) {
      const double weights = step_bytes(experts_per_layer);
      return weights > 0 ? weights + kv_bytes(w) : 0.0;
    };
    auto floor_at = [](double bytes, double GBps) { return GBps > 0 && bytes > 0 ? bytes / (GBps * 1e6) : 0.0; };
    const double floor_ms = floor_at(step_bytes(top_k), copy_GBps);
    // The same weights at what reads alone stream: a lower floor (the stays the copy's).
    const double read_floor_ms = floor_at(step_bytes(top_k), read_GBps);
    Json mj = model_json(m.bm);
    mj["floor_ms"] = floor_ms > 0 ? Json(floor_ms) : Json(nullptr);
    mj["read_floor_ms"] = read_floor_ms > 0 ? Json(read_floor_ms) : Json(nullptr);
    rep["models"].push_back(mj);
    const Graph graph = build_decoder_graph(m.bm.model->config, m.bm.model->weights);
    if (plan) {  // a plan timed on other kernels than these still runs; the report says so
      const std::vector<std::string> stale = stale_plan_kernels(*plan, graph);
      rep["settings"]["plan_stale_kernels"] = stale.size();
      if (!stale.empty())
        std::fprintf(stderr, "warning: --plan %s: %s\n", o.plan.c_str(), stale_plan_warning(*plan, stale).c_str());
    }
    std::map<std::vector<int32_t>, Reference> cpu_refs;
    for (size_t i = 0; i < o.workloads.size(); ++i) {
      const Workload& w = o.workloads[i];
      Json row;
      // A run that fails (a kernel error, memory) is reported and the others still run.
      try {
        // The reference: the CPU's (which may not fit: the row is then measured without one) or a peer's.
        const Reference* ref = nullptr;
        std::string why = "no reference for this prompt (give --peer with an hf-eager record, or --reference cpu)";
        if (reference_on_cpu(o, model)) {
          try {
            ref = &cpu_reference(cpu_refs, graph, model, m.prompts[i][0], o);
          } catch (const Error& e) {
            why = std::string("the CPU reference could not run: ") + e.what();
          }
        } else {
          ref = find_reference(m.peers, m.prompts[i][0]);
        }
        auto floor_of = [&](double experts_per_layer) { return floor_at(row_bytes(w, experts_per_layer), copy_GBps); };
        row = measure(m, graph, w, m.prompts[i], o, backend, plan, floor_of, ref, why);
      } catch (const Error& e) {
        progress_line(o.progress, "bench e2e: %s %s: error: %s", m.bm.name.c_str(), w.name.c_str(), e.what());
        row = {{"error", e.what()}, {"counted", false}, {"validation", {{"status", "error"}, {"detail", e.what()}}},
               {"peers", Json::object()}};
      }
      row["model"] = m.bm.name;
      row["workload"] = w.name;
      row["prompt"] = w.prompt;
      row["gen"] = w.gen;
      row["batch"] = w.batch;
      row["backend"] = backend;
      row["route"] = plan ? "plan" : backend == "cuda" ? o.cuda_route : "cpu";
      const double decode = row.value("decode_ms_per_token", 0.0);
      // The experts the row's floor counted (top-k at batch 1; a batch's counted union; none: no floor).
      const Json& epl = row.value("experts_per_sparse_layer", Json());
      const double experts = model.config.is_moe() ? (epl.is_number() ? epl.get<double>() : 0.0) : top_k;
      const double read_floor = floor_at(row_bytes(w, experts), read_GBps);
      row["floor_kv_bytes"] = floor_at(row_bytes(w, experts), copy_GBps) > 0 ? Json(kv_bytes(w)) : Json(nullptr);
      row["pct_of_read_floor"] = read_floor > 0 && decode > 0 ? Json(100.0 * read_floor / decode) : Json(nullptr);
      // The prompt against the GEMM rate of this run: the model's FLOPs over the time to first token.
      const double pre = row.value("prefill_ms", 0.0), flops = prefill_flops(model.config, w);
      row["prefill_flops"] = flops;
      row["prefill_tflops"] = pre > 0 ? Json(flops / (pre * 1e9)) : Json(nullptr);
      row["prefill_pct_of_gemm"] = pre > 0 && gemm_tflops > 0 ? Json(100.0 * flops / (pre * 1e9) / gemm_tflops) : Json(nullptr);
      if (row.contains("kernels")) add_kernel_rates(row["kernels"], copy_GBps, gemm_tflops);
      if (model.config.is_moe() && w.batch > 1 && experts <= 0)
        row["floor_note"] = "a batched mixture-of-experts step reads the union of its rows' experts: this backend does not count them";
      rep["results"].push_back(std::move(row));
    }
  }
  return rep;
}

}  // namespace ac::bench
