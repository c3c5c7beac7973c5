// The JSON-only prompt: a fixed system message stating the contract, and one user message that
// is a JSON document (summary, candidate space, measured history, reply schema).
#include <algorithm>

#include "agentcompile/compiler/advisor.h"
#include "agentcompile/core/hash.h"

namespace ac {

namespace {

constexpr const char* kSystem =
    "You advise the search of agentcompile, a compiler for LLM inference. The user message is one JSON "
    "document: a region of a decoder model (ops with symbolic shapes, dtypes, FLOPs, bytes moved, arithmetic "
    "intensity, roofline time on the target and the target's facts), the bounded candidate space for it "
    "(kernel families with finite parameter domains and the constraints a binding must meet) and candidates "
    "of the same region measured earlier with their speedup over the fallback route. Reply with exactly one "
    "JSON object that follows reply_schema, and nothing else. Your reply is search metadata only: it can "
    "reorder families, narrow parameter domains to subsets (listed in the order to try), exclude families "
    "and annotate risks. Names or values outside the space, code, and requests to change or skip validation "
    "are discarded. Every candidate is still compiled, checked against a reference and timed; the fastest "
    "correct one wins.";

// Contrastive history: the best and the worst measured candidates, and some failures.
Json history_json(const std::vector<MeasuredCandidate>& h) {
  std::vector<const MeasuredCandidate*> ok, failed;
  for (const auto& m : h) (m.status == "ok" ? ok : failed).push_back(&m);
  std::stable_sort(ok.begin(), ok.end(), [](const auto* a, const auto* b) { return a->speedup > b->speedup; });
  Json best = Json::array(), worst = Json::array(), fails = Json::array();
  const size_t nbest = std::min<size_t>(8, ok.size());
  for (size_t i = 0; i < nbest; ++i) best.push_back(ok[i]->to_json());
  for (size_t i = std::max(nbest, ok.size() >= 4 ? ok.size() - 4 : 0); i < ok.size(); ++i) worst.push_back(ok[i]->to_json());
  for (size_t i = 0; i < std::min<size_t>(4, failed.size()); ++i) fails.push_back(failed[i]->to_json());
  return {{"measured", h.size()},
          {"best", best},
          {"worst", worst},
          {"failed", fails},
          {"note", "speedup = fallback time / candidate time on this target; > 1 is faster than the fallback"}};
}

Json reply_schema() {
  const Json strings = {{"type", "array"}, {"items", {{"type", "string"}}}};
  const Json int_list = {{"type", "array"}, {"items", {{"type", "integer"}}}};
  Json props = Json::object();
  props["label"] = {{"type", "string"}, {"maxLength", kMaxLabelChars}, {"description", "what this region is, in a few words"}};
  props["family_priorities"] = strings;
  props["family_priorities"]["description"] = "family ids, most promising first";
  props["exclude_families"] = strings;
  props["exclude_families"]["description"] = "family ids not worth measuring (the fallback is always kept)";
  props["param_hints"] = {{"type", "object"},
                          {"description", "family id -> {parameter -> [values of its domain, most promising first]}"},
                          {"additionalProperties", {{"type", "object"}, {"additionalProperties", int_list}}}};
  Json risk_props = Json::object();
  risk_props["family"] = {{"type", "string"}};
  risk_props["risk"] = {{"enum", advice_risk_tags()}};
  risk_props["reason"] = {{"type", "string"}, {"maxLength", kMaxReasonChars}};
  props["risks"] = {{"type", "array"},
                    {"items", {{"type", "object"}, {"properties", risk_props}, {"required", {"risk", "reason"}}}}};
  return {{"type", "object"}, {"additionalProperties", false}, {"properties", props}};
}

}  // namespace

Json build_prompt(const AdvisorRequest& r) {
  Json region = r.summary->to_json();
  region.erase("instance_names");  // the count is enough
  const Json doc = {{"task", "order and narrow the candidate space of one region"},
                    {"region", region},
                    {"candidate_space", r.space->to_json()},
                    {"history", history_json(r.history)},
                    {"reply_schema", reply_schema()}};
  return Json::array({{{"role", "system"}, {"content", kSystem}}, {{"role", "user"}, {"content", doc.dump()}}});
}

std::string prompt_sha256(const Json& messages) { return sha256_hex(messages.dump()); }

}  // namespace ac
