// Knob tables: plan blocks read and written, overrides parsed, routes taken, from the declarations.
#include "agentcompile/plan/knobs.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "agentcompile/core/error.h"
#include "agentcompile/plan/plan.h"

namespace ac {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, sep);) out.push_back(part);  // no empty last part, as ever
  return out;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

// "a: b" for messages about something at `path` inside the block `subject` names.
std::string at(const std::string& subject, const std::string& path) { return path.empty() ? subject : subject + ": " + path; }

// An override's integer, as std::stoi reads it whole.
int override_int(const std::string& key, const std::string& text, const std::string& subject) {
  size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = std::string::npos;
  }
  if (text.empty() || used != text.size()) throw_input(subject, "'" + key + "': '" + text + "' is not an integer");
  return v;
}

}  // namespace

bool KnobDomain::contains(long long v) const {
  if (!values.empty()) return std::find(values.begin(), values.end(), v) != values.end();
  return v >= lo && v <= hi;
}

std::string KnobDomain::describe() const {
  if (!values.empty()) {
    std::vector<std::string> s;
    for (int v : values) s.push_back(std::to_string(v));
    const std::string last = s.back();
    s.pop_back();
    return s.empty() ? last : join(s, ", ") + " or " + last;
  }
  if (lo == INT_MIN && hi == INT_MAX) return "any integer";
  return "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
}

KnobTable::KnobTable(std::string block, std::vector<Knob> knobs) : block_(std::move(block)), knobs_(std::move(knobs)) {
  std::set<std::string> leaves, objects;
  for (size_t i = 0; i < knobs_.size(); ++i) {
    const Knob& k = knobs_[i];
    const std::string what = block_ + " knob " + k.name;
    if (k.name.empty() || !by_name_.emplace(k.name, i).second) throw_internal(what, "declared twice (or unnamed)");
    if (!k.domain.contains(k.def) && k.def != k.none) throw_internal(what, "its default is outside its domain");
    for (const KnobSearch& ks : k.search)
      if (ks.param == kPickedFamily && (ks.family.empty() || ks.values.size() != 1 || !k.domain.contains(ks.values[0])))
        throw_internal(what, "a family pick needs the family and one value of the knob's domain");
    if (k.plan != KnobInPlan::None) {
      const std::vector<std::string> path = split(k.name, '.');
      std::string prefix;
      for (size_t p = 0; p + 1 < path.size(); ++p) objects.insert(prefix += (p ? "." : "") + path[p]);
      leaves.insert(k.name);
    }
  }
  for (const std::string& o : objects)
    if (leaves.count(o)) throw_internal(block_ + " knob " + o, "is both a value and an object in plan.json");
  for (const Knob& k : knobs_) by_key_[k.key()].push_back(&k);
  for (const auto& [key, ks] : by_key_) {
    bool parts = false;
    for (const Knob* k : ks) parts = parts || !k->part.empty();
    for (const Knob* k : ks)
      if ((ks.size() > 1 || parts) && (k->part.empty() || k->none))
        throw_internal(block_ + " override " + key, "a tuple's knobs each need a part and no `none`");
  }
}

const Knob* KnobTable::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &knobs_[it->second];
}

const Knob& KnobTable::knob(const std::string& name) const {
  if (const Knob* k = find(name)) return *k;
  throw_internal(block_, "no knob named " + name);
}

std::vector<std::pair<const Knob*, int>> KnobTable::parse_overrides(const std::string& spec, const std::string& subject) const {
  std::vector<std::pair<const Knob*, int>> out;
  for (const std::string& item : split(spec, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) throw_input(subject, "'" + item + "' is not key=value");
    const std::string key = item.substr(0, eq), val = item.substr(eq + 1);
    auto it = by_key_.find(key);
    if (it == by_key_.end()) throw_input(subject, "unknown key '" + key + "'");
    const std::vector<const Knob*>& ks = it->second;
    if (ks.front()->part.empty()) {  // one knob
      const Knob& k = *ks.front();
      int v = override_int(key, val, subject);
      if (k.type == KnobType::Bool) v = v != 0;
      if (!k.domain.contains(v) && v != k.none)
        throw_input(subject, "'" + key + "' must be " + (k.none ? std::to_string(*k.none) + " (none) or " : "") + k.domain.describe());
      out.emplace_back(&k, v);
      continue;
    }
    std::vector<std::string> parts;
    for (const Knob* k : ks) parts.push_back(k->part);
    const std::vector<std::string> given = split(val, ':');
    std::vector<int> vs;
    for (const std::string& x : given) vs.push_back(override_int(key, x, subject));  // a bad number first, as ever
    if (vs.size() != ks.size()) throw_input(subject, "'" + key + "' needs " + join(parts, ":"));
    for (size_t i = 0; i < ks.size(); ++i) {
      if (!ks[i]->domain.contains(vs[i]))
        throw_input(subject, "'" + key + "': " + parts[i] + " must be " + ks[i]->domain.describe());
      out.emplace_back(ks[i], vs[i]);
    }
  }
  return out;
}

std::vector<const Knob*> KnobTable::searched() const {
  std::vector<const Knob*> out;
  for (const Knob& k : knobs_)
    if (!k.search.empty()) out.push_back(&k);
  return out;
}

