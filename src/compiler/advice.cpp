// Advice validation: everything an advisor says is checked against the candidate space; what
// does not fit is dropped with a recorded reason, and nothing can widen the space.
#include "agentcompile/compiler/advice.h"

#include <algorithm>
#include <climits>
#include <set>

#include "agentcompile/core/error.h"

namespace ac {

namespace {

const std::vector<std::string> kRiskTags = {
    "smem-heavy",      "register-pressure", "numerically-sensitive", "low-occupancy",  "launch-overhead",
    "memory-bound",    "compute-bound",     "uncoalesced-access",    "cache-thrashing", "load-imbalance",
};

const std::set<std::string> kCodeKeys = {"code",  "source", "kernel", "kernels", "cuda",  "ptx",  "cpp",
                                         "patch", "diff",   "template", "templates", "program", "script",
                                         "shell", "command", "exec",  "asm",   "function", "implementation"};

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// Why an unknown top-level key is refused.
std::string unknown_key_reason(const std::string& key) {
  const std::string k = lower(key);
  if (kCodeKeys.count(k) || contains(k, "code") || contains(k, "kernel_src") || contains(k, "source"))
    return "advice cannot add code";
  if (contains(k, "valid") || contains(k, "skip") || contains(k, "bypass") || contains(k, "trust") ||
      contains(k, "verif") || contains(k, "check") || contains(k, "test"))
    return "advice cannot skip or change validation";
  if (contains(k, "add") || contains(k, "new") || contains(k, "extra") || contains(k, "widen") || contains(k, "extend"))
    return "advice cannot widen the space";
  return "unknown key (allowed: label, family_priorities, exclude_families, param_hints, risks)";
}

// A parser's message, cut: it quotes the token it stopped in, which can be the whole reply.
std::string brief(const std::string& printable_text) {
  return printable_text.size() <= 240 ? printable_text : printable_text.substr(0, 240) + "...";
}

// A key of the reply as it goes into a rejection's path: as is when it is a short printable
// name, else quoted and cut, so that a path stays one short line.
std::string key_text(const std::string& k) {
  const bool plain = !k.empty() && k.size() <= 64 && std::all_of(k.begin(), k.end(), [](unsigned char c) {
    return c > 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  return plain ? k : json_quote(k, 40);
}

// Text the advice may carry: printable ASCII, bounded, nothing that reads as code.
std::string text_problem(const std::string& s, size_t max_chars, bool label) {
  if (s.empty()) return "empty";
  if (s.size() > max_chars) return "longer than " + std::to_string(max_chars) + " characters";
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e) return "holds control or non-ASCII characters";
    if (c == '`' || c == '{' || c == '}') return "holds code characters";
    if (label && !(std::isalnum(c) || std::string(" ,.;:()/+_-%=<>").find(char(c)) != std::string::npos))
      return "holds characters a label may not use";
  }
  for (const char* code : {"#include", "__global__", "asm(", "extern \"C\"", "#define"})
    if (contains(s, code)) return "reads as code";
  return "";
}

class Validator {
 public:
  Validator(const CandidateSpace& space, Advice& a) : space_(space), a_(a) {}

  void reject(const std::string& path, const Json& value, const std::string& reason) {
    a_.rejections.push_back({path, value.is_null() ? "" : json_brief(value), reason});
  }

  // A family id from the reply: known and not the fallback, else a rejection.
  const FamilySpace* family(const std::string& path, const Json& v, const char* fallback_reason) {
    if (!v.is_string()) {
      reject(path, v, "expected a family id (string)");
      return nullptr;
    }
    const FamilySpace* f = space_.find(v.get<std::string>());
    if (f == nullptr) {
      reject(path, v, "unknown family (not in this region's candidate space)");
      return nullptr;
    }
    if (f->route == FamilyRoute::Fallback) {
      reject(path, v, fallback_reason);
      return nullptr;
    }
    return f;
  }

  const Json* list(const std::string& path, const Json& v) {
    if (!v.is_array()) {
      reject(path, v, "expected an array");
      return nullptr;
    }
    if (v.size() > kMaxAdviceList) {
      reject(path, Json(nullptr), "more than " + std::to_string(kMaxAdviceList) + " entries; ignored");
      return nullptr;
    }
    return &v;
  }

