// Region summaries: symbolic shapes, interface, cost at a shape point, roofline.
#include "agentcompile/tuning/summary.h"

#include <algorithm>
#include <set>

#include "agentcompile/core/error.h"
#include "agentcompile/model/quantization.h"

namespace ac {

namespace {

std::string dt(DType t) { return std::string(dtype_user_name(t)); }

// Graph op name without "layers.<i>.".
std::string local_name(const std::string& n) {
  if (n.rfind("layers.", 0) == 0)
    if (auto p = n.find('.', 7); p != std::string::npos) return n.substr(p + 1);
  return n;
}

bool is_logits(const Graph& g, int v) { return v == g.logits; }

// Rows of a value at point p: logits have one row per sequence, everything else one per token.
double rows(const Graph& g, int v, const ShapePoint& p) {
  return double(is_logits(g, v) ? p.batch : p.tokens);
}

size_t value_bytes_per_elem(const Graph& g, int v, const Numerics& n) {
  return is_logits(g, v) ? 4 : dtype_size(n.activations);
}

double value_bytes(const Graph& g, int v, const ShapePoint& p, const Numerics& n) {
  return rows(g, v, p) * double(g.value(v).width) * double(value_bytes_per_elem(g, v, n));
}

TensorDesc value_desc(const Graph& g, int v, const Numerics& n, const std::string& access) {
  const std::string dtype = is_logits(g, v) ? "f32" : dt(n.activations);
  return TensorDesc{local_name(g.value(v).name), {Json(is_logits(g, v) ? "batch" : "tokens"), Json(g.value(v).width)},
                    dtype, "row-major, contiguous rows", access, false};
}

std::vector<int> step_reads(const Op& op, StepRole r) {
  if (r == StepRole::KvWrite) return {op.inputs.at(1), op.inputs.at(2)};
  if (r == StepRole::Attend) return {op.inputs.at(0)};
  return op.inputs;
}

// Sum over the step's tokens of the positions each attends to (itself included).
double attended_positions(Phase phase, const ShapePoint& p) {
  if (phase == Phase::Decode) return double(p.tokens) * double(p.context);
  const double start = double(std::max<int64_t>(0, p.context - p.tokens));
  return double(p.tokens) * start + double(p.tokens) * double(p.tokens + 1) / 2.0;
}

// Cache rows (per K and V) a step reads: each sequence's context once.
double kv_rows_read(Phase phase, const ShapePoint& p) {
  return phase == Phase::Decode ? double(p.batch) * double(p.context) : double(p.context);
}

struct StepCost {
  double flops = 0, weight_bytes = 0, kv_bytes = 0;
};

StepCost step_cost(const Graph& g, const RegionStep& s, Phase phase, const ShapePoint& p, const Numerics& n) {
  const Op& op = g.ops.at(size_t(s.op));
  const double N = double(p.tokens), out_w = double(g.value(op.output).width);
  // A weight's bytes in its format: an FP8 weight's codes and scales as stored (the graph's
  // TensorInfo describes the f32 it was dequantized to for the CPU), as bench e2e's floor counts
  // them and the CUDA fast path streams them; a route that runs the f32 copy (the CPU backend, the
  // CUDA generic route) moves more than this.
  auto stored = [&](const TensorInfo* w) {
    const auto it = g.fp8.find(w);
    return it != g.fp8.end() ? double(it->second->stored_bytes) : double(w->nbytes());
  };
  auto wbytes = [&](size_t k) { return k < op.weights.size() ? stored(op.weights[k]) : 0.0; };
  StepCost c;
  switch (op.kind) {
    case OpKind::Embed:  // gathers one table row per token
      c.weight_bytes = N * out_w * double(dtype_size(op.weights.at(0)->dtype));
      break;
    case OpKind::RmsNorm:
      c.flops = 4.0 * N * out_w;
      c.weight_bytes = wbytes(0);
      break;
    case OpKind::Linear: {
      const double in = double(g.value(op.inputs.at(0)).width);
      c.flops = 2.0 * N * in * out_w + (op.weights.size() > 1 ? N * out_w : 0.0);
      c.weight_bytes = wbytes(0) + wbytes(1);
      break;
    }
    case OpKind::Rope:
      c.flops = 3.0 * N * out_w;
      break;
    case OpKind::Attention: {
      const double kv_dim = double(op.kv_heads * op.head_dim);
      const double kvb = double(dtype_size(n.kv_cache));
      if (s.role == StepRole::KvWrite) {
        c.kv_bytes = 2.0 * N * kv_dim * kvb;
      } else {
        c.flops = double(op.heads) * (4.0 * double(op.head_dim) + 5.0) * attended_positions(phase, p);
        c.kv_bytes = 2.0 * kv_rows_read(phase, p) * kv_dim * kvb;
      }
      break;
    }
    case OpKind::SwiGlu:
      c.flops = 5.0 * N * out_w;
      break;
    case OpKind::Add:
      c.flops = N * out_w;
      break;
    case OpKind::Logits: {
      const double in = double(g.value(op.inputs.at(0)).width);
      c.flops = 2.0 * double(p.batch) * in * out_w;
      c.weight_bytes = wbytes(0);
      break;
    }
    case OpKind::MoeMlp: {  // the router, then top_k experts per token; at most every expert read once
      const double E = double(op.experts), F = double(op.expert_inter), k = double(op.top_k);
      c.flops = 2.0 * N * out_w * E + N * k * (6.0 * out_w * F + 5.0 * F + 2.0 * out_w);
      double experts_bytes = 0;  // every expert's gate, up and down (FP8 ones as stored)
      for (size_t w = 1; w < op.weights.size(); ++w) experts_bytes += stored(op.weights[w]);
      const double expert_bytes = E > 0 ? experts_bytes / E : 0.0;
      c.weight_bytes = wbytes(0) + std::min(E, N * k) * expert_bytes;
      break;
    }
  }
  return c;
}

std::vector<TensorDesc> step_weights(const Op& op) {
  std::vector<TensorDesc> out;
  if (op.kind == OpKind::MoeMlp) {  // the router and the experts as one entry, not 3 x experts tensors
    const TensorInfo* r = op.weights.at(0);
    const TensorInfo* g = op.weights.at(1);
    out.push_back({"router", {Json(r->shape.at(0)), Json(r->shape.at(1))}, dt(r->dtype),
                   "row-major [rows, cols] as stored (safetensors)", "read", false});
    out.push_back({"experts", {Json(op.experts), Json(3), Json(op.expert_inter), Json(r->shape.at(1))}, dt(g->dtype),
                   "per expert gate [inter, hidden], up [inter, hidden], down [hidden, inter], each its own tensor",
                   "read the top_k experts the router picks for each token", false});
    return out;
  }
  for (size_t k = 0; k < op.weights.size(); ++k) {
    const TensorInfo* w = op.weights[k];
    TensorDesc d;
    d.name = k == 0 ? "weight" : k == 1 ? "bias" : "w" + std::to_string(k);  // only linear has a second
    for (int64_t x : w->shape) d.shape.push_back(Json(x));
    d.dtype = dt(w->dtype);
    d.layout = op.kind == OpKind::Linear || op.kind == OpKind::Logits || op.kind == OpKind::Embed
                   ? "row-major [rows, cols] as stored (safetensors)"
                   : "contiguous";
    d.access = op.kind == OpKind::Embed ? "gather rows by token id" : "read";
    out.push_back(std::move(d));
  }
  return out;
}

TensorDesc kv_state(const Op& op, const Numerics& n, const std::string& which, const std::string& access) {
  return TensorDesc{which + "_cache", {Json("slots"), Json("max_seq"), Json(op.kv_heads * op.head_dim)}, dt(n.kv_cache),
                    "per layer: row (slot, position) holds kv_heads x head_dim", access, false};
}

TensorDesc i32_vector(const std::string& name, const std::string& dim, const std::string& access) {
  return TensorDesc{name, {Json(dim)}, "i32", "contiguous", access, false};
}

RegionInterface make_interface(const Graph& g, const Region& r, const Numerics& n) {
  RegionInterface itf;
  for (int v : r.inputs) itf.inputs.push_back(value_desc(g, v, n, "read"));
  for (int v : r.outputs) itf.outputs.push_back(value_desc(g, v, n, "write every element"));
  bool positions = false, slots = false;
  for (const RegionStep& s : r.steps) {
    const Op& op = g.ops.at(size_t(s.op));
    switch (op.kind) {
      case OpKind::Embed: itf.inputs.push_back(i32_vector("token_ids", "tokens", "read; each in [0, vocab)")); break;
      case OpKind::Rope: positions = true; break;
      case OpKind::Attention:
        positions = slots = true;
        if (s.role == StepRole::KvWrite) {
          itf.state.push_back(kv_state(op, n, "k", "write row (slot, position) of each token"));
          itf.state.push_back(kv_state(op, n, "v", "write row (slot, position) of each token"));
        } else {
          itf.state.push_back(kv_state(op, n, "k", "read rows [0, position] of the token's slot"));
          itf.state.push_back(kv_state(op, n, "v", "read rows [0, position] of the token's slot"));
        }
        break;
      case OpKind::Logits:
        itf.inputs.push_back(i32_vector("logit_rows", "batch", "read; rows of the step whose logits are wanted"));
        itf.outputs.push_back(TensorDesc{"argmax", {Json("batch")}, "i32", "contiguous",
                                         "write: greedy token per logit row (-1 when a logit is NaN/Inf)", true});
        break;
      default: break;
    }
  }
  if (positions) itf.inputs.push_back(i32_vector("positions", "tokens", "read: position of each token in its sequence"));
  if (slots) itf.inputs.push_back(i32_vector("slots", "tokens", "read: KV cache slot of each token's sequence"));
  return itf;
}

Json shape_json(const std::vector<Json>& s) {
  Json a = Json::array();
  for (const auto& x : s) a.push_back(x);
  return a;
}

}  // namespace

Json ShapePoint::to_json() const { return {{"batch", batch}, {"tokens", tokens}, {"context", context}}; }

ShapePoint decode_point(int64_t batch, int64_t context) { return ShapePoint{batch, batch, context}; }
ShapePoint prefill_point(int64_t tokens) { return ShapePoint{1, tokens, tokens}; }

Json TensorDesc::to_json() const {
  Json j = {{"name", name}, {"shape", shape_json(shape)}, {"dtype", dtype}, {"layout", layout}, {"access", access}};
  if (optional) j["optional"] = true;
  return j;
}

Json RegionInterface::to_json() const {
  auto arr = [](const std::vector<TensorDesc>& v) {
    Json a = Json::array();
    for (const auto& t : v) a.push_back(t.to_json());
    return a;
  };
  return {{"inputs", arr(inputs)}, {"outputs", arr(outputs)}, {"state", arr(state)}};
}

Roofline roofline(const RegionCost& c, const TargetFacts& t) {
  Roofline r;
  if (t.bandwidth_gbs <= 0 || t.matmul_tflops <= 0) {
    r.bound = "unknown";
    return r;
  }
  r.known = true;
  r.memory_us = c.bytes() / (t.bandwidth_gbs * 1e9) * 1e6;
  r.compute_us = c.flops / (t.matmul_tflops * 1e12) * 1e6;
  r.time_us = std::max(r.memory_us, r.compute_us);
  r.bound = r.memory_us >= r.compute_us ? "memory" : "compute";
  return r;
}

RegionCost region_cost(const Graph& g, const Region& r, Phase phase, const ShapePoint& p, const Numerics& n) {
  RegionCost c;
  for (const RegionStep& s : r.steps) {
    const StepCost sc = step_cost(g, s, phase, p, n);
    c.flops += sc.flops;
    c.weight_bytes += sc.weight_bytes;
    c.kv_bytes += sc.kv_bytes;
    const Op& op = g.ops.at(size_t(s.op));
    double moved = sc.weight_bytes + sc.kv_bytes;
    for (int v : step_reads(op, s.role)) moved += value_bytes(g, v, p, n);
    if (s.role != StepRole::KvWrite) moved += value_bytes(g, op.output, p, n);
    c.unfused_bytes += moved;
  }
  for (int v : r.inputs) c.activation_bytes += value_bytes(g, v, p, n);
  for (int v : r.outputs) c.activation_bytes += value_bytes(g, v, p, n);
  return c;
}

RegionSummary summarize_region(const Graph& g, const Partition& part, size_t class_index, Phase phase,
                               const ShapePoint& point, const TargetFacts& target, const Numerics& numerics) {
  const RegionClass& rc = part.classes.at(class_index);
  const Region& r = part.regions.at(size_t(rc.members.at(0)));
  RegionSummary s;
  s.kind = rc.kind;
  s.phase = phase;
  s.shape_key = rc.shape_key;
  s.signature = region_signature(rc.shape_key, phase);
  s.pattern = r.pattern;
  s.representative = rc.members.at(0);
  for (int m : rc.members) s.instances.push_back(part.regions.at(size_t(m)).name);
  s.numerics = numerics;
  s.point = point;
  std::set<std::string> wdt;
  for (const RegionStep& st : r.steps) {
    const Op& op = g.ops.at(size_t(st.op));
    StepSummary ss;
    ss.op = step_op_name(g, st);
    ss.name = local_name(op.name);
    for (int v : step_reads(op, st.role)) ss.inputs.push_back(value_desc(g, v, numerics, "read"));
    if (st.role == StepRole::KvWrite)
      ss.output = kv_state(op, numerics, "kv", "write rows");
    else
      ss.output = value_desc(g, op.output, numerics, "write");
    if (st.role != StepRole::Attend) ss.weights = step_weights(op);
    for (const TensorInfo* w : op.weights) wdt.insert(dt(w->dtype));
    Json attrs = Json::object();
    if (op.kind == OpKind::RmsNorm) {
      attrs["groups"] = op.groups;
      attrs["eps"] = op.eps;
    }
    if (op.kind == OpKind::Rope || op.kind == OpKind::Attention) {
      attrs["heads"] = op.heads;
      attrs["head_dim"] = op.head_dim;
    }
    if (op.kind == OpKind::Attention) {
      attrs["kv_heads"] = op.kv_heads;
      attrs["causal"] = true;
      if (op.window > 0) attrs["window"] = op.window;
    }
    if (op.kind == OpKind::MoeMlp) {
      attrs["experts"] = op.experts;
      attrs["top_k"] = op.top_k;
      attrs["expert_intermediate"] = op.expert_inter;
      attrs["renormalise"] = op.norm_topk;
    }
    ss.attrs = attrs;
    ss.flops = step_cost(g, st, phase, point, numerics).flops;
    s.steps.push_back(std::move(ss));
  }
  if (wdt.empty()) s.weight_dtype = "none";
  else if (wdt.size() == 1) s.weight_dtype = *wdt.begin();
  else s.weight_dtype = "mixed";
  s.interface = make_interface(g, r, numerics);
  s.cost = region_cost(g, r, phase, point, numerics);
  s.target = target;
  s.roof = roofline(s.cost, target);
  return s;
}

Json RegionSummary::to_json() const {
  Json steps_j = Json::array();
  for (const auto& st : steps) {
    Json in = Json::array(), w = Json::array();
    for (const auto& t : st.inputs) in.push_back(t.to_json());
    for (const auto& t : st.weights) w.push_back(t.to_json());
    steps_j.push_back({{"op", st.op}, {"name", st.name}, {"inputs", in}, {"output", st.output.to_json()},
                       {"weights", w}, {"attrs", st.attrs}, {"flops", st.flops}});
  }
  Json roof_j = {{"bound", roof.bound}};
  if (roof.known) {
    roof_j["time_us"] = roof.time_us;
    roof_j["memory_us"] = roof.memory_us;
    roof_j["compute_us"] = roof.compute_us;
  } else {
    roof_j["time_us"] = nullptr;
  }
  return {
      {"region", std::string(region_kind_name(kind))},
      {"phase", std::string(phase_name(phase))},
      {"signature", signature},
      {"shape_key", shape_key},
      {"pattern", pattern},
      {"instances", instances.size()},
      {"instance_names", instances},
      {"dims",
       {{"tokens", phase == Phase::Decode ? "rows of each activation: one token per sequence (= batch)"
                                          : "rows of each activation: the prompt tokens of one sequence"},
        {"batch", "sequences in the step; one logit row each"},
        {"context", "cache positions a sequence attends over (prefill: = tokens)"},
        {"slots", "KV cache slots (executor limit)"},
        {"max_seq", "positions per slot (executor limit)"}}},
      {"dtypes",
       {{"weights", weight_dtype},
        {"activations", std::string(dtype_user_name(numerics.activations))},
        {"kv_cache", std::string(dtype_user_name(numerics.kv_cache))},
        {"accumulate", std::string(dtype_user_name(numerics.accumulate))},
        {"logits", "f32"}}},
      {"steps", steps_j},
      {"interface", interface.to_json()},
      {"point", point.to_json()},
      {"flops", cost.flops},
      {"bytes",
       {{"total", cost.bytes()},
        {"weights", cost.weight_bytes},
        {"activations", cost.activation_bytes},
        {"kv_cache", cost.kv_bytes},
        {"unfused", cost.unfused_bytes}}},
      {"arithmetic_intensity", cost.intensity()},
      {"roofline", roof_j},
      {"target", target.to_json()},
  };
}

}  // namespace ac
