#include "agentcompile/ir/graph.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace ac {

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Embed: return "embed";
    case OpKind::RmsNorm: return "rms_norm";
    case OpKind::Linear: return "linear";
    case OpKind::Rope: return "rope";
    case OpKind::Attention: return "attention";
    case OpKind::SwiGlu: return "swiglu";
    case OpKind::Add: return "add";
    case OpKind::Logits: return "logits";
    case OpKind::MoeMlp: return "moe_mlp";
  }
  return "?";
}

std::vector<int> Graph::last_uses() const {
  std::vector<int> last(values.size(), -1);
  for (size_t i = 0; i < ops.size(); ++i)
    for (int in : ops[i].inputs) last[static_cast<size_t>(in)] = static_cast<int>(i);
  if (logits >= 0) last[static_cast<size_t>(logits)] = static_cast<int>(ops.size());
  return last;
}

std::string Graph::to_string() const {
  std::string out;
  char buf[256];
  for (const Op& op : ops) {
    std::string ins;
    for (int in : op.inputs) ins += (ins.empty() ? "%" : ", %") + std::to_string(in);
    if (op.kind == OpKind::Embed) ins = "tokens";
    std::snprintf(buf, sizeof buf, "%%%-4d = %-9s (%s)", op.output, std::string(op_kind_name(op.kind)).c_str(), ins.c_str());
    out += buf;
    out += std::string(std::max<size_t>(1, 36 - std::min<size_t>(36, std::strlen(buf))), ' ');
    out += op.name + " [N, " + std::to_string(value(op.output).width) + "]";
    if (op.kind == OpKind::MoeMlp) {  // hundreds of expert tensors: the router and a summary
      const TensorInfo* r = op.weights.at(0);
      out += "  " + r->name + " " + r->shape_str() + " " + std::string(dtype_safetensors_name(r->dtype)) + "  experts=" +
             std::to_string(op.experts) + " top_k=" + std::to_string(op.top_k) + " expert_intermediate=" +
             std::to_string(op.expert_inter) + (op.norm_topk ? " renormalised" : "");
    } else {
      for (const TensorInfo* w : op.weights)
        out += "  " + w->name + " " + w->shape_str() + " " + std::string(dtype_safetensors_name(w->dtype));
    }
    if (op.kind == OpKind::RmsNorm && op.groups > 1) out += "  groups=" + std::to_string(op.groups);
    if (op.kind == OpKind::Attention)
      out += "  heads=" + std::to_string(op.heads) + " kv_heads=" + std::to_string(op.kv_heads) +
             " head_dim=" + std::to_string(op.head_dim) + (op.window > 0 ? " window=" + std::to_string(op.window) : "");
    out += "\n";
  }
  return out;
}

}  // namespace ac