  void excludes(const Json& v) {
    const Json* l = list("exclude_families", v);
    if (!l) return;
    for (size_t i = 0; i < l->size(); ++i) {
      const FamilySpace* f = family("exclude_families[" + std::to_string(i) + "]", (*l)[i],
                                    "the fallback route is always kept");
      if (f && std::find(a_.excluded.begin(), a_.excluded.end(), f->id) == a_.excluded.end()) a_.excluded.push_back(f->id);
    }
  }

  bool excluded(const std::string& id) const {
    return std::find(a_.excluded.begin(), a_.excluded.end(), id) != a_.excluded.end();
  }

  void priorities(const Json& v) {
    const Json* l = list("family_priorities", v);
    if (!l) return;
    for (size_t i = 0; i < l->size(); ++i) {
      const std::string path = "family_priorities[" + std::to_string(i) + "]";
      const FamilySpace* f = family(path, (*l)[i], "the fallback route is always measured first (the baseline)");
      if (!f) continue;
      if (excluded(f->id)) {
        reject(path, (*l)[i], "family excluded by the same advice");
        continue;
      }
      if (std::find(prios_.begin(), prios_.end(), f->id) == prios_.end()) prios_.push_back(f->id);
    }
  }

  void hints(const Json& v) {
    if (!v.is_object()) {
      reject("param_hints", v, "expected an object: family -> {parameter: [values]}");
      return;
    }
    if (v.size() > kMaxAdviceList) {
      reject("param_hints", Json(nullptr), "more than " + std::to_string(kMaxAdviceList) + " families; ignored");
      return;
    }
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string fpath = "param_hints." + key_text(it.key());
      const FamilySpace* f = family(fpath, Json(it.key()), "the fallback route has no parameters");
      if (!f) continue;
      if (excluded(f->id)) {
        reject(fpath, Json(nullptr), "family excluded by the same advice");
        continue;
      }
      if (!it->is_object()) {
        reject(fpath, *it, "expected an object: parameter -> [values]");
        continue;
      }
      std::vector<SpaceParam> narrowed;
      for (auto pit = it->begin(); pit != it->end(); ++pit) {
        const std::string ppath = fpath + "." + key_text(pit.key());
        auto dom = std::find_if(f->params.begin(), f->params.end(), [&](const SpaceParam& p) { return p.name == pit.key(); });
        if (dom == f->params.end()) {
          std::string names;
          for (const auto& p : f->params) names += (names.empty() ? "" : ", ") + p.name;
          reject(ppath, Json(nullptr), "unknown parameter of " + f->id + " (its parameters: " + names + ")");
          continue;
        }
        Json values = pit->is_array() ? *pit : Json::array({*pit});
        if (values.size() > kMaxAdviceList) {
          reject(ppath, Json(nullptr), "more than " + std::to_string(kMaxAdviceList) + " values; ignored");
          continue;
        }
        SpaceParam kept{dom->name, {}};
        for (size_t i = 0; i < values.size(); ++i) {
          const std::string vpath = ppath + "[" + std::to_string(i) + "]";
          const Json& x = values[i];
          if (!x.is_number_integer()) {
            reject(vpath, x, "expected an integer of the domain");
            continue;
          }
          const std::optional<int64_t> n = json_as_int(x, INT_MIN, INT_MAX);
          if (!n || std::find(dom->values.begin(), dom->values.end(), int(*n)) == dom->values.end()) {
            std::string d;
            for (int dv : dom->values) d += (d.empty() ? "" : ",") + std::to_string(dv);
            reject(vpath, x, "not in the domain {" + d + "}; advice can only narrow");
            continue;
          }
          if (std::find(kept.values.begin(), kept.values.end(), int(*n)) == kept.values.end()) kept.values.push_back(int(*n));
        }
        if (kept.values.empty()) {
          reject(ppath, Json(nullptr), "no value of the hint is in the domain; the full domain is kept");
          continue;
        }
        narrowed.push_back(std::move(kept));
      }
      if (narrowed.empty()) continue;
      if (count_points(*f, &narrowed) == 0) {
        reject(fpath, Json(nullptr), "the hinted domains leave no valid binding of " + f->id +
                                         " (constraints); its full domain is kept");
        continue;
      }
      a_.narrowed[f->id] = std::move(narrowed);
    }
  }

