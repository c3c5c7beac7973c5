#include "agentcompile/bench/peers.h"

#include <algorithm>

#include "agentcompile/core/error.h"
#include "bench/stats.h"

namespace ac::bench {

namespace {

const Json& array_field(const Json& obj, const std::string& subject, const std::string& key) {
  const Json& a = json_require(obj, subject, key);
  if (!a.is_array()) throw_input(subject, key + ": expected an array, got " + json_brief(a));
  return a;
}

std::vector<int32_t> id_list(const Json& a, const std::string& subject, const std::string& key) {
  if (!a.is_array()) throw_input(subject, key + ": expected an array of token ids, got " + json_brief(a));
  std::vector<int32_t> ids;
  ids.reserve(a.size());
  for (const Json& v : a) {
    auto id = json_as_int(v, 0, INT32_MAX);
    if (!id) throw_input(subject, key + ": " + json_brief(v) + " is not a token id");
    ids.push_back(int32_t(*id));
  }
  return ids;
}

std::vector<double> number_list(const Json& a, const std::string& subject, const std::string& key) {
  if (!a.is_array()) throw_input(subject, key + ": expected an array of numbers, got " + json_brief(a));
  std::vector<double> out;
  for (const Json& v : a) {
    if (!v.is_number()) throw_input(subject, key + ": " + json_brief(v) + " is not a number");
    out.push_back(v.get<double>());
  }
  return out;
}

std::vector<std::vector<int32_t>> rows(const Json& obj, const std::string& subject, const std::string& key,
                                       int64_t batch) {
  const Json& a = array_field(obj, subject, key);
  if (int64_t(a.size()) != batch)
    throw_input(subject, key + ": " + std::to_string(a.size()) + " rows for a batch of " + std::to_string(batch));
  std::vector<std::vector<int32_t>> out;
  for (size_t r = 0; r < a.size(); ++r) out.push_back(id_list(a[r], subject, key + "[" + std::to_string(r) + "]"));
  return out;
}

}  // namespace

const PeerRun* PeerFile::find_run(int64_t prompt, int64_t gen, int64_t batch) const {
  for (const PeerRun& r : runs)
    if (r.prompt == prompt && r.gen == gen && r.batch == batch) return &r;
  return nullptr;
}

PeerFile load_peer_file(const fs::path& path) {
  const std::string subject = path.string();
  const Json j = parse_json_strict(read_file(path, size_t(256) << 20), subject);
  if (!j.is_object()) throw_input(subject, "not a peer record (expected a JSON object)");
  PeerFile p;
  p.path = subject;
  p.peer = json_string(j, subject, "peer");
  p.model = json_string(j, subject, "model");
  if (p.peer.empty() || p.model.empty()) throw_input(subject, "peer and model must not be empty");
  p.parameters = json_opt_int(j, subject, "parameters", 0, INT64_MAX).value_or(-1);
  if (j.contains("environment")) p.environment = j["environment"];
  const Json& runs = array_field(j, subject, "runs");
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string s = subject + ": runs[" + std::to_string(i) + "]";
    const Json& rj = runs[i];
    if (!rj.is_object()) throw_input(s, "expected an object");
    PeerRun r;
    r.workload = json_opt_string(rj, s, "workload").value_or("");
    r.prompt = json_int(rj, s, "prompt", 1, 1 << 20);
    r.gen = json_int(rj, s, "gen", 1, 1 << 20);
    r.batch = json_int(rj, s, "batch", 1, 64);
    r.prompts = rows(rj, s, "prompts", r.batch);
    for (const auto& pr : r.prompts)
      if (int64_t(pr.size()) != r.prompt)
        throw_input(s, "prompts: a row of " + std::to_string(pr.size()) + " ids for a prompt of " + std::to_string(r.prompt));
    r.tokens = rows(rj, s, "tokens", r.batch);
    r.prefill_ms = number_list(array_field(rj, s, "prefill_ms"), s, "prefill_ms");
    r.decode_ms = number_list(array_field(rj, s, "decode_ms"), s, "decode_ms");
    if (r.prefill_ms.empty() || r.decode_ms.empty()) throw_input(s, "prefill_ms and decode_ms need at least one sample");
    for (double v : r.prefill_ms) if (!(v > 0)) throw_input(s, "prefill_ms: samples must be positive");
    for (double v : r.decode_ms) if (!(v > 0)) throw_input(s, "decode_ms: samples must be positive");
    r.prefill_median_ms = median(r.prefill_ms);
    r.decode_median_ms = median(r.decode_ms);
    p.runs.push_back(std::move(r));
  }
  if (j.contains("references")) {
    const Json& refs = array_field(j, subject, "references");
    for (size_t i = 0; i < refs.size(); ++i) {
      const std::string s = subject + ": references[" + std::to_string(i) + "]";
      const Json& rj = refs[i];
      if (!rj.is_object()) throw_input(s, "expected an object");
      Reference ref;
      ref.source = json_opt_string(rj, s, "source").value_or(p.peer);
      ref.prompt = id_list(json_require(rj, s, "prompt"), s, "prompt");
      ref.tokens = id_list(json_require(rj, s, "tokens"), s, "tokens");
      ref.margins = number_list(json_require(rj, s, "margins"), s, "margins");
      if (rj.contains("second")) ref.second = id_list(rj["second"], s, "second");
      if (ref.margins.size() != ref.tokens.size() || (!ref.second.empty() && ref.second.size() != ref.tokens.size()))
        throw_input(s, "tokens, margins and second must have the same length");
      for (double m : ref.margins)
        if (!(m >= 0)) throw_input(s, "margins: a top-2 margin must be >= 0");
      p.references.push_back(std::move(ref));
    }
  }
  return p;
}

}  // namespace ac::bench
