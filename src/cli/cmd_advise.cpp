// agentcompile advise MODEL [...]: region summaries, candidate space sizes and the validated
// advice, without measuring anything. Also the region view behind `inspect --regions`.
#include <cstdio>

#include "agentcompile/compiler/front.h"
#include "agentcompile/core/error.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/runtime/backends.h"
#include "cli/cli_common.h"

namespace ac::cli {

namespace {

struct AdviseOptions {
  std::string model, target, backend = "auto", record, phase = "both";
  AdvisorFlags advice;
  bool json = false, print_prompt = false, nominal = false;
  int64_t batch = 1, context = 256, prefill_tokens = 128;
};

std::string human(double v, const char* unit) {
  char buf[48];
  if (v >= 1e12) std::snprintf(buf, sizeof buf, "%.2fT%s", v / 1e12, unit);
  else if (v >= 1e9) std::snprintf(buf, sizeof buf, "%.2fG%s", v / 1e9, unit);
  else if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.2fM%s", v / 1e6, unit);
  else if (v >= 1e3) std::snprintf(buf, sizeof buf, "%.1fK%s", v / 1e3, unit);
  else std::snprintf(buf, sizeof buf, "%.0f%s", v, unit);
  return buf;
}

std::string time_text(const Roofline& r) {
  if (!r.known) return "unknown";
  char buf[48];
  if (r.time_us >= 1000) std::snprintf(buf, sizeof buf, "%.2f ms", r.time_us / 1000);
  else std::snprintf(buf, sizeof buf, "%.2f us", r.time_us);
  return buf;
}

std::string target_text(const TargetFacts& t) {
  char buf[256];
  std::string s = t.name + " (" + t.device;
  if (t.kind == "gpu") s += ", " + t.arch + ", " + std::to_string(t.sm_count) + " SMs";
  else s += ", " + std::to_string(t.cores) + " cores";
  if (t.bandwidth_gbs > 0) {
    std::snprintf(buf, sizeof buf, ", %.0f GB/s %s, %.3g TFLOP/s %s", t.bandwidth_gbs,
                  t.bandwidth_measured ? "measured" : "nominal/datasheet", t.matmul_tflops,
                  t.matmul_measured ? "measured" : "nominal/datasheet");
    s += buf;
  } else {
    s += ", ceilings unknown";
  }
  return s + ")";
}

std::vector<Phase> phases_of(const std::string& p) {
  if (p == "both") return {Phase::Decode, Phase::Prefill};
  if (p == "decode") return {Phase::Decode};
  if (p == "prefill") return {Phase::Prefill};
  throw_input("--phase", json_quote(p) + " is not decode, prefill or both");
}

std::string hints_text(const Advice& a) {
  std::string s;
  for (const auto& [fam, params] : a.narrowed) {
    s += (s.empty() ? "" : "; ") + fam;
    for (const auto& p : params) {
      s += " " + p.name + "=[";
      for (size_t i = 0; i < p.values.size(); ++i) s += (i ? "," : "") + std::to_string(p.values[i]);
      s += "]";
    }
  }
  return s.empty() ? "none" : s;
}

void print_prompt_text(const Json& messages) {
  for (const auto& m : messages) {
    const std::string role = m["role"].get<std::string>();
    std::string content = m["content"].get<std::string>();
    if (role == "user") content = Json::parse(content).dump(2);
    std::printf("  --- %s ---\n%s\n", role.c_str(), content.c_str());
  }
}

void print_text(const Model& m, const AdviseOptions& o, const FrontOptions& fo, const FrontResult& r,
                const std::string& advisor, const std::vector<std::string>& notes) {
  std::printf("model     %s (%s, %lld layers)\n", m.dir.string().c_str(), std::string(arch_name(m.config.arch)).c_str(),
              (long long)m.config.num_layers);
  std::printf("backend   %s\ntarget    %s\nadvisor   %s\n", fo.backend.c_str(), target_text(fo.target).c_str(), advisor.c_str());
  std::printf("points    decode: batch %lld, context %lld; prefill: %lld tokens\n\n", (long long)fo.decode.batch,
              (long long)fo.decode.context, (long long)fo.prefill.tokens);
  std::printf("%-10s %-8s %4s  %-16s %9s %9s %8s %14s %7s %7s\n", "region", "phase", "n", "signature", "flops", "bytes",
              "AI", "roofline", "space", "advised");
  for (const auto& w : r.work) {
    const RegionSummary& s = w.summary;
    std::printf("%-10s %-8s %4zu  %-16s %9s %9s %8.2f %9s %-4s %7zu %7zu\n", std::string(region_kind_name(s.kind)).c_str(),
                std::string(phase_name(s.phase)).c_str(), s.instances.size(), s.signature.c_str(), human(s.cost.flops, "").c_str(),
                human(s.cost.bytes(), "B").c_str(), s.cost.intensity(), time_text(s.roof).c_str(),
                s.roof.bound == "memory" ? "mem" : s.roof.bound == "compute" ? "comp" : "?", w.space.size(), w.ordered.size());
    const Advice& a = w.advice.advice;
    std::string families;
    for (const auto& f : w.space.families)
      families += (families.empty() ? "" : ", ") + f.id + " " + std::to_string(f.valid_points);
    std::printf("    space     %s\n", families.c_str());
    std::printf("    label     %s\n", a.label.empty() ? "-" : a.label.c_str());
    std::string order;
    for (const auto& f : a.family_order) order += (order.empty() ? "" : ", ") + f;
    std::printf("    order     %s%s\n", w.space.fallback().id.c_str(), order.empty() ? "" : (", " + order).c_str());
    std::printf("    hints     %s\n", hints_text(a).c_str());
    for (const auto& x : a.excluded) std::printf("    excluded  %s\n", x.c_str());
    for (const auto& k : a.risks)
      std::printf("    risk      %s%s: %s\n", k.family.empty() ? "" : (k.family + " ").c_str(), k.risk.c_str(), k.reason.c_str());
    for (const auto& j : a.rejections)
      std::printf("    rejected  %s%s%s: %s\n", j.path.c_str(), j.value.empty() ? "" : " = ", j.value.c_str(), j.reason.c_str());
    if (!w.advice.note.empty()) std::printf("    note      %s\n", w.advice.note.c_str());
    std::string first;
    for (size_t i = 0; i < w.ordered.size() && i < 3; ++i) first += (i ? ", " : "") + w.ordered[i].name();
    std::printf("    first     %s\n", first.c_str());
    if (o.print_prompt) {
      std::printf("    prompt    sha256 %s\n", prompt_sha256(w.prompt).c_str());
      print_prompt_text(w.prompt);
    }
  }
  std::printf("\ntotal     decode step roofline %.3f ms, prefill roofline %.3f ms; candidates %zu (advised %zu)\n",
              r.roofline_us(Phase::Decode) / 1000, r.roofline_us(Phase::Prefill) / 1000, r.space_size(), r.advised_size());
  for (const auto& n : notes) std::printf("note      %s\n", n.c_str());
}

int run_advise(const AdviseOptions& o) {
  if (o.batch < 1 || o.batch > 4096) throw_input("--batch", "must be in [1, 4096]");
  if (o.context < 1 || o.context > ConfigLimits::kMaxPositions) throw_input("--context", "must be a positive position count");
  if (o.prefill_tokens < 1 || o.prefill_tokens > ConfigLimits::kMaxPositions)
    throw_input("--prefill-tokens", "must be a positive token count");
  const AdvisorConfig cfg = advisor_config(o.advice.advisor, o.advice.llm_url, o.advice.llm_model);
  auto model = load_model(o.model);
  const Graph g = build_decoder_graph(model->config, model->weights);

  FrontOptions fo;
  fo.backend = o.backend;
  if (fo.backend == "auto") fo.backend = cuda_backend_available() ? "cuda" : "cpu";
  if (fo.backend != "cpu" && fo.backend != "cuda") throw_input("--backend", json_quote(o.backend) + " is not cpu, cuda or auto");
  std::vector<std::string> notes;
  std::string note;
  fo.target = resolve_target(o.target, fo.backend, !o.nominal, &note);
  if (!note.empty()) notes.push_back(note);
  fo.phases = phases_of(o.phase);
  fo.decode = decode_point(o.batch, o.context);
  fo.prefill = prefill_point(o.prefill_tokens);

  auto advisor = make_advisor(cfg);
  FrontResult r = run_front(g, fo, *advisor);
  for (const auto& n : r.notes) notes.push_back(n);
  if (const std::string fell = advisor->tally().summary(advisor->name()); !fell.empty())
    std::fprintf(stderr, "warning: %s\n", fell.c_str());

  if (!o.record.empty()) {
    AdviceRecord rec;
    rec.advisor = advisor->name();
    rec.llm_model = cfg.kind == "openai" ? cfg.llm_model : "";
    rec.exchanges = r.exchanges();
    rec.save(o.record);
  }

  if (!o.json) {
    print_text(*model, o, fo, r, advisor->name(), notes);
    return 0;
  }
  Json regions = Json::array();
  for (const auto& w : r.work) {
    Json first = Json::array();
    for (size_t i = 0; i < w.ordered.size() && i < 8; ++i) first.push_back(w.ordered[i].name());
    Json j = {{"summary", w.summary.to_json()},
              {"space", w.space.to_json()},
              {"advice", w.advice.advice.to_json()},
              {"fell_back", w.advice.fell_back},
              {"note", w.advice.note},
              {"exchange", w.advice.exchange.to_json()},
              {"advised_size", w.ordered.size()},
              {"first_candidates", first}};
    if (o.print_prompt) j["prompt"] = w.prompt;
    regions.push_back(std::move(j));
  }
  Json out = {{"model", model->dir.string()},
              {"architecture", std::string(arch_name(model->config.arch))},
              {"backend", fo.backend},
              {"target", fo.target.to_json()},
              {"advisor", advisor->name()},
              {"advisor_summary", advisor->tally().to_json(advisor->name())},
              {"points", {{"decode", fo.decode.to_json()}, {"prefill", fo.prefill.to_json()}}},
              {"regions", regions},
              {"totals",
               {{"decode_roofline_us", r.roofline_us(Phase::Decode)},
                {"prefill_roofline_us", r.roofline_us(Phase::Prefill)},
                {"space_size", r.space_size()},
                {"advised_size", r.advised_size()},
                {"region_classes", r.partition.classes.size()},
                {"regions", r.partition.regions.size()}}},
              {"notes", notes}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

}  // namespace

Json regions_report(const Model& m) {
  const Graph g = build_decoder_graph(m.config, m.weights);
  std::string note;
  const std::string backend = cuda_backend_available() ? "cuda" : "cpu";
  const TargetFacts target = resolve_target("", backend, false, &note);
  const Partition p = partition_graph(g);
  std::vector<int> class_of(p.regions.size(), -1);
  for (size_t c = 0; c < p.classes.size(); ++c)
    for (int m2 : p.classes[c].members) class_of[size_t(m2)] = int(c);
  Json regions = Json::array();
  for (size_t i = 0; i < p.regions.size(); ++i) {
    const Region& r = p.regions[i];
    Json in = Json::array(), out = Json::array();
    for (int v : r.inputs) in.push_back(g.value(v).name);
    for (int v : r.outputs) out.push_back(g.value(v).name);
    regions.push_back({{"name", r.name}, {"kind", std::string(region_kind_name(r.kind))}, {"layer", r.layer},
                       {"pattern", r.pattern}, {"inputs", in}, {"outputs", out}, {"class", class_of[i]},
                       {"signature_decode", region_signature(r.shape_key, Phase::Decode)},
                       {"signature_prefill", region_signature(r.shape_key, Phase::Prefill)}});
  }
  Json classes = Json::array();
  for (size_t c = 0; c < p.classes.size(); ++c)
    classes.push_back({{"kind", std::string(region_kind_name(p.classes[c].kind))},
                       {"instances", p.classes[c].members.size()},
                       {"shape_key", p.classes[c].shape_key},
                       {"decode", summarize_region(g, p, c, Phase::Decode, decode_point(1, 256), target).to_json()},
                       {"prefill", summarize_region(g, p, c, Phase::Prefill, prefill_point(128), target).to_json()}});
  return {{"target", target.to_json()}, {"regions", regions}, {"region_classes", classes}};
}

void print_regions(const Json& rep) {
  std::printf("\nregions (%zu, in %zu classes):\n", rep["regions"].size(), rep["region_classes"].size());
  for (const auto& r : rep["regions"]) {
    std::string in, out;
    for (const auto& v : r["inputs"]) in += (in.empty() ? "" : ",") + v.get<std::string>();
    for (const auto& v : r["outputs"]) out += (out.empty() ? "" : ",") + v.get<std::string>();
    std::printf("  %-22s %-48s %s -> %s  class %d\n", r["name"].get<std::string>().c_str(),
                r["pattern"].get<std::string>().c_str(), in.empty() ? "tokens" : in.c_str(), out.c_str(),
                r["class"].get<int>());
  }
  std::printf("\nregion classes on target %s (decode: batch 1, context 256; prefill: 128 tokens):\n",
              rep["target"]["name"].get<std::string>().c_str());
  std::printf("  %-3s %-10s %4s  %-16s %9s %9s %10s  %-16s %9s %10s\n", "#", "kind", "n", "decode sig", "flops", "bytes",
              "roofline", "prefill sig", "flops", "roofline");
  size_t i = 0;
  for (const auto& c : rep["region_classes"]) {
    auto roof = [](const Json& s) {
      const Json& t = s["roofline"]["time_us"];
      if (t.is_null()) return std::string("unknown");
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2f us", t.get<double>());
      return std::string(buf);
    };
    const Json& d = c["decode"];
    const Json& p = c["prefill"];
    std::printf("  %-3zu %-10s %4zu  %-16s %9s %9s %10s  %-16s %9s %10s\n", i++, c["kind"].get<std::string>().c_str(),
                c["instances"].get<size_t>(), d["signature"].get<std::string>().c_str(),
                human(d["flops"].get<double>(), "").c_str(), human(d["bytes"]["total"].get<double>(), "B").c_str(),
                roof(d).c_str(), p["signature"].get<std::string>().c_str(), human(p["flops"].get<double>(), "").c_str(),
                roof(p).c_str());
  }
}

Subcommand add_advise(CLI::App& root) {
  auto o = std::make_shared<AdviseOptions>();
  CLI::App* app = root.add_subcommand(
      "advise", "Region summaries, candidate spaces and the validated advice for a model, without measuring");
  app->add_option("MODEL", o->model, "Hugging Face model folder")->required();
  add_advisor_flags(app, o->advice);
  app->add_option("--target", o->target, "h200, h100, a100 or cpu (default: the detected GPU, else the host CPU)");
  app->add_option("--backend", o->backend, "cpu, cuda or auto (default)");
  app->add_option("--phase", o->phase, "decode, prefill or both (default)");
  app->add_option("--batch", o->batch, "decode batch (default 1)")->check(in_range(1, 4096));
  app->add_option("--context", o->context, "decode context positions (default 256)")->check(in_range(1, ConfigLimits::kMaxPositions));
  app->add_option("--prefill-tokens", o->prefill_tokens, "prefill prompt tokens (default 128)")->check(in_range(1, ConfigLimits::kMaxPositions));
  app->add_flag("--nominal", o->nominal, "nominal CPU figures instead of measuring bandwidth and FMA rate");
  app->add_flag("--print-prompt", o->print_prompt, "print the prompt an LLM advisor is (or would be) sent");
  app->add_option("--record", o->record, "write every advice exchange to FILE (replay with --advisor replay:FILE)");
  app->add_flag("--json", o->json, "Print JSON");
  return {app, [o]() { return run_advise(*o); }};
}

}  // namespace ac::cli
