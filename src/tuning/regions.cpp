// Graph -> regions: a small state machine over the builder's op order (src/ir/builder.cpp's layer
// layout), then dataflow to find each region's boundary values, then classes by shape key.
#include "agentcompile/tuning/regions.h"

#include <algorithm>
#include <map>
#include <set>

#include "agentcompile/core/error.h"
#include "agentcompile/core/hash.h"

namespace ac {

namespace {

const std::vector<RegionKind> kKinds = {RegionKind::Embed, RegionKind::AttnIn, RegionKind::Attention,
                                        RegionKind::AttnOut, RegionKind::MlpIn,  RegionKind::MlpOut,
                                        RegionKind::Head};

std::string dt(DType t) { return std::string(dtype_user_name(t)); }

std::string weight_dt(const Op& op, size_t k) {
  return k < op.weights.size() ? dt(op.weights[k]->dtype) : std::string("none");
}

// Values a step reads and writes (KvWrite writes the cache, not a value).
std::vector<int> step_reads(const Op& op, StepRole r) {
  switch (r) {
    case StepRole::KvWrite: return {op.inputs.at(1), op.inputs.at(2)};
    case StepRole::Attend: return {op.inputs.at(0)};
    case StepRole::Whole: break;
  }
  return op.inputs;
}
int step_writes(const Op& op, StepRole r) { return r == StepRole::KvWrite ? -1 : op.output; }

std::string step_key(const Graph& g, const RegionStep& s) {
  const Op& op = g.ops.at(size_t(s.op));
  const int64_t out_w = g.value(op.output).width;
  auto n = [](int64_t v) { return std::to_string(v); };
  switch (op.kind) {
    case OpKind::Embed: return "embed[vocab=" + n(op.weights.at(0)->shape.at(0)) + ",hidden=" + n(out_w) + ",w=" + weight_dt(op, 0) + "]";
    case OpKind::RmsNorm:
      return "rms_norm[width=" + n(out_w) + ",groups=" + n(op.groups) + ",w=" + weight_dt(op, 0) + "]";
    case OpKind::Linear:
      return "linear[in=" + n(g.value(op.inputs.at(0)).width) + ",out=" + n(out_w) + ",w=" + weight_dt(op, 0) +
             ",bias=" + weight_dt(op, 1) + "]";
    case OpKind::Rope: return "rope[heads=" + n(op.heads) + ",head_dim=" + n(op.head_dim) + "]";
    case OpKind::Attention:
      if (s.role == StepRole::KvWrite) return "kv_write[kv_heads=" + n(op.kv_heads) + ",head_dim=" + n(op.head_dim) + "]";
      return "attention[heads=" + n(op.heads) + ",kv_heads=" + n(op.kv_heads) + ",head_dim=" + n(op.head_dim) +
             (op.window > 0 ? ",window=" + n(op.window) : "") + "]";
    case OpKind::MoeMlp:
      return "moe_mlp[hidden=" + n(out_w) + ",experts=" + n(op.experts) + ",top_k=" + n(op.top_k) + ",inter=" +
             n(op.expert_inter) + ",norm=" + n(op.norm_topk) + ",w=" + weight_dt(op, 0) + "]";
    case OpKind::SwiGlu: return "swiglu[width=" + n(out_w) + "]";
    case OpKind::Add: return "add[width=" + n(out_w) + "]";
    case OpKind::Logits:
      return "logits[in=" + n(g.value(op.inputs.at(0)).width) + ",out=" + n(out_w) + ",w=" + weight_dt(op, 0) + "]";
  }
  return "?";
}

// The op kinds a region kind may hold, and the op kinds that end it. A sparse layer's mlp_in is
// the norm and the MoeMlp op, its mlp_out the residual add alone.
struct KindRule {
  RegionKind kind;
  std::set<OpKind> allowed;
  std::set<OpKind> closers;
};

const KindRule kLayerRules[] = {
    {RegionKind::AttnIn, {OpKind::RmsNorm, OpKind::Linear, OpKind::Rope, OpKind::Attention}, {OpKind::Attention}},
    {RegionKind::AttnOut, {OpKind::Linear, OpKind::Add}, {OpKind::Add}},
    {RegionKind::MlpIn,
     {OpKind::RmsNorm, OpKind::Linear, OpKind::SwiGlu, OpKind::MoeMlp},
     {OpKind::SwiGlu, OpKind::MoeMlp}},
    {RegionKind::MlpOut, {OpKind::Linear, OpKind::Add}, {OpKind::Add}},
};

class Cutter {
 public:
  explicit Cutter(const Graph& g) : g_(g) {}

  std::vector<Region> cut() {
    take_single(RegionKind::Embed, OpKind::Embed, "embed");
    for (int64_t l = 0; l < g_.config.num_layers; ++l)
      for (const KindRule& r : kLayerRules) take_layer_region(r, int(l));
    // head: final norm + logits
    Region head = start(RegionKind::Head, -1, "head");
    expect_op(OpKind::RmsNorm, -1, "head");
    head.steps.push_back({int(next_++), StepRole::Whole});
    expect_op(OpKind::Logits, -1, "head");
    head.steps.push_back({int(next_++), StepRole::Whole});
    out_.push_back(std::move(head));
    if (next_ != g_.ops.size())
      throw_internal("partition", "op " + g_.ops[next_].name + " is outside every region");
    return std::move(out_);
  }

 private:
  Region start(RegionKind k, int layer, const std::string& name) {
    Region r;
    r.kind = k;
    r.layer = layer;
    r.name = name;
    return r;
  }

