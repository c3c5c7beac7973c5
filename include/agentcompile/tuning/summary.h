#pragma once
// RegionSummary: what the compiler (and an advisor) knows about one region class in one phase:
// its ops with symbolic shapes, dtypes, the interface a candidate must honour, FLOPs and bytes
// at a shape point, arithmetic intensity and the roofline time on the target. The JSON form is
// documented in docs/compiler.md ("RegionSummary").
//
// Symbolic dimensions: `tokens` (rows of every activation in the step), `batch` (sequences in the
// step; one logit row each), `context` (cache positions a sequence attends over), plus the
// executor limits `slots` and `max_seq` for the KV cache. Decode: tokens = batch. Prefill: one
// sequence, batch = 1, context = tokens (a fresh prompt).
#include <cstdint>
#include <string>
#include <vector>

#include "agentcompile/tuning/regions.h"
#include "agentcompile/tuning/target.h"
#include "agentcompile/core/json.h"

namespace ac {

struct ShapePoint {
  int64_t batch = 1;
  int64_t tokens = 1;
  int64_t context = 256;
  Json to_json() const;
};
ShapePoint decode_point(int64_t batch, int64_t context);  // tokens = batch
ShapePoint prefill_point(int64_t tokens);                  // batch 1, context = tokens

// A tensor crossing the region boundary (or a weight): symbolic shape, dtype, layout, access.
struct TensorDesc {
  std::string name;
  std::vector<Json> shape;  // each entry a symbol ("tokens") or a number
  std::string dtype;
  std::string layout;
  std::string access;       // "read", "write", "append rows", "read rows [0, position]"
  bool optional = false;
  Json to_json() const;
};

struct RegionInterface {
  std::vector<TensorDesc> inputs, outputs, state;
  Json to_json() const;
};

// Counted once per region at a shape point: weights read, boundary activations read/written,
// KV cache rows read/written. `unfused_bytes` is what an op-by-op route moves (every step reads
// its inputs and writes its output), the gap a fused candidate can close.
struct RegionCost {
  double flops = 0;
  double weight_bytes = 0;
  double activation_bytes = 0;
  double kv_bytes = 0;
  double unfused_bytes = 0;
  double bytes() const { return weight_bytes + activation_bytes + kv_bytes; }
  double intensity() const { return bytes() > 0 ? flops / bytes() : 0.0; }
};

struct Roofline {
  bool known = false;    // false when the target's ceilings are unknown
  double memory_us = 0, compute_us = 0, time_us = 0;
  std::string bound;     // "memory" | "compute" | "unknown"
};
Roofline roofline(const RegionCost& c, const TargetFacts& t);

struct StepSummary {
  std::string op;    // step_op_name
  std::string name;  // graph op name without the layer prefix: "q_proj"
  std::vector<TensorDesc> inputs, weights;
  TensorDesc output;
  Json attrs;        // groups, heads, kv_heads, head_dim, eps
  double flops = 0;
};

struct RegionSummary {
  RegionKind kind = RegionKind::Embed;
  Phase phase = Phase::Decode;
  std::string signature;  // region_signature(shape_key, phase)
  std::string shape_key, pattern;
  std::vector<std::string> instances;  // region names sharing the signature
  int representative = -1;             // index into Partition::regions
  Numerics numerics;
  std::string weight_dtype;            // of the region's weights ("none" for attention)
  std::vector<StepSummary> steps;
  RegionInterface interface;
  ShapePoint point;
  RegionCost cost;
  Roofline roof;
  TargetFacts target;
  Json to_json() const;
};

RegionCost region_cost(const Graph& g, const Region& r, Phase phase, const ShapePoint& p, const Numerics& n);

// Summary of class `class_index` of the partition.
RegionSummary summarize_region(const Graph& g, const Partition& part, size_t class_index, Phase phase,
                               const ShapePoint& point, const TargetFacts& target, const Numerics& numerics = {});

}  // namespace ac
