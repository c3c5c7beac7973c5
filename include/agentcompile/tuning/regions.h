#pragma once
// Regions: the units of specialisation. The decoder graph is cut into embed, then per layer
// attn_in (norm + q/k/v projections (+ q/k norm) + rope + KV write), attention (reads the KV
// cache), attn_out (o_proj + residual), mlp_in (norm + gate/up + SwiGLU; in a sparse layer norm +
// the MoeMlp op), mlp_out (down_proj + residual; in a sparse layer the residual alone), and
// finally head (final norm + lm_head, optionally argmax). The graph's Attention op both appends
// to the KV cache and attends; its two halves belong to different regions (steps with roles
// KvWrite and Attend).
//
// Regions with the same op pattern, shapes and dtypes form a class; a class in one phase (decode
// or prefill) has one signature, so identical regions across layers and across models share
// their summary, candidate space, advice and (issue 7) measurements.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agentcompile/core/dtype.h"
#include "agentcompile/ir/graph.h"

namespace ac {

enum class RegionKind : uint8_t { Embed, AttnIn, Attention, AttnOut, MlpIn, MlpOut, Head };
std::string_view region_kind_name(RegionKind k);  // "embed", "attn_in", ...
// The kinds in graph order; a kernel family names the region it implements by these names.
const std::vector<RegionKind>& all_region_kinds();
bool parse_region_kind(std::string_view name, RegionKind* out);

enum class Phase : uint8_t { Decode, Prefill };
std::string_view phase_name(Phase p);  // "decode", "prefill"

// Which part of a graph op a region step runs (only Attention is split).
enum class StepRole : uint8_t { Whole, KvWrite, Attend };

struct RegionStep {
  int op = -1;  // index into Graph::ops
  StepRole role = StepRole::Whole;
};

// The numerics an executor uses between kernels; part of every signature, since a candidate
// must read and write exactly these types.
struct Numerics {
  DType activations = DType::F32;
  DType kv_cache = DType::F32;
  DType accumulate = DType::F32;
};

struct Region {
  RegionKind kind = RegionKind::Embed;
  int layer = -1;                 // -1 outside the decoder layers
  std::string name;               // "layers.3.attn_in", "embed", "head"
  std::vector<RegionStep> steps;  // in execution order
  std::vector<int> inputs;        // value ids read from outside the region, first use order
  std::vector<int> outputs;       // value ids read after the region (or the graph output)
  std::string pattern;            // op pattern: "rms_norm linear linear linear rope rope kv_write"
  std::string shape_key;          // canonical text of pattern, shapes and dtypes (no phase)
};

// Regions with one shape_key.
struct RegionClass {
  RegionKind kind = RegionKind::Embed;
  std::string shape_key;
  std::vector<int> members;  // indices into Partition::regions, graph order
};

struct Partition {
  std::vector<Region> regions;      // graph order; every op step appears in exactly one region
  std::vector<RegionClass> classes;  // first-appearance order
};

// Cuts the graph; throws Internal when the graph does not follow the decoder structure the
// builder makes (an op the region kind does not allow, a region reading a value it cannot see).
Partition partition_graph(const Graph& g, const Numerics& numerics = {});

// sha256 over "<phase>|<shape_key>", first 16 hex digits: stable across layers, runs and models.
std::string region_signature(const std::string& shape_key, Phase phase);

// Short op name of a step: "embed", "rms_norm", "linear", "rope", "kv_write", "attention",
// "swiglu", "add", "logits", "moe_mlp".
std::string step_op_name(const Graph& g, const RegionStep& s);

}  // namespace ac
