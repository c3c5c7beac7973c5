// A candidate space as JSON (the advisor's prompt, `advise --json`, report.json). Apart from
// space.cpp, which the advice validation links alone (fuzz/), since this needs the region names.
#include "agentcompile/tuning/space.h"

namespace ac {

Json CandidateSpace::to_json() const {
  Json fams = Json::array();
  for (const auto& f : families) {
    Json params = Json::array();
    for (const auto& p : f.params) params.push_back({{"name", p.name}, {"values", p.values}});
    Json j = {{"id", f.id},
              {"route", std::string(family_route_name(f.route))},
              {"applies_to", f.applies_to},
              {"params", params},
              {"rules", f.rules},
              {"raw_points", f.raw_points},
              {"valid_points", f.valid_points},
              {"description", f.description}};
    if (!f.types.empty()) j["types"] = f.types;
    fams.push_back(std::move(j));
  }
  Json j = {{"signature", signature},
            {"region", std::string(region_kind_name(kind))},
            {"phase", std::string(phase_name(phase))},
            {"backend", backend},
            {"size", size()},
            {"families", fams}};
  if (!notes.empty()) j["notes"] = notes;
  return j;
}

}  // namespace ac
