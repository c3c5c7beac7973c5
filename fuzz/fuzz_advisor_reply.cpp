// libFuzzer target: an LLM advisor's reply. The input is read as the body of a chat-completions
// response and, separately, as the message content inside a well-formed one, against a fixed
// small candidate space. Reading a reply never throws: a body that is not a chat completion says
// why, content that is not advice is recorded as rejections (advice.h). Whatever is kept is
// valid UTF-8, and accepted advice can only reorder, narrow within the domains and exclude:
// every candidate it yields is a valid point of the space, the fallback first.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string_view>

#include "agentcompile/compiler/advice.h"
#include "compiler/advisor/reply.h"
#include "fuzz_common.h"

namespace {

using namespace ac;

FamilySpace family(const std::string& id, FamilyRoute route, std::vector<SpaceParam> params,
                   std::function<std::string(const ParamPoint&)> constraint = {}) {
  FamilySpace f;
  f.id = id;
  f.backend = "cpu";
  f.route = route;
  f.family = id.substr(id.find('.') + 1);
  f.params = std::move(params);
  f.constraint = std::move(constraint);
  f.raw_points = domain_product(f.params);
  f.valid_points = count_points(f);
  return f;
}

// An attn_in-like space: the fallback, an op family with a constraint, a region family without
// one, a family without parameters and one whose every binding is invalid.
const CandidateSpace& space() {
  static const CandidateSpace s = [] {
    CandidateSpace sp;
    sp.signature = "fuzz";
    sp.kind = RegionKind::AttnIn;
    sp.backend = "cpu";
    sp.families.push_back(family("cpu:fallback", FamilyRoute::Fallback, {}));
    sp.families.push_back(family("cpu:linear.blocked", FamilyRoute::Op,
                                 {{"ROWS", {1, 2, 4}}, {"THREADS", {1, 2, 4}}, {"KUNROLL", {4, 8}}},
                                 [](const ParamPoint& p) {
                                   return p.at("ROWS") * p.at("THREADS") <= 4 ? "" : "more rows x threads than cores";
                                 }));
    sp.families.push_back(family("cpu:attn_in.fused", FamilyRoute::Region, {{"BLOCK_KV", {16, 32, 64}}, {"GQA_SHARE", {0, 1}}}));
    sp.families.push_back(family("cpu:rms_norm.simd", FamilyRoute::Op, {}));
    sp.families.push_back(family("cpu:rope.never", FamilyRoute::Op, {{"WIDTH", {4, 8}}},
                                 [](const ParamPoint&) { return std::string("never valid here"); }));
    return sp;
  }();
  return s;
}

// Every valid candidate of the space, by name.
const std::set<std::string>& valid_names() {
  static const std::set<std::string> names = [] {
    std::set<std::string> n;
    for (const auto& f : space().families)
      for (const auto& p : family_points(f)) n.insert(Candidate{f.id, p}.name());
    return n;
  }();
  return names;
}

const std::vector<std::string> kDefaultOrder = {"cpu:attn_in.fused", "cpu:linear.blocked"};

bool valid_utf8(const std::string& s) {
  try {
    (void)Json(s).dump();
    return true;
  } catch (const Json::exception&) {
    return false;
  }
}

bool one_line(const std::string& s) { return s.find('\n') == std::string::npos && s.find('\r') == std::string::npos; }

bool printable_ascii(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return c >= 0x20 && c <= 0x7e; });
}