  void risks(const Json& v) {
    const Json* l = list("risks", v);
    if (!l) return;
    for (size_t i = 0; i < l->size(); ++i) {
      const std::string path = "risks[" + std::to_string(i) + "]";
      const Json& r = (*l)[i];
      if (!r.is_object()) {
        reject(path, r, "expected an object {family?, risk, reason}");
        continue;
      }
      RiskNote note;
      bool ok = true;
      for (auto it = r.begin(); it != r.end() && ok; ++it) {
        const std::string kpath = path + "." + key_text(it.key());
        if (it.key() == "family") {
          if (!it->is_string() || space_.find(it->get<std::string>()) == nullptr) {
            reject(kpath, *it, "unknown family (not in this region's candidate space)");
            ok = false;
          } else {
            note.family = it->get<std::string>();
          }
        } else if (it.key() == "risk") {
          if (!it->is_string() ||
              std::find(kRiskTags.begin(), kRiskTags.end(), it->get<std::string>()) == kRiskTags.end()) {
            reject(kpath, *it, "unknown risk tag");
            ok = false;
          } else {
            note.risk = it->get<std::string>();
          }
        } else if (it.key() == "reason") {
          std::string why = it->is_string() ? text_problem(it->get<std::string>(), kMaxReasonChars, false) : "not a string";
          if (!why.empty()) {
            reject(kpath, *it, "reason " + why);
            ok = false;
          } else {
            note.reason = it->get<std::string>();
          }
        } else {
          reject(kpath, Json(nullptr), unknown_key_reason(it.key()));
          ok = false;
        }
      }
      if (ok && (note.risk.empty() || note.reason.empty())) {
        reject(path, Json(nullptr), "a risk needs both a risk tag and a reason");
        ok = false;
      }
      if (ok) a_.risks.push_back(std::move(note));
    }
  }

  void label(const Json& v) {
    if (!v.is_string()) {
      reject("label", v, "expected a string");
      return;
    }
    if (std::string why = text_problem(v.get<std::string>(), kMaxLabelChars, true); !why.empty()) {
      reject("label", v, "label " + why);
      return;
    }
    a_.label = v.get<std::string>();
  }

  void run(const Json& reply) {
    // Exclusions first: the other keys refer to them.
    if (auto it = reply.find("exclude_families"); it != reply.end()) excludes(*it);
    for (auto it = reply.begin(); it != reply.end(); ++it) {
      const std::string& k = it.key();
      if (k == "exclude_families") continue;
      if (k == "label") label(*it);
      else if (k == "family_priorities") priorities(*it);
      else if (k == "param_hints") hints(*it);
      else if (k == "risks") risks(*it);
      else reject(key_text(k), Json(nullptr), unknown_key_reason(k));
    }
  }

  std::vector<std::string> prios_;

 private:
  const CandidateSpace& space_;
  Advice& a_;
};

// Non-fallback valid points left by the advice.
size_t advised_points(const CandidateSpace& space, const Advice& a) {
  size_t n = 0;
  for (const auto& f : space.families) {
    if (f.route == FamilyRoute::Fallback) continue;
    if (std::find(a.excluded.begin(), a.excluded.end(), f.id) != a.excluded.end()) continue;
    auto it = a.narrowed.find(f.id);
    n += it == a.narrowed.end() ? f.valid_points : count_points(f, &it->second);
  }
  return n;
}

void complete_order(Advice& a, const CandidateSpace& space, const std::vector<std::string>& first,
                    const std::vector<std::string>& default_order) {
  a.family_order.clear();
  auto add = [&](const std::string& id) {
    const FamilySpace* f = space.find(id);
    if (!f || f->route == FamilyRoute::Fallback) return;
    if (std::find(a.excluded.begin(), a.excluded.end(), id) != a.excluded.end()) return;
    if (std::find(a.family_order.begin(), a.family_order.end(), id) != a.family_order.end()) return;
    a.family_order.push_back(id);
  };
  for (const auto& id : first) add(id);
  for (const auto& id : default_order) add(id);
  for (const auto& f : space.families) add(f.id);
}

}  // namespace

const std::vector<std::string>& advice_risk_tags() { return kRiskTags; }

Json Rejection::to_json() const { return {{"path", path}, {"value", value}, {"reason", reason}}; }

Json RiskNote::to_json() const {
  Json j = {{"risk", risk}, {"reason", reason}};
  j["family"] = family.empty() ? Json(nullptr) : Json(family);
  return j;
}

