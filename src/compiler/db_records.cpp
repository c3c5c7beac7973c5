// The tuning database's JSON records the compile reads back (db_records.h).
#include "compiler/db_records.h"

#include <cmath>

namespace ac {

Json ReferenceRun::to_json() const {
  Json top = Json::array();
  for (const Top2& t : top2) top.push_back(Json::array({t.first, t.second, double(t.margin)}));
  Json j = {{"top2", top}};
  if (profile) {
    j["prefill_ms"] = profile->prefill_ms;
    j["decode_ms"] = profile->decode_ms;
    j["per_token_us"] = profile->per_token_us;
    j["cost_us"] = profile->cost_us;
    j["profile_s"] = profile->profile_s;
    if (profile->noise) j["timing_noise"] = profile->noise->to_json();
  }
  return j;
}

namespace {

std::optional<double> figure(const Json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  const double v = j[key].get<double>();
  if (!std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

}  // namespace

std::optional<ReferenceRun> ReferenceRun::from_json(const std::string& text, int tokens, int64_t vocab) {
  const Json j = Json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("top2") || !j["top2"].is_array() || j["top2"].size() != size_t(std::max(tokens, 0)))
    return std::nullopt;
  ReferenceRun r;
  for (const Json& e : j["top2"]) {
    if (!e.is_array() || e.size() != 3 || !e[0].is_number_integer() || !e[1].is_number_integer() || !e[2].is_number())
      return std::nullopt;
    const int64_t a = e[0].get<int64_t>(), b = e[1].get<int64_t>();
    const double m = e[2].get<double>();
    if (a < 0 || a >= vocab || b < 0 || b >= vocab || !std::isfinite(m) || m < 0) return std::nullopt;
    r.top2.push_back({int32_t(a), int32_t(b), float(m)});
  }
  const auto pre = figure(j, "prefill_ms"), dec = figure(j, "decode_ms"), tok = figure(j, "per_token_us"),
             cost = figure(j, "cost_us");
  if (pre && dec && tok && cost && *cost > 0) {
    ReferenceProfile p{*pre, *dec, *tok, *cost, figure(j, "profile_s").value_or(0), std::nullopt};
    if (j.contains("timing_noise")) p.noise = TimingNoise::from_json(j["timing_noise"]);
    r.profile = p;
  }
  return r;
}

std::optional<Json> step_alternative_from_json(const std::string& text, const std::string& ms_key) {
  const Json j = Json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("status") || !j["status"].is_string()) return std::nullopt;
  if (j.contains("chain_ms")) {
    if (!figure(j, "chain_ms") || !figure(j, ms_key.c_str()) || !j.contains("variant") || !j["variant"].is_string() ||
        !j.contains("timings") || !j["timings"].is_number_integer() || j["timings"].get<int64_t>() < 0 ||
        j["timings"].get<int64_t>() > 1000000)
      return std::nullopt;
  }
  auto int_in = [&](const char* key, int64_t lo, int64_t hi) {
    return !j.contains(key) || (j[key].is_number_integer() && j[key].get<int64_t>() >= lo && j[key].get<int64_t>() <= hi);
  };
  if (!int_in("smem_carveout", 0, 100) || !int_in("attn_o", 0, 1)) return std::nullopt;
  return j;
}

}  // namespace ac
