// Candidate spaces: a region's fallback, then the families its backend offers (tuning contract:
// Backend::families), each with its domains and the constraint every binding must meet for this
// region's shapes and the target. Names, lookups and the enumeration of bindings are in
// tuning/space.cpp.
#include "agentcompile/compiler/candidate_space.h"

#include "agentcompile/core/error.h"
#include "agentcompile/tuning/backend.h"

namespace ac {

CandidateSpace build_candidate_space(const Graph& g, const Partition& part, const RegionSummary& s,
                                     const std::string& backend) {
  if (backend != "cpu" && backend != "cuda") throw_input("--backend", json_quote(backend) + " is not cpu or cuda");
  CandidateSpace sp;
  sp.signature = s.signature;
  sp.kind = s.kind;
  sp.phase = s.phase;
  sp.backend = backend;
  sp.families.push_back(make_fallback(s, backend));
  const Backend* b = find_backend(backend);
  if (!b) {
    sp.notes.push_back("this build has no " + std::string(backend == "cuda" ? "CUDA" : backend) +
                       " backend: only the fallback route is listed");
    return sp;
  }
  for (FamilySpace& f : b->families(g, part, s, s.target, &sp.notes)) sp.families.push_back(std::move(f));
  return sp;
}

}  // namespace ac
