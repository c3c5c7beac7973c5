// The fields of a saved bench report that `bench report` and `--compare` read, each checked for
// its type when the file is loaded: a mistyped field is a one-line error naming it, never an
// exception from deep inside the renderer or a silent "—" in the table.
#include "bench/report_check.h"

#include "agentcompile/core/error.h"

namespace ac::bench {

namespace {

enum class Kind { String, Number, Bool, Object, Array };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::String: return "a string";
    case Kind::Number: return "a number";
    case Kind::Bool: return "true or false";
    case Kind::Object: return "an object";
    case Kind::Array: return "an array";
  }
  return "?";
}

bool is(const Json& v, Kind k) {
  switch (k) {
    case Kind::String: return v.is_string();
    case Kind::Number: return v.is_number();
    case Kind::Bool: return v.is_boolean();
    case Kind::Object: return v.is_object();
    case Kind::Array: return v.is_array();
  }
  return false;
}

// "r.json: results[2]" + "peers" -> "r.json: results[2].peers"; the root is "r.json:".
std::string join(const std::string& where, const std::string& name) {
  return where.back() == ':' ? where + " " + name : where + "." + name;
}

struct Field {
  const char* name;
  Kind kind;
};

// Each listed field, when present and not null, must be of its kind.
void check_fields(const Json& obj, const std::string& where, std::initializer_list<Field> fields) {
  for (const Field& f : fields) {
    auto it = obj.find(f.name);
    if (it == obj.end() || it->is_null() || is(*it, f.kind)) continue;
    throw_input(join(where, f.name), std::string("expected ") + kind_name(f.kind) + ", found " + it->type_name());
  }
}

// obj[name]: absent, null or an object (checked); returns it, or nullptr when absent or null.
const Json* object_member(const Json& obj, const std::string& where, const char* name) {
  check_fields(obj, where, {{name, Kind::Object}});
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

void check_e2e_row(const Json& row, const std::string& at) {
  check_fields(row, at, {{"model", Kind::String}, {"workload", Kind::String}, {"backend", Kind::String},
                         {"route", Kind::String}, {"counted", Kind::Bool}, {"batch", Kind::Number},
                         {"prefill_ms", Kind::Number}, {"decode_ms_per_token", Kind::Number},
                         {"tokens_per_s", Kind::Number}, {"pct_of_floor", Kind::Number},
                         {"pct_of_read_floor", Kind::Number}, {"prefill_tflops", Kind::Number},
                         {"prefill_pct_of_gemm", Kind::Number}, {"experts_per_sparse_layer", Kind::Number},
                         {"error", Kind::String}});
  if (const Json* v = object_member(row, at, "validation"))
    check_fields(*v, join(at, "validation"), {{"status", Kind::String}, {"equal", Kind::Number}, {"compared", Kind::Number},
                                          {"ties", Kind::Number}, {"detail", Kind::String}});
  if (const Json* peers = object_member(row, at, "peers"))
    for (const auto& [name, p] : peers->items()) {
      const std::string pat = join(at, "peers." + name);
      if (!p.is_object()) throw_input(pat, std::string("expected an object, found ") + p.type_name());
      check_fields(p, pat, {{"speedup", Kind::Number}, {"prefill_ms", Kind::Number},
                            {"decode_ms_per_token", Kind::Number}, {"tokens_per_s", Kind::Number}});
    }
}

void check_module_row(const Json& row, const std::string& at) {
  check_fields(row, at, {{"model", Kind::String}, {"phase", Kind::String}, {"backend", Kind::String},
                         {"route", Kind::String}, {"tokens", Kind::Number}, {"context", Kind::Number},
                         {"layer_ms", Kind::Number}, {"GBps", Kind::Number}, {"pct_of_copy", Kind::Number},
                         {"TFLOPs", Kind::Number}, {"pct_of_gemm", Kind::Number}, {"note", Kind::String}});
}

void check_kernels_row(const Json& row, const std::string& at) {
  check_fields(row, at, {{"model", Kind::String}, {"region", Kind::String}, {"batch", Kind::Number},
                         {"shape", Kind::String}});
  if (const Json* routes = object_member(row, at, "routes"))
    for (const auto& [name, rt] : routes->items()) {
      const std::string rat = join(at, "routes." + name);
      if (!rt.is_object()) throw_input(rat, std::string("expected an object, found ") + rt.type_name());
      check_fields(rt, rat, {{"kernel", Kind::String}, {"us", Kind::Number}, {"GBps", Kind::Number},
                             {"pct_of_copy", Kind::Number}, {"pct_of_read", Kind::Number}, {"TFLOPs", Kind::Number}});
    }
}

}  // namespace

void check_report_fields(const Json& r, const std::string& path) {
  const std::string subject = path + ":";
  check_fields(r, subject, {{"created", Kind::String}, {"command", Kind::String}, {"method", Kind::String}});
  if (const Json* env = object_member(r, subject, "environment")) {
    const std::string at = join(subject, "environment");
    check_fields(*env, at, {{"host", Kind::String}, {"engine_version", Kind::String}, {"engine_commit", Kind::String}});
    if (const Json* gpu = object_member(*env, at, "gpu"))
      check_fields(*gpu, join(at, "gpu"), {{"name", Kind::String}, {"arch", Kind::String}});
  }
  if (const Json* c = object_member(r, subject, "ceilings"))
    check_fields(*c, join(subject, "ceilings"), {{"copy_GBps", Kind::Number}, {"read_GBps", Kind::Number},
                                             {"gemm_tflops", Kind::Number}, {"note", Kind::String}});
  if (const Json* s = object_member(r, subject, "settings"))
    check_fields(*s, join(subject, "settings"), {{"plan_stale_kernels", Kind::Number}});
  check_fields(r, subject, {{"models", Kind::Array}});
  if (auto it = r.find("models"); it != r.end() && it->is_array())
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string at = join(subject, "models[" + std::to_string(i) + "]");
      if (!(*it)[i].is_object()) throw_input(at, std::string("expected an object, found ") + (*it)[i].type_name());
      check_fields((*it)[i], at, {{"name", Kind::String}, {"bytes", Kind::Number}, {"parameters", Kind::Number}});
    }
  const std::string tier = r.at("tier").get<std::string>();
  const Json& results = r.at("results");
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string at = join(subject, "results[" + std::to_string(i) + "]");
    const Json& row = results[i];
    if (!row.is_object()) throw_input(at, std::string("expected an object, found ") + row.type_name());
    if (tier == "e2e") check_e2e_row(row, at);
    else if (tier == "module") check_module_row(row, at);
    else check_kernels_row(row, at);
  }
}

}  // namespace ac::bench
