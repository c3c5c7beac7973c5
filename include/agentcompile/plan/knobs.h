#pragma once
// Knobs: a backend's tunable parameters, each declared once (name, type, domain, default, how
// plan.json and the developer override hold it, where the search picks it, which kernels read
// it). From the declarations a KnobTable derives a plan block's JSON (strict reading, writing),
// the override syntax "key=value,key=value" and the searched domains; a KnobBinding ties a table
// to the backend's configuration struct. Backend-neutral: a backend declares its table (the CUDA
// fast path's: src/backends/cuda/fast_knobs.cpp) and registers it under its plan block's name,
// and plans hold knob values, never a backend's types.
#include <climits>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agentcompile/core/error.h"
#include "agentcompile/core/json.h"

namespace ac {

struct PlanRoute;

// The values a knob may take: one of `values`, or else any integer in [lo, hi].
struct KnobDomain {
  std::vector<int> values;
  long long lo = INT_MIN, hi = INT_MAX;

  static KnobDomain range(long long lo, long long hi) { return KnobDomain{{}, lo, hi}; }
  static KnobDomain one_of(std::vector<int> values) { return KnobDomain{std::move(values)}; }
  static KnobDomain any() { return KnobDomain{}; }
  bool contains(long long v) const;
  std::string describe() const;  // "0, 2, 4, 8 or 16", "an integer from 32 to 1024", "any integer"
};

// Int: an integer; Bool: true/false in plan.json, an integer in overrides (nonzero: true), 0/1 as a value.
enum class KnobType { Int, Bool };

// How plan.json holds a knob. Its name is then its path in the block, dots nesting objects
// ("gemv.qkv.block" is {"gemv": {"qkv": {"block": 256}}}).
enum class KnobInPlan {
  None,        // not in plans (overrides only)
  Required,    // a plan without it is refused
  Optional,    // absent (older plans, or the knob's `none`): the engine's default
  WithParent,  // optional, but required once the object holding it is present (a GEMV point's fields)
};

// Where the search picks a knob's value: parameter `param` of routes of `family` ("cuda:gemv.fused";
// "": any family) in region `region` ("attn_in"; "": any), or with param "smem_carveout" the
// route's own carveout (PlanRoute::smem_carveout), or with param kPickedFamily the family itself:
// a route of `family` there sets the knob to values[0] (which of several families the region took).
// `values`: the candidates the search tries there.
inline constexpr const char* kPickedFamily = "family";
struct KnobSearch {
  std::string family, param, region;
  std::vector<int> values;
};

// A declaration reads as a chain: Knob("attn_o").one_of({0, 1, 2, 4}).none_at(0).in_plan(Optional)...
struct Knob {
  std::string name;  // unique; the path in plan.json unless `plan` is None
  KnobType type = KnobType::Int;
  KnobDomain domain;
  std::optional<int> none;  // the value that means "not set": never written to plans, accepted by overrides
  KnobInPlan plan = KnobInPlan::None;
  // The developer override's key ("" : `name`). Knobs that share a key and each name a `part` are one
  // tuple, given in declaration order: "qkv=256:1:4:1" for block:rows:unroll:splitk.
  std::string override_key, part;
  std::vector<std::string> readers;  // the kernel families that read it ("gemv.fused"); none: a launch setting
  std::vector<KnobSearch> search;
  // The values the compile's whole-step stage times for it against the plan's kernel chain (a
  // backend's StepSetting); empty: not a whole-step setting.
  std::vector<int> step_values;
  std::string doc;  // one line
  int def = 0;      // the engine's default (KnobBinding takes it from the configuration struct's initialiser)

  explicit Knob(std::string n) : name(std::move(n)) {}
  Knob& range(long long lo, long long hi) { return domain = KnobDomain::range(lo, hi), *this; }
  Knob& one_of(std::vector<int> values) { return domain = KnobDomain::one_of(std::move(values)), *this; }
  Knob& none_at(int v) { return none = v, *this; }
  Knob& in_plan(KnobInPlan p) { return plan = p, *this; }
  Knob& override_as(std::string key, std::string tuple_part = "") {
    override_key = std::move(key);
    part = std::move(tuple_part);
    return *this;
  }
  Knob& read_by(std::vector<std::string> families) { return readers = std::move(families), *this; }
  Knob& picked_by(KnobSearch s) { return search.push_back(std::move(s)), *this; }
  Knob& tried_per_step(std::vector<int> values) { return step_values = std::move(values), *this; }
  Knob& described(std::string line) { return doc = std::move(line), *this; }
  Knob& defaults_to(int v) { return def = v, *this; }

  const std::string& key() const { return override_key.empty() ? name : override_key; }
};

// An ordered list of declarations, for one plan block ("cuda_fast"). Throws Internal on an
// inconsistent declaration (a name twice, a default outside the domain, a tuple of mixed keys).
class KnobTable {
 public:
  KnobTable(std::string block, std::vector<Knob> knobs);
  const std::string& block() const { return block_; }
  const std::vector<Knob>& knobs() const { return knobs_; }
  const Knob* find(const std::string& name) const;
  const Knob& knob(const std::string& name) const;  // Internal when unknown (names are code)
  // A developer override "key=value,key=value" (empty items skipped): the assignments in order, a
  // tuple's as one per part; `none` where given. BadInput under `subject` on anything else.
  std::vector<std::pair<const Knob*, int>> parse_overrides(const std::string& spec, const std::string& subject) const;
  // The knobs the search picks (a non-empty `search`), in declaration order.
  std::vector<const Knob*> searched() const;

