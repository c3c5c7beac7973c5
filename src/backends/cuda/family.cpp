#include "backends/cuda/family.h"

#include <algorithm>

#include "agentcompile/core/error.h"

namespace ac::cuda {

namespace {

std::string type_name(DType t) {
  switch (t) {
    case DType::BF16: return "ac_bf16";
    case DType::F16: return "ac_f16";
    case DType::F32: return "float";
    default: throw_internal("kernel family", "unsupported type parameter dtype");
  }
}

const std::vector<DType> kWeightTypes = {DType::BF16, DType::F16, DType::F32};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

Family ref(const std::string& op, const std::string& header, const std::string& params_struct, const std::string& fn,
           std::vector<std::string> types, std::vector<ParamDomain> extra = {}, std::string description = "") {
  Family f;
  f.op = op;
  f.name = "ref";
  f.header = header;
  f.params_struct = params_struct;
  f.device_fn = fn;
  f.params = {{"BLOCK", {128, 256}}};
  for (auto& p : extra) f.params.push_back(std::move(p));
  f.type_params = std::move(types);
  f.description = description.empty() ? "reference: simple, any shape, f32 accumulation" : std::move(description);
  return f;
}

std::vector<Family> build_families() {
  std::vector<Family> v;
  v.push_back(ref("embed", "embed/reference.cuh", "EmbedParams", "embed_ref", {"W"}));
  v.push_back(ref("rms_norm", "rms_norm/reference.cuh", "RmsNormParams", "rms_norm_ref", {"W"}));
  v.push_back(ref("linear", "linear/reference.cuh", "LinearParams", "linear_ref", {"W"}, {},
                  "reference: one warp per output, any shape, f32 accumulation"));
  v.push_back(ref("rope", "rope/reference.cuh", "RopeParams", "rope_ref", {}));
  v.push_back(ref("kv_write", "attention/reference.cuh", "KvWriteParams", "kv_write_ref", {}));
  // MAXD * BLOCK must cover head_dim: MAXD in {1, 2, 4} handles head_dim up to 4 * BLOCK.
  v.push_back(ref("attention", "attention/reference.cuh", "AttentionParams", "attention_ref", {}, {{"MAXD", {1, 2, 4}}},
                  "reference: one block per (head, token), online softmax over the KV cache"));
  v.push_back(ref("swiglu", "elementwise/reference.cuh", "ElementwiseParams", "swiglu_ref", {}));
  v.push_back(ref("add", "elementwise/reference.cuh", "ElementwiseParams", "add_ref", {}));
  v.push_back(ref("cast", "elementwise/reference.cuh", "CastParams", "cast_ref", {"OUT"}));
  v.push_back(ref("bias", "elementwise/reference.cuh", "BiasParams", "bias_ref", {"W"}));
  v.push_back(ref("gather_rows", "elementwise/reference.cuh", "GatherRowsParams", "gather_rows_ref", {}));
  v.push_back(ref("argmax", "sampling/argmax.cuh", "ArgmaxParams", "argmax_ref", {}));
  return v;
}

}  // namespace

const std::vector<Family>& families() {
  static const std::vector<Family> f = build_families();
  return f;
}

const Family& find_family(const std::string& op, const std::string& name) {
  for (const auto& f : families())
    if (f.op == op && f.name == name) return f;
  throw_internal("kernel family", "no family " + op + "." + name);
}

std::string arch_constraint(const Family& f, const std::string& arch) {
  if (f.needs_sm90a && arch != "sm_90a") return "needs sm_90a (wgmma/TMA)";
  return "";
}

Variant make_variant(const Family& f, std::map<std::string, int> values, std::vector<DType> types,
                     const std::string& arch) {
  Variant v{&f, std::move(values), std::move(types), arch};
  if (v.types.size() != f.type_params.size()) throw_internal(f.op + "." + f.name, "wrong number of type parameters");
  for (const auto& d : f.params) {
    auto it = v.values.find(d.name);
    if (it == v.values.end()) throw_internal(f.op + "." + f.name, "parameter " + d.name + " not bound");
    if (std::find(d.values.begin(), d.values.end(), it->second) == d.values.end())
      throw_internal(f.op + "." + f.name, d.name + "=" + std::to_string(it->second) + " is outside its domain");
  }
  if (v.values.size() != f.params.size()) throw_internal(f.op + "." + f.name, "unknown parameter bound");
  if (std::string why = arch_constraint(f, arch); !why.empty()) throw_internal(v.name(), why);
  if (f.constraint)
    if (std::string why = f.constraint(v.values); !why.empty()) throw_internal(v.name(), why);
  return v;
}

int Variant::param(const std::string& n) const {
  auto it = values.find(n);
  if (it == values.end()) throw_internal(name(), "no parameter " + n);
  return it->second;
}

int Variant::threads() const { return param(family->threads_param); }

std::string Variant::name() const {
  std::string s = family->op + "__" + family->name;
  for (size_t i = 0; i < types.size(); ++i)
    s += "__" + lower(family->type_params[i]) + "_" + std::string(dtype_user_name(types[i]));
  for (const auto& d : family->params) s += "__" + lower(d.name) + std::to_string(values.at(d.name));
  std::string a = arch;
  a.erase(std::remove(a.begin(), a.end(), '_'), a.end());
  return s + "__" + a;
}

std::string Variant::source() const {
  const Family& f = *family;
  std::string s = "// agentcompile kernel variant " + name() + " (generated: bindings only)\n";
  s += "#include \"" + f.header + "\"\n";
  std::string targs;
  for (const auto& d : f.params) {
    s += "constexpr int " + d.name + " = " + std::to_string(values.at(d.name)) + ";\n";
    targs += (targs.empty() ? "" : ", ") + d.name;
  }
  for (size_t i = 0; i < types.size(); ++i) {
    s += "using " + f.type_params[i] + " = " + type_name(types[i]) + ";\n";
    targs += (targs.empty() ? "" : ", ") + f.type_params[i];
  }
  s += "extern \"C\" __global__ void __launch_bounds__(" + f.threads_param + ") " + name() + "(const " +
       f.params_struct + " p) {\n  " + f.device_fn + "<" + targs + ">(p);\n}\n";
  return s;
}

size_t space_size(const Family& f) {
  size_t n = 1;
  for (const auto& d : f.params) n *= d.values.size();
  for (size_t i = 0; i < f.type_params.size(); ++i) n *= kWeightTypes.size();
  return n;
}

std::vector<Variant> sample_variants(const Family& f, const std::string& arch, size_t max) {
  std::vector<Variant> out;
  if (!arch_constraint(f, arch).empty()) return out;
  // Enumerate the cross product in a fixed order, then keep an evenly spaced subset.
  std::vector<std::pair<std::map<std::string, int>, std::vector<DType>>> all;
  size_t type_combos = 1;
  for (size_t i = 0; i < f.type_params.size(); ++i) type_combos *= kWeightTypes.size();
  size_t param_combos = 1;
  for (const auto& d : f.params) param_combos *= d.values.size();
  for (size_t tc = 0; tc < type_combos; ++tc) {
    std::vector<DType> types;
    size_t x = tc;
    for (size_t i = 0; i < f.type_params.size(); ++i) {
      types.push_back(kWeightTypes[x % kWeightTypes.size()]);
      x /= kWeightTypes.size();
    }
    for (size_t pc = 0; pc < param_combos; ++pc) {
      std::map<std::string, int> vals;
      size_t y = pc;
      for (const auto& d : f.params) {
        vals[d.name] = d.values[y % d.values.size()];
        y /= d.values.size();
      }
      if (f.constraint && !f.constraint(vals).empty()) continue;
      all.emplace_back(std::move(vals), types);
    }
  }
  const size_t n = std::min(max, all.size());
  for (size_t i = 0; i < n; ++i) {
    auto& [vals, types] = all[i * all.size() / n];
    out.push_back(make_variant(f, vals, types, arch));
  }
  return out;
}

}  // namespace ac::cuda