void check_advice(const Advice& a, const std::string& source) {
  using fuzz::require;
  const CandidateSpace& sp = space();
  require(a.source == source, "source kept");
  auto known = [&](const std::string& id) {
    const FamilySpace* f = sp.find(id);
    return f != nullptr && f->route != FamilyRoute::Fallback;
  };
  auto excluded = [&](const std::string& id) { return std::find(a.excluded.begin(), a.excluded.end(), id) != a.excluded.end(); };
  std::set<std::string> seen;
  for (const auto& id : a.excluded) require(known(id) && seen.insert(id).second, "excluded: known, once: " + id);
  seen.clear();
  for (const auto& id : a.family_order) require(known(id) && !excluded(id) && seen.insert(id).second, "order: known, kept, once: " + id);
  for (const auto& f : sp.families)
    require(f.route == FamilyRoute::Fallback || excluded(f.id) || seen.count(f.id), "order covers every kept family: " + f.id);
  if (!a.parsed) require(a.excluded.empty() && a.narrowed.empty() && !a.rejections.empty(), "unparsed: no advice, a reason");
  size_t advised = 0, full = 0;
  for (const auto& f : sp.families) {
    if (f.route == FamilyRoute::Fallback) continue;
    full += f.valid_points;
    auto it = a.narrowed.find(f.id);
    if (!excluded(f.id)) advised += it == a.narrowed.end() ? f.valid_points : count_points(f, &it->second);
  }
  for (const auto& [id, params] : a.narrowed) {
    require(known(id) && !excluded(id), "narrowed: known and kept: " + id);
    const FamilySpace& f = *sp.find(id);
    std::set<std::string> names;
    for (const auto& p : params) {
      auto dom = std::find_if(f.params.begin(), f.params.end(), [&](const SpaceParam& d) { return d.name == p.name; });
      require(dom != f.params.end() && names.insert(p.name).second, "narrowed: a parameter of " + id + ", once");
      require(!p.values.empty(), "narrowed: not empty");
      std::set<int> vs;
      for (int v : p.values)
        require(std::count(dom->values.begin(), dom->values.end(), v) == 1 && vs.insert(v).second, "narrowed: in the domain, once");
    }
    require(count_points(f, &params) > 0, "narrowed: some valid binding left in " + id);
  }
  require(full == 0 || advised > 0, "something besides the fallback is left");
  require(a.label.size() <= kMaxLabelChars && printable_ascii(a.label), "label bounded and printable");
  for (const auto& r : a.risks) {
    const auto& tags = advice_risk_tags();
    require(std::count(tags.begin(), tags.end(), r.risk) == 1, "risk tag known: " + r.risk);
    require(!r.reason.empty() && r.reason.size() <= kMaxReasonChars && printable_ascii(r.reason), "risk reason bounded");
    require(r.family.empty() || sp.find(r.family), "risk family known");
  }
  for (const auto& r : a.rejections)
    for (const std::string* s : {&r.path, &r.value, &r.reason})
      require(s->size() <= 400 && one_line(*s) && valid_utf8(*s), "rejection text: short, one line, UTF-8: " + *s);

  // The candidates it yields: the fallback first, then valid points of kept families, each once.
  const std::vector<Candidate> cands = ordered_candidates(sp, a);
  require(!cands.empty() && cands.front().family == "cpu:fallback" && cands.front().params.empty(), "fallback first");
  std::set<std::string> names;
  for (size_t i = 0; i < cands.size(); ++i) {
    require(names.insert(cands[i].name()).second, "each candidate once: " + cands[i].name());
    if (i == 0) continue;
    require(known(cands[i].family) && !excluded(cands[i].family), "candidate of a kept family");
    require(valid_names().count(cands[i].name()) == 1, "a valid point: " + cands[i].name());
  }
  require(cands.size() == advised + 1, "the candidates are the advised points and the fallback");

  // The validated form round-trips (records and reports keep it).
  const Json j = a.to_json();
  require(valid_utf8(j.dump()), "advice JSON dumps");
  require(Advice::from_json(j).to_json() == j, "advice round-trips through JSON");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ac;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    // As the HTTP body.
    fuzz::require(valid_utf8(advisors::reply_text(input)), "the kept body is UTF-8");
    const advisors::ChatReply reply = advisors::chat_reply_content(input);
    if (reply.content) {
      fuzz::require(valid_utf8(*reply.content), "content is UTF-8");
      check_advice(advisors::content_advice(*reply.content, space(), kDefaultOrder, "openai"), "openai");
    } else {
      fuzz::require(!reply.why.empty() && reply.why.size() <= 400 && one_line(reply.why) && valid_utf8(reply.why),
                    "why: one short UTF-8 line: " + reply.why);
    }
    // As the message content of a well-formed completion (what is not UTF-8 replaced, as the
    // sender's JSON encoder would have to).
    const std::string content = advisors::reply_text(input, input.size());
    const std::string body =
        Json{{"choices", Json::array({{{"message", {{"role", "assistant"}, {"content", content}}}}})}}.dump();
    const advisors::ChatReply wrapped = advisors::chat_reply_content(body);
    fuzz::require(wrapped.content && *wrapped.content == content, "a well-formed completion's content is read back");
    check_advice(advisors::content_advice(content, space(), kDefaultOrder, "openai"), "openai");
  } catch (const Error& e) {
    fuzz::finding(std::string("reading a reply threw: ") + e.what());
  }
  return 0;
}
