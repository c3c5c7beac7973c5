// bench module: one decoder layer, prefill and decode. A layer's time is the difference between
// the same model cut to two layers and to one layer (same weights, layers 0-1), each run whole
// through the engine (CUDA graphs included on the fast route): embedding, final norm, lm_head
// and per-step overheads cancel, what remains is one layer as the engine runs it.
#include "agentcompile/bench/tiers.h"
#include "agentcompile/core/error.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/runtime/backends.h"
#include "agentcompile/runtime/engine.h"
#include "bench/common.h"
#include "bench/runner.h"
#include "bench/stats.h"

namespace ac::bench {

namespace {

uint64_t layer_bytes(const LayerWeights& L) {
  uint64_t b = 0;
  for (const TensorInfo* t : {L.input_norm, L.q, L.k, L.v, L.o, L.q_bias, L.k_bias, L.v_bias, L.o_bias, L.q_norm,
                              L.k_norm, L.post_norm, L.gate, L.up, L.down, L.gate_bias, L.up_bias, L.down_bias})
    if (t) b += t->nbytes();
  return b;
}

struct Timing {
  std::vector<double> prefill, steps;
};

Timing time_layers(const BenchModel& bm, int64_t layers, const BenchOptions& o, const std::string& backend) {
  ModelConfig c = bm.model->config;
  ModelWeights w = bm.model->weights;
  c.num_layers = layers;
  w.layers.resize(size_t(layers));
  const Graph g = build_decoder_graph(c, w);
  const int64_t p = o.module_prompt, steps = o.module_steps;
  auto ex = make_executor(backend, g, ExecutorLimits{1, p + steps, p, 1}, BackendOptions{o.cuda_route});
  const std::vector<std::vector<int32_t>> prompt = {synthetic_prompt(p, 0, c.vocab_size)};
  for (int i = 0; i < o.warmup; ++i) run_greedy(*ex, c, prompt, std::min<int64_t>(steps, 8));
  Timing t;
  for (int i = 0; i < std::max(o.repeats, 1); ++i) {
    RunOut r = run_greedy(*ex, c, prompt, steps);
    t.prefill.push_back(r.prefill_ms);
    t.steps.insert(t.steps.end(), r.step_ms.begin(), r.step_ms.end());
  }
  return t;
}

}  // namespace

Json run_module(const BenchOptions& o) {
  if (!o.plan.empty())
    throw_input("--plan", "bench module times the model cut to 1 and 2 layers, which a plan for the whole model does not "
                          "describe; use bench e2e --plan");
  if (o.module_prompt < 1 || o.module_steps < 2) throw_input("--prompt/--steps", "need a prompt >= 1 and >= 2 steps");
  const std::string backend = resolve_backend(o.backend);
  Json rep = report_header("module", o, backend);
  rep["ceilings"] = measure_ceilings(backend, o.progress);
  const double copy = ceiling(rep["ceilings"], "copy_GBps"), gemm = ceiling(rep["ceilings"], "gemm_tflops");
  rep["models"] = Json::array();
  rep["results"] = Json::array();
  rep["method"] = "layer time = time(model cut to 2 layers) - time(model cut to 1 layer), medians";
  for (const std::string& spec : o.models) {
    BenchModel bm = resolve_model(spec, o);
    const ModelConfig& c = bm.model->config;
    if (c.num_layers < 2) throw_input(spec, "bench module needs a model with at least 2 layers");
    check_context(c, o.module_prompt, o.module_steps);
    rep["models"].push_back(model_json(bm));
    const Timing one = time_layers(bm, 1, o, backend), two = time_layers(bm, 2, o, backend);
    const double bytes = double(layer_bytes(bm.model->weights.layers[1]));
    const double p = double(o.module_prompt);
    const double weight_params = bytes / double(dtype_size(bm.model->weights.layers[1].q->dtype));
    const double prefill_flops = 2.0 * p * weight_params + 2.0 * p * p * double(c.q_dim());
    const double decode_flops = 2.0 * weight_params + 4.0 * p * double(c.q_dim());
    struct Phase {
      const char* name;
      const std::vector<double>&a, &b;
      double tokens, flops;
    };
    for (const Phase& ph : {Phase{"prefill", one.prefill, two.prefill, p, prefill_flops},
                            Phase{"decode", one.steps, two.steps, 1.0, decode_flops}}) {
      const double m1 = median(ph.a), m2 = median(ph.b);
      // A layer's time is a difference of two noisy medians: shown only where it stands out.
      const MedianDifference d = median_difference(ph.a, ph.b);
      const double layer = d.diff;
      const bool ok = d.significant;
      Json row = {{"model", bm.name}, {"phase", ph.name}, {"backend", backend},
                  {"route", backend == "cuda" ? o.cuda_route : "cpu"}, {"tokens", ph.tokens},
                  {"context", o.module_prompt}, {"layer_ms", ok ? Json(layer) : Json(nullptr)},
                  {"layer_difference_ms", layer}, {"one_layer_ms", m1}, {"two_layer_ms", m2},
                  {"one_layer_samples_ms", ph.a}, {"two_layer_samples_ms", ph.b}, {"layer_bytes", bytes},
                  {"layer_flops", ph.flops}};
      row["GBps"] = ok ? Json(bytes / (layer * 1e6)) : Json(nullptr);
      row["TFLOPs"] = ok ? Json(ph.flops / (layer * 1e9)) : Json(nullptr);
      row["pct_of_copy"] = ok && copy > 0 ? Json(100.0 * bytes / (layer * 1e6) / copy) : Json(nullptr);
      row["pct_of_gemm"] = ok && gemm > 0 ? Json(100.0 * ph.flops / (layer * 1e9) / gemm) : Json(nullptr);
      if (!ok) row["note"] = d.why;
      if (ok)
        progress_line(o.progress, "bench module: %s %s: one layer %.4f ms (1 layer %.4f, 2 layers %.4f)",
                      bm.name.c_str(), ph.name, layer, m1, m2);
      else
        progress_line(o.progress, "bench module: %s %s: one layer — (%s; 1 layer %.4f, 2 layers %.4f)",
                      bm.name.c_str(), ph.name, d.why.c_str(), m1, m2);
      rep["results"].push_back(std::move(row));
    }
  }
  return rep;
}

}  // namespace ac::bench