std::optional<int> KnobValues::get(const std::string& name) const {
  table_->knob(name);  // an unknown name is a bug
  auto it = v_.find(name);
  return it == v_.end() ? std::nullopt : std::optional<int>(it->second);
}

int KnobValues::value(const std::string& name) const { return get(name).value_or(table_->knob(name).def); }

void KnobValues::set(const std::string& name, std::optional<int> v) {
  const Knob& k = table_->knob(name);
  if (!v || v == k.none) {
    v_.erase(name);
    return;
  }
  if (!k.domain.contains(*v)) throw_input(table_->block(), name + ": " + std::to_string(*v) + " is not " + k.domain.describe());
  v_[name] = *v;
}

void KnobValues::take_routes(const std::vector<PlanRoute>& routes, const std::string& phase) {
  const std::vector<const Knob*> searched = table_->searched();
  for (const PlanRoute& r : routes) {
    if (r.phase != phase) continue;
    for (const Knob* k : searched)
      for (const KnobSearch& s : k->search) {
        if ((!s.family.empty() && s.family != r.family) || (!s.region.empty() && s.region != r.region)) continue;
        if (s.param == "smem_carveout") {
          if (r.smem_carveout) set(k->name, *r.smem_carveout);
        } else if (s.param == kPickedFamily) {
          set(k->name, s.values.front());  // the family matched (checked above); one value (the table's check)
        } else if (auto p = r.params.find(s.param); p != r.params.end()) {
          set(k->name, p->second);
        }
      }
  }
}

Json KnobValues::to_json() const {
  Json j = Json::object();
  for (const Knob& k : table_->knobs()) {
    auto it = v_.find(k.name);
    if (k.plan == KnobInPlan::None || it == v_.end()) continue;
    const std::vector<std::string> path = split(k.name, '.');
    Json* obj = &j;
    for (size_t i = 0; i + 1 < path.size(); ++i) obj = &(*obj)[path[i]];
    (*obj)[path.back()] = k.type == KnobType::Bool ? Json(it->second != 0) : Json(it->second);
  }
  return j;
}

KnobValues KnobValues::from_json(const KnobTable& table, const Json& j, const std::string& subject) {
  if (!j.is_object()) throw_input(subject, "expected an object");
  KnobValues out(table);
  std::map<std::string, std::set<std::string>> children;  // nested object path -> its declared keys
  for (const Knob& k : table.knobs()) {
    if (k.plan == KnobInPlan::None) continue;
    const std::vector<std::string> path = split(k.name, '.');
    const Json* obj = &j;
    std::string where;  // the path of *obj in the block
    bool absent = false;
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      children[where].insert(path[i]);
      auto it = obj->find(path[i]);
      if (it == obj->end() || it->is_null()) {
        if (k.plan == KnobInPlan::Required) throw_input(at(subject, where), path[i] + ": missing");
        absent = true;
        break;
      }
      if (!it->is_object()) throw_input(at(subject, where), path[i] + ": expected an object");
      obj = &*it;
      where += (i ? "." : "") + path[i];
    }
    if (absent) continue;
    children[where].insert(path.back());
    const std::string& leaf = path.back();
    if (!obj->contains(leaf) || obj->at(leaf).is_null()) {
      if (k.plan == KnobInPlan::Required || (k.plan == KnobInPlan::WithParent && !where.empty()))
        throw_input(at(subject, where), leaf + ": missing");
      continue;
    }
    int v;
    if (k.type == KnobType::Bool) {
      v = *json_opt_bool(*obj, at(subject, where), leaf);
    } else {
      const auto& d = k.domain;
      const long long lo = d.values.empty() ? d.lo : *std::min_element(d.values.begin(), d.values.end());
      const long long hi = d.values.empty() ? d.hi : *std::max_element(d.values.begin(), d.values.end());
      v = int(json_int(*obj, at(subject, where), leaf, lo, hi));
      if (!d.contains(v)) throw_input(at(subject, where), leaf + ": " + std::to_string(v) + " is not " + d.describe());
    }
    out.v_[k.name] = v;
  }
  // Nested objects hold declared keys only (a misspelt region would silently run the default).
  for (const auto& [where, keys] : children) {
    if (where.empty()) continue;
    const Json* obj = &j;
    for (const std::string& p : split(where, '.')) {
      auto it = obj->find(p);
      if (it == obj->end() || !it->is_object()) {
        obj = nullptr;
        break;
      }
      obj = &*it;
    }
    if (!obj) continue;
    for (const auto& [key, value] : obj->items())
      if (!keys.count(key))
        throw_input(subject, where + ": unknown key " + json_quote(key) + " (known: " +
                                 join(std::vector<std::string>(keys.begin(), keys.end()), ", ") + ")");
  }
  return out;
}

namespace {
std::map<std::string, const KnobTable*>& registry() {
  static std::map<std::string, const KnobTable*> tables;
  return tables;
}
}  // namespace

void register_knob_table(const KnobTable& table) {
  if (!registry().emplace(table.block(), &table).second) throw_internal("knob tables", "two tables for " + table.block());
}

const KnobTable* find_knob_table(const std::string& block) {
  auto it = registry().find(block);
  return it == registry().end() ? nullptr : it->second;
}

}  // namespace ac