 private:
  std::string block_;
  std::vector<Knob> knobs_;
  std::map<std::string, size_t> by_name_;
  std::map<std::string, std::vector<const Knob*>> by_key_;  // override key -> its knob(s)
};

// The values one plan block holds, by knob name: a knob not set is absent from plan.json (and
// runs the engine's default). Copyable; the table outlives it (tables are static).
class KnobValues {
 public:
  explicit KnobValues(const KnobTable& table) : table_(&table) {}
  const KnobTable& table() const { return *table_; }
  std::optional<int> get(const std::string& name) const;
  int value(const std::string& name) const;  // set, or the default
  // Sets a knob (its `none`, or nullopt, clears it); BadInput naming the block and the knob for a
  // value outside its domain (values from the tuning DB are input); Internal for an unknown name.
  void set(const std::string& name, std::optional<int> v);
  const std::map<std::string, int>& set_values() const { return v_; }
  // The knobs the decode routes of `phase` bind (each knob's `search`), set from them in route order.
  void take_routes(const std::vector<PlanRoute>& routes, const std::string& phase);

  Json to_json() const;
  // Strict: types, domains, required knobs; nested objects may hold only declared keys (unknown
  // top-level keys are ignored, as plans always were). BadInput "subject: path: why".
  static KnobValues from_json(const KnobTable& table, const Json& j, const std::string& subject);
  bool operator==(const KnobValues& o) const { return table_ == o.table_ && v_ == o.v_; }

 private:
  const KnobTable* table_;
  std::map<std::string, int> v_;
};

// A table bound to the configuration struct its backend reads: each knob with how to get and set
// it there. The defaults are Config{}'s, so a knob's default lives in the struct's initialiser.
template <class Config>
struct BoundKnob {
  Knob knob;
  std::function<int(const Config&)> get;
  std::function<void(Config&, int)> set;  // the knob's `none` included (e.g. removes a map entry)
};

template <class Config>
BoundKnob<Config> bind(Knob k, int Config::*m) {
  return {std::move(k), [m](const Config& c) { return c.*m; }, [m](Config& c, int v) { c.*m = v; }};
}
template <class Config>
BoundKnob<Config> bind(Knob k, bool Config::*m) {
  k.type = KnobType::Bool;
  k.domain = KnobDomain::one_of({0, 1});
  return {std::move(k), [m](const Config& c) { return int(c.*m); }, [m](Config& c, int v) { c.*m = v != 0; }};
}
// A field of a struct member (a GEMV point's block, ...).
template <class Config, class Point>
BoundKnob<Config> bind(Knob k, Point Config::*p, int Point::*f) {
  return {std::move(k), [p, f](const Config& c) { return c.*p.*f; }, [p, f](Config& c, int v) { c.*p.*f = v; }};
}

template <class Config>
class KnobBinding {
 public:
  KnobBinding(std::string block, std::vector<BoundKnob<Config>> knobs) : table_(std::move(block), with_defaults(knobs)) {
    for (auto& k : knobs) access_.push_back({std::move(k.get), std::move(k.set)});
  }
  const KnobTable& table() const { return table_; }
  // The plan knobs of `c` (a knob at its `none` left unset).
  KnobValues values(const Config& c) const {
    KnobValues out(table_);
    for (size_t i = 0; i < access_.size(); ++i)
      if (table_.knobs()[i].plan != KnobInPlan::None) out.set(table_.knobs()[i].name, access_[i].first(c));
    return out;
  }
  // Config{} with the values set.
  Config config(const KnobValues& v) const {
    if (&v.table() != &table_) throw_internal(table_.block(), "values of another knob table");
    Config c{};
    for (size_t i = 0; i < access_.size(); ++i)
      if (auto x = v.get(table_.knobs()[i].name)) access_[i].second(c, *x);
    return c;
  }
  // The declarations with their accessors, e.g. to declare a table that extends this one.
  std::vector<BoundKnob<Config>> bound() const {
    std::vector<BoundKnob<Config>> out;
    for (size_t i = 0; i < access_.size(); ++i) out.push_back({table_.knobs()[i], access_[i].first, access_[i].second});
    return out;
  }
  Config apply_overrides(Config c, const std::string& spec, const std::string& subject) const {
    for (const auto& [k, v] : table_.parse_overrides(spec, subject)) access_[size_t(k - table_.knobs().data())].second(c, v);
    return c;
  }

 private:
  static std::vector<Knob> with_defaults(const std::vector<BoundKnob<Config>>& knobs) {
    std::vector<Knob> out;
    const Config defaults{};
    for (const auto& k : knobs) {
      out.push_back(k.knob);
      out.back().def = k.get(defaults);
    }
    return out;
  }
  KnobTable table_;
  std::vector<std::pair<std::function<int(const Config&)>, std::function<void(Config&, int)>>> access_;
};

// The table of each plan block a linked backend declares, by block name ("cuda_fast"); null when
// no linked backend declares it. Backends register theirs once (Internal for a second table).
void register_knob_table(const KnobTable& table);
const KnobTable* find_knob_table(const std::string& block);

}  // namespace ac
