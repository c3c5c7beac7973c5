// Fused spans: the layer-MLP span classes and the order their candidates are measured in.
#include "agentcompile/compiler/spans.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>

#include "agentcompile/tuning/backend.h"

namespace ac {

namespace {

// The width of the value written by the first step of op kind k in region r (0 when none).
int64_t width_of(const Graph& g, const Region& r, OpKind k) {
  for (const RegionStep& st : r.steps)
    if (g.ops.at(size_t(st.op)).kind == k) return g.value(g.ops.at(size_t(st.op)).output).width;
  return 0;
}

// The span's summary: the mlp_in summary's point, target and numerics, both regions' steps,
// costs without the intermediate activation the fused kernel never writes or reads back.
RegionSummary span_summary(const RegionSummary& a, const RegionSummary& b, const std::string& shape_key,
                           const std::vector<std::string>& instances, int64_t inter) {
  RegionSummary s = a;
  s.shape_key = shape_key;
  s.signature = region_signature(shape_key, a.phase);
  s.pattern = a.pattern + " | " + b.pattern;
  s.instances = instances;
  s.steps.insert(s.steps.end(), b.steps.begin(), b.steps.end());
  s.interface.outputs = b.interface.outputs;
  s.cost.flops += b.cost.flops;
  s.cost.weight_bytes += b.cost.weight_bytes;
  s.cost.kv_bytes += b.cost.kv_bytes;
  s.cost.unfused_bytes += b.cost.unfused_bytes;
  const double act = double(a.point.tokens * inter) * double(dtype_size(a.numerics.activations));
  s.cost.activation_bytes = std::max(0.0, a.cost.activation_bytes + b.cost.activation_bytes - 2 * act);
  s.roof = roofline(s.cost, s.target);
  return s;
}

}  // namespace

std::vector<SpanWork> layer_mlp_spans(const Graph& g, const FrontResult& front, const std::string& backend) {
  std::vector<SpanWork> out;
  const Backend* be = find_backend(backend);
  if (!be) return out;
  const Partition& part = front.partition;
  std::vector<size_t> class_of(part.regions.size(), 0);
  for (size_t c = 0; c < part.classes.size(); ++c)
    for (int m : part.classes[c].members) class_of[size_t(m)] = c;
  // Instances grouped by their regions' classes, in first-appearance order. Only the pattern
  // the fused kernel computes qualifies.
  std::vector<std::pair<std::pair<size_t, size_t>, std::vector<std::vector<int>>>> groups;
  for (size_t r = 0; r + 1 < part.regions.size(); ++r) {
    const Region &a = part.regions[r], &b = part.regions[r + 1];
    if (a.kind != RegionKind::MlpIn || b.kind != RegionKind::MlpOut || a.layer != b.layer) continue;
    if (a.pattern != "rms_norm linear linear swiglu" || b.pattern != "linear add") continue;
    const std::pair<size_t, size_t> key{class_of[r], class_of[r + 1]};
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& gr) { return gr.first == key; });
    if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
    it->second.push_back({int(r), int(r + 1)});
  }
  for (size_t wi = 0; wi < front.work.size(); ++wi) {
    const RegionWork& a = front.work[wi];
    for (const auto& [key, instances] : groups) {
      if (a.class_index != key.first || a.summary.kind != RegionKind::MlpIn) continue;
      size_t wb = front.work.size();
      for (size_t k = 0; k < front.work.size(); ++k)
        if (front.work[k].class_index == key.second && front.work[k].summary.phase == a.summary.phase) wb = k;
      if (wb == front.work.size()) continue;
      const RegionWork& b = front.work[wb];
      const Region& rep = part.regions.at(size_t(instances.front().front()));
      const int64_t inter = width_of(g, rep, OpKind::SwiGlu);
      std::vector<std::string> names;
      for (const auto& inst : instances)
        for (int r : inst) names.push_back(part.regions.at(size_t(r)).name);
      SpanWork sw;
      sw.name = "mlp_in+mlp_out";
      sw.parts = {wi, wb};
      RegionWork& w = sw.work;
      w.class_index = a.class_index;
      w.span_instances = instances;
      w.summary = span_summary(a.summary, b.summary,
                               "span:" + sw.name + "(" + part.classes[key.first].shape_key + ";" +
                                   part.classes[key.second].shape_key + ")",
                               names, inter);
      w.space.signature = w.summary.signature;
      w.space.kind = a.summary.kind;
      w.space.phase = a.summary.phase;
      w.space.backend = backend;
      FamilySpace fb = make_fallback(w.summary, backend);
      fb.description = "the reference ops of both regions, step by step (the regions' fallbacks together)";
      w.space.families = {std::move(fb)};
      for (FamilySpace& f : be->span_families(g, part, w))
        if (f.valid_points > 0) w.space.families.push_back(std::move(f));
      if (w.space.families.size() < 2) continue;
      w.ordered = {Candidate{w.space.fallback().id, {}}};
      out.push_back(std::move(sw));
    }
  }
  return out;
}

void order_span_candidates(SpanWork& span, const std::vector<RegionSearch>& searches) {
  RegionWork& w = span.work;
  w.ordered = {Candidate{w.space.fallback().id, {}}};
  std::vector<Candidate> winners;
  for (size_t k : span.parts)
    if (k < searches.size()) winners.push_back(searches[k].winner);
  const Backend* be = find_backend(w.space.backend);
  for (const FamilySpace& f : w.space.families) {
    if (f.route == FamilyRoute::Fallback) continue;
    std::vector<ParamPoint> points = family_points(f);
    if (be) be->order_span_points(f, winners, points);
    for (auto& p : points) w.ordered.push_back(Candidate{f.id, std::move(p)});
  }
}

void decide_span(RegionSearch& s, double separate_us, double margin) {
  s.separate_us = separate_us;
  const CandidateOutcome& fb = s.outcomes.front();
  const CandidateOutcome* best = nullptr;
  for (const CandidateOutcome* c : s.ranked())
    if (c->order != 0 && (!best || c->candidate.name() == s.winner.name())) best = c;
  const double m = std::max(margin, s.noise);
  char b[320];
  if (!best) {
    s.decision = "fallback: no correct fused candidate";
  } else if (best->median_us * (1 + m) <= separate_us) {
    s.winner = best->candidate;
    s.winner_us = best->median_us;
    std::snprintf(b, sizeof b, "specialised: %.2f us against %.2f us for the separate regions' winners (margin %.1f%%)",
                  best->median_us, separate_us, 100 * m);
    s.decision = b;
    return;
  } else {
    const double gain = separate_us / best->median_us - 1;  // negative: the span is slower
    std::snprintf(b, sizeof b,
                  "fallback: unprofitable against the separate regions (best %s at %.2f us is %.1f%% %s than their "
                  "winners at %.2f us; margin %.1f%%)",
                  best->candidate.name().c_str(), best->median_us, 100 * std::fabs(gain), gain < 0 ? "slower" : "faster",
                  separate_us, 100 * m);
    s.decision = b;
  }
  s.winner = fb.candidate;
  s.winner_us = fb.median_us;
}

}  // namespace ac
