#pragma once
// Advice: search metadata for one region's candidate space, from an advisor's JSON reply,
// validated against the space. Advice can only reorder families, narrow parameter domains to
// subsets (in preference order), exclude families and annotate risks. Everything else is dropped
// and each drop is recorded with its reason: unknown keys, families, parameters or values, wrong
// types, oversized replies, code, requests to skip validation. A narrowing that leaves only the
// fallback route is undone (the full space is kept). The fallback is always kept and measured
// first. Reply and validated forms: docs/compiler.md ("Advice").
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agentcompile/compiler/candidate_space.h"
#include "agentcompile/core/json.h"

namespace ac {

constexpr size_t kMaxAdviceBytes = 64 * 1024;  // a reply above this is rejected whole
constexpr size_t kMaxAdviceList = 64;          // entries in any list of the reply
constexpr size_t kMaxLabelChars = 120;
constexpr size_t kMaxReasonChars = 300;

// The risk tags an advice may use.
const std::vector<std::string>& advice_risk_tags();

struct Rejection {
  std::string path;    // where in the reply: "param_hints.cpu:linear.blocked.ROWS[2]"
  std::string value;   // the offending value, cut for display
  std::string reason;
  Json to_json() const;
};

struct RiskNote {
  std::string family;  // "" for the whole region
  std::string risk;    // one of advice_risk_tags()
  std::string reason;
  Json to_json() const;
};

struct Advice {
  std::string source;                      // "heuristic", "openai", "replay", "none"
  bool parsed = false;                     // the reply was a JSON object within the size limit
  std::string label;                       // semantic label of the region
  std::vector<std::string> family_order;   // every kept non-fallback family, preferred first
  std::map<std::string, std::vector<SpaceParam>> narrowed;  // family -> hinted params (subsets, ordered)
  std::vector<std::string> excluded;       // families the advice removed
  std::vector<RiskNote> risks;
  std::vector<Rejection> rejections;
  bool reverted = false;                   // the narrowing left nothing; the full space is kept
  Json to_json() const;                    // the validated advice (docs/compiler.md)
  static Advice from_json(const Json& j);  // inverse of to_json, for reports and records
};

// Validates `reply` (the advisor's JSON text) against `space`. Families the reply does not rank
// follow in `default_order` (then in space order). Never throws for a bad reply.
Advice validate_advice(std::string_view reply, const CandidateSpace& space,
                       const std::vector<std::string>& default_order, const std::string& source);
// The same for an already parsed reply.
Advice validate_advice_json(const Json& reply, const CandidateSpace& space,
                            const std::vector<std::string>& default_order, const std::string& source);

// No advice: space order, no hints.
Advice empty_advice(const CandidateSpace& space, const std::string& source);

// The candidates to try, in order: the fallback, then the first binding of every family in
// family order, then the remaining bindings family by family (hinted domains in hint order).
std::vector<Candidate> ordered_candidates(const CandidateSpace& space, const Advice& advice);

}  // namespace ac
