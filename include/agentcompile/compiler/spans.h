#pragma once
// Fused spans: alternatives that implement several consecutive regions at once, the route
// graph's multi-region edges (MetaInfer's fused routes). The span so far is a layer's MLP,
// mlp_in + mlp_out of the same layer, run by cpu:mlp.fused on the CPU backend.
//
// Spans whose regions belong to the same classes form a span class, measured once like a region
// class: a RegionWork with `span_instances`, a signature of its own (region_signature of
// "span:mlp_in+mlp_out(<mlp_in shape key>;<mlp_out shape key>)", so the tuning DB keeps its
// candidates like a region's), and a space of the fallback (the reference composition of both
// regions) and the fused family. Spans are not advised: the order starts from the tile the
// separate regions' searches chose (order_span_candidates), and a span is kept only when it
// beats the separate regions' winners by the margin (decide_span).
#include <string>
#include <vector>

#include "agentcompile/compiler/route_graph.h"
#include "agentcompile/compiler/search.h"

namespace ac {

struct SpanWork {
  std::string name;          // "mlp_in+mlp_out"
  std::vector<size_t> parts;  // the span's regions in order: indices into FrontResult::work (same phase)
  RegionWork work;
};

// The layer-MLP span classes of the front's work, per phase; none unless the backend is cpu or
// when the fused family has no valid binding for the shapes.
std::vector<SpanWork> layer_mlp_spans(const Graph& g, const FrontResult& front, const std::string& backend);

// Fills span.work.ordered: the fallback, then the bindings whose tile (ROWS, TOKENS, KUNROLL) is
// the linear.blocked tile a part's search chose (THREADS nearest its THREADS first), then the
// rest in domain order. `searches[k]` is the search of front work k.
void order_span_candidates(SpanWork& span, const std::vector<RegionSearch>& searches);

// A span's selection, after search_region (which compared it with its own fallback, the
// reference composition): the fused route the span stands for must beat what the path would
// run without it, the separate regions' winners together (`separate_us` per instance), by
// max(margin, the search's noise). Its winner is the search's winner when fused (the tie rule
// applied), else the fastest correct fused candidate; otherwise the span keeps its fallback and
// adds no edge ("fallback: unprofitable against the separate regions ...").
void decide_span(RegionSearch& s, double separate_us, double margin);

// report.json spans[]: per span search its candidates and winner, the best fused time per
// instance against the separate regions' routes (the path's choice, or their cheapest unblocked
// edge), and whether the path took it and why (not).
Json span_report(const std::vector<SpanWork>& spans, const std::vector<RegionSearch>& searches, const RouteGraph& rg,
                 const RoutePath& path);
// report.md's "Fused spans" section (empty when there are none).
std::string span_markdown(const Json& spans);

}  // namespace ac