Json Advice::to_json() const {
  Json hints = Json::object();
  for (const auto& [fam, params] : narrowed) {
    Json p = Json::object();
    for (const auto& sp : params) p[sp.name] = sp.values;
    hints[fam] = p;
  }
  Json risks_j = Json::array(), rej = Json::array();
  for (const auto& r : risks) risks_j.push_back(r.to_json());
  for (const auto& r : rejections) rej.push_back(r.to_json());
  return {{"source", source},       {"parsed", parsed},       {"label", label},
          {"family_order", family_order}, {"param_hints", hints}, {"excluded_families", excluded},
          {"risks", risks_j},       {"rejections", rej},      {"reverted", reverted}};
}

Advice Advice::from_json(const Json& j) {
  Advice a;
  a.source = j.value("source", "");
  a.parsed = j.value("parsed", false);
  a.label = j.value("label", "");
  a.family_order = j.value("family_order", std::vector<std::string>{});
  if (auto it = j.find("param_hints"); it != j.end() && it->is_object())
    for (auto f = it->begin(); f != it->end(); ++f)
      for (auto p = f->begin(); p != f->end(); ++p) a.narrowed[f.key()].push_back({p.key(), p->get<std::vector<int>>()});
  a.excluded = j.value("excluded_families", std::vector<std::string>{});
  if (auto it = j.find("risks"); it != j.end())
    for (const auto& r : *it)
      a.risks.push_back({r["family"].is_string() ? r["family"].get<std::string>() : "", r.value("risk", ""), r.value("reason", "")});
  if (auto it = j.find("rejections"); it != j.end())
    for (const auto& r : *it) a.rejections.push_back({r.value("path", ""), r.value("value", ""), r.value("reason", "")});
  a.reverted = j.value("reverted", false);
  return a;
}

Advice empty_advice(const CandidateSpace& space, const std::string& source) {
  Advice a;
  a.source = source;
  complete_order(a, space, {}, {});
  return a;
}

Advice validate_advice_json(const Json& reply, const CandidateSpace& space,
                            const std::vector<std::string>& default_order, const std::string& source) {
  Advice a;
  a.source = source;
  if (!reply.is_object()) {
    a.rejections.push_back({"", json_brief(reply), "the reply is not a JSON object"});
    complete_order(a, space, {}, default_order);
    return a;
  }
  a.parsed = true;
  Validator v(space, a);
  v.run(reply);
  const size_t full = advised_points(space, empty_advice(space, source));
  if (full > 0 && advised_points(space, a) == 0) {
    a.excluded.clear();
    a.narrowed.clear();
    a.reverted = true;
    a.rejections.push_back({"", "", "the advice left only the fallback route; the full space is kept"});
  }
  complete_order(a, space, v.prios_, default_order);
  return a;
}

Advice validate_advice(std::string_view reply, const CandidateSpace& space,
                       const std::vector<std::string>& default_order, const std::string& source) {
  if (reply.size() > kMaxAdviceBytes) {
    Advice a;
    a.source = source;
    a.rejections.push_back({"", std::to_string(reply.size()) + " bytes",
                            "oversized reply (limit " + std::to_string(kMaxAdviceBytes) + " bytes); ignored"});
    complete_order(a, space, {}, default_order);
    return a;
  }
  Json j;
  try {
    j = parse_json_strict(reply, "advice reply", JsonLimits{16, kMaxAdviceList * 16});
  } catch (const Error& e) {
    Advice a;
    a.source = source;
    // Its start, quoted and cut after escaping (control characters take six characters each).
    a.rejections.push_back({"", json_brief(Json(std::string(reply.substr(0, 80))), 100), "not valid JSON: " + brief(e.reason())});
    complete_order(a, space, {}, default_order);
    return a;
  }
  return validate_advice_json(j, space, default_order, source);
}

std::vector<Candidate> ordered_candidates(const CandidateSpace& space, const Advice& advice) {
  std::vector<Candidate> out;
  out.push_back({space.fallback().id, {}});
  std::vector<std::pair<std::string, std::vector<ParamPoint>>> lists;
  for (const auto& id : advice.family_order) {
    const FamilySpace* f = space.find(id);
    if (!f || f->route == FamilyRoute::Fallback) continue;
    auto it = advice.narrowed.find(id);
    lists.emplace_back(id, family_points(*f, it == advice.narrowed.end() ? nullptr : &it->second));
  }
  for (const auto& [id, points] : lists)
    if (!points.empty()) out.push_back({id, points[0]});
  for (const auto& [id, points] : lists)
    for (size_t k = 1; k < points.size(); ++k) out.push_back({id, points[k]});
  return out;
}

}  // namespace ac