  void expect_op(OpKind k, int layer, const std::string& region) {
    if (next_ >= g_.ops.size()) throw_internal("partition", region + ": the graph ends early");
    const Op& op = g_.ops[next_];
    if (op.kind != k || op.layer != layer)
      throw_internal("partition", region + ": unexpected op " + op.name + " (" + std::string(op_kind_name(op.kind)) + ")");
  }

  void take_single(RegionKind k, OpKind op, const std::string& name) {
    Region r = start(k, -1, name);
    expect_op(op, -1, name);
    r.steps.push_back({int(next_++), StepRole::Whole});
    out_.push_back(std::move(r));
  }

  void take_layer_region(const KindRule& rule, int layer) {
    const std::string name = "layers." + std::to_string(layer) + "." + std::string(region_kind_name(rule.kind));
    Region r = start(rule.kind, layer, name);
    for (;;) {
      if (next_ >= g_.ops.size()) throw_internal("partition", name + ": the graph ends early");
      const Op& op = g_.ops[next_];
      if (op.layer != layer || !rule.allowed.count(op.kind))
        throw_internal("partition", name + ": unexpected op " + op.name + " (" + std::string(op_kind_name(op.kind)) + ")");
      const int idx = int(next_++);
      if (op.kind == OpKind::Attention) {
        // KV append closes attn_in; the attending half is the attention region.
        r.steps.push_back({idx, StepRole::KvWrite});
        out_.push_back(std::move(r));
        Region a = start(RegionKind::Attention, layer, "layers." + std::to_string(layer) + ".attention");
        a.steps.push_back({idx, StepRole::Attend});
        out_.push_back(std::move(a));
        return;
      }
      r.steps.push_back({idx, StepRole::Whole});
      if (rule.closers.count(op.kind)) break;
    }
    out_.push_back(std::move(r));
  }

  const Graph& g_;
  size_t next_ = 0;
  std::vector<Region> out_;
};

}  // namespace

std::string_view region_kind_name(RegionKind k) {
  switch (k) {
    case RegionKind::Embed: return "embed";
    case RegionKind::AttnIn: return "attn_in";
    case RegionKind::Attention: return "attention";
    case RegionKind::AttnOut: return "attn_out";
    case RegionKind::MlpIn: return "mlp_in";
    case RegionKind::MlpOut: return "mlp_out";
    case RegionKind::Head: return "head";
  }
  return "?";
}

const std::vector<RegionKind>& all_region_kinds() { return kKinds; }

bool parse_region_kind(std::string_view name, RegionKind* out) {
  for (RegionKind k : kKinds)
    if (region_kind_name(k) == name) {
      *out = k;
      return true;
    }
  return false;
}

std::string_view phase_name(Phase p) { return p == Phase::Decode ? "decode" : "prefill"; }

std::string step_op_name(const Graph& g, const RegionStep& s) {
  const Op& op = g.ops.at(size_t(s.op));
  switch (op.kind) {
    case OpKind::Attention: return s.role == StepRole::KvWrite ? "kv_write" : "attention";
    case OpKind::RmsNorm: return "rms_norm";
    case OpKind::SwiGlu: return "swiglu";
    default: return std::string(op_kind_name(op.kind));
  }
}

std::string region_signature(const std::string& shape_key, Phase phase) {
  return sha256_hex(std::string(phase_name(phase)) + "|" + shape_key).substr(0, 16);
}

Partition partition_graph(const Graph& g, const Numerics& numerics) {
  Partition p;
  p.regions = Cutter(g).cut();

  // Which region writes each value, then every region's boundary.
  std::vector<int> writer(g.values.size(), -1);
  for (size_t ri = 0; ri < p.regions.size(); ++ri)
    for (const RegionStep& s : p.regions[ri].steps)
      if (int v = step_writes(g.ops[size_t(s.op)], s.role); v >= 0) writer[size_t(v)] = int(ri);
  std::vector<std::set<int>> read_outside(p.regions.size());
  for (size_t ri = 0; ri < p.regions.size(); ++ri) {
    Region& r = p.regions[ri];
    for (const RegionStep& s : r.steps)
      for (int v : step_reads(g.ops[size_t(s.op)], s.role)) {
        const int w = writer.at(size_t(v));
        if (w < 0 || w > int(ri)) throw_internal("partition", r.name + " reads " + g.value(v).name + " before it is written");
        if (w == int(ri)) continue;
        if (std::find(r.inputs.begin(), r.inputs.end(), v) == r.inputs.end()) r.inputs.push_back(v);
        read_outside[size_t(w)].insert(v);
      }
  }
  if (g.logits >= 0) read_outside[size_t(writer.at(size_t(g.logits)))].insert(g.logits);
  for (size_t ri = 0; ri < p.regions.size(); ++ri) {
    Region& r = p.regions[ri];
    r.outputs.assign(read_outside[ri].begin(), read_outside[ri].end());
    std::string pattern, key = std::string(region_kind_name(r.kind)) + ":";
    for (size_t i = 0; i < r.steps.size(); ++i) {
      pattern += (i ? " " : "") + step_op_name(g, r.steps[i]);
      key += (i ? " " : "") + step_key(g, r.steps[i]);
    }
    key += "|act=" + dt(numerics.activations) + ",kv=" + dt(numerics.kv_cache) + ",acc=" + dt(numerics.accumulate);
    r.pattern = std::move(pattern);
    r.shape_key = std::move(key);
  }

  std::map<std::string, size_t> class_of;
  for (size_t ri = 0; ri < p.regions.size(); ++ri) {
    const Region& r = p.regions[ri];
    auto [it, fresh] = class_of.emplace(r.shape_key, p.classes.size());
    if (fresh) p.classes.push_back({r.kind, r.shape_key, {}});
    p.classes[it->second].members.push_back(int(ri));
  }
  return p;
}

}  // namespace ac
