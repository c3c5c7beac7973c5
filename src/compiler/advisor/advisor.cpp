// Advisor plumbing: configuration, records, and the none / heuristic / replay advisors.
#include <algorithm>
#include <cstdlib>

#include "agentcompile/compiler/advisor.h"
#include "agentcompile/core/error.h"
#include "agentcompile/tokenizer/utf8.h"
#include "compiler/advisor/advisors.h"
#include "compiler/advisor/llm_client.h"

namespace ac {

namespace {

constexpr size_t kMaxRecordBytes = 64u << 20;

class NoneAdvisor final : public Advisor {
 public:
  std::string name() const override { return "none"; }

 protected:
  AdviceResult answer(const AdvisorRequest& r) override {
    AdviceResult out;
    out.advice = empty_advice(*r.space, "none");
    out.exchange = advisors::exchange_for(r, "none");
    out.exchange.raw_reply = "{}";
    out.exchange.status = "ok";
    out.exchange.advice = out.advice.to_json();
    return out;
  }
};

class HeuristicAdvisor final : public Advisor {
 public:
  std::string name() const override { return "heuristic"; }

 protected:
  AdviceResult answer(const AdvisorRequest& r) override { return heuristic_advice(r); }
};

// Re-validates the recorded replies against today's space, with the default order the recorded
// advisor used, so an unchanged space gives the same advice.
class ReplayAdvisor final : public Advisor {
 public:
  explicit ReplayAdvisor(const fs::path& file) : record_(AdviceRecord::load(file)), file_(file) {}
  std::string name() const override { return "replay"; }

 protected:
  AdviceResult answer(const AdvisorRequest& r) override {
    AdviceResult h = heuristic_advice(r);
    const AdviceExchange* ex = record_.find(r.summary->signature, r.space->backend);
    const std::string where = std::string(region_kind_name(r.summary->kind)) + " " +
                              std::string(phase_name(r.summary->phase)) + " " + r.summary->signature;
    if (ex == nullptr) {
      h.fell_back = true;
      h.note = "replay: " + file_.string() + " has no exchange for " + where + "; heuristic advice used";
      h.exchange.advisor = "replay";
      h.exchange.status = "error: not recorded";
      return h;
    }
    AdviceResult out;
    out.exchange = *ex;
    out.exchange.advisor = "replay";
    const std::string prompt = prompt_sha256(build_prompt(r));
    const bool llm_reply = ex->advisor == "openai" && (ex->status == "ok" || ex->status.rfind("error: unusable reply", 0) == 0);
    if (llm_reply) {
      AdviceResult v = advisors::advice_from_content(r, ex->raw_reply, "replay:openai");
      out.advice = std::move(v.advice);
      out.fell_back = v.fell_back;
      out.note = v.note;
    } else if (ex->status != "ok") {
      out.advice = h.advice;
      out.fell_back = true;
      out.note = "replay: the recorded " + ex->advisor + " exchange failed (" + ex->status + "); heuristic advice, as recorded";
    } else if (ex->advisor == "none") {
      out.advice = empty_advice(*r.space, "replay:none");
    } else {
      out.advice = validate_advice(ex->raw_reply, *r.space, heuristic_family_order(r), "replay:" + ex->advisor);
    }
    if (prompt != ex->prompt_sha256)
      out.note += std::string(out.note.empty() ? "" : "; ") + "replay: the prompt changed since the recording (" +
                  ex->prompt_sha256.substr(0, 12) + " -> " + prompt.substr(0, 12) + "); the reply was re-validated";
    out.exchange.advice = out.advice.to_json();
    return out;
  }

 private:
  AdviceRecord record_;
  fs::path file_;
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

namespace advisors {

AdviceExchange exchange_for(const AdvisorRequest& r, const std::string& advisor) {
  AdviceExchange e;
  e.advisor = advisor;
  e.signature = r.summary->signature;
  e.region = std::string(region_kind_name(r.summary->kind));
  e.phase = std::string(phase_name(r.summary->phase));
  e.backend = r.space->backend;
  e.prompt_sha256 = prompt_sha256(build_prompt(r));
  return e;
}

}  // namespace advisors

Json MeasuredCandidate::to_json() const {
  Json j = {{"family", family}, {"params", params}, {"status", status}};
  if (status == "ok") {
    j["time_us"] = time_us;
    j["speedup"] = speedup;
  }
  if (!detail.empty()) j["detail"] = detail;
  return j;
}

Json AdviceExchange::to_json() const {
  Json j = {{"advisor", advisor},     {"signature", signature}, {"region", region},
            {"phase", phase},         {"backend", backend},     {"prompt_sha256", prompt_sha256},
            {"raw_reply", raw_reply}, {"status", status},       {"attempts", attempts},
            {"elapsed_ms", elapsed_ms}, {"advice", advice}};
  if (!llm_model.empty()) j["llm_model"] = llm_model;
  return j;
}

AdviceExchange AdviceExchange::from_json(const Json& j, const std::string& subject) {
  if (!j.is_object()) throw_input(subject, "an exchange is not an object");
  AdviceExchange e;
  e.advisor = json_string(j, subject, "advisor");
  e.signature = json_string(j, subject, "signature");
  e.region = json_opt_string(j, subject, "region").value_or("");
  e.phase = json_opt_string(j, subject, "phase").value_or("");
  e.backend = json_string(j, subject, "backend");
  e.prompt_sha256 = json_opt_string(j, subject, "prompt_sha256").value_or("");
  e.raw_reply = json_opt_string(j, subject, "raw_reply").value_or("");
  e.status = json_string(j, subject, "status");
  e.attempts = int(json_opt_int(j, subject, "attempts", 0, 1000).value_or(0));
  e.elapsed_ms = json_opt_number(j, subject, "elapsed_ms").value_or(0.0);
  e.llm_model = json_opt_string(j, subject, "llm_model").value_or("");
  if (auto it = j.find("advice"); it != j.end()) e.advice = *it;
  return e;
}

Json AdviceRecord::to_json() const {
  Json ex = Json::array();
  for (const auto& e : exchanges) ex.push_back(e.to_json());
  Json j = {{"format", "agentcompile-advice-record"}, {"version", 1}, {"advisor", advisor}, {"exchanges", ex}};
  if (!llm_model.empty()) j["llm_model"] = llm_model;
  return j;
}

AdviceRecord AdviceRecord::load(const fs::path& path) {
  const std::string subject = path.string();
  const Json j = parse_json_strict(read_file(path, kMaxRecordBytes), subject);
  if (!j.is_object() || j.value("format", "") != "agentcompile-advice-record")
    throw_input(subject, "not an agentcompile advice record (format \"agentcompile-advice-record\")");
  if (json_int(j, subject, "version", 1, 1) != 1) throw_input(subject, "unsupported version");
  AdviceRecord r;
  r.advisor = json_string(j, subject, "advisor");
  r.llm_model = json_opt_string(j, subject, "llm_model").value_or("");
  const Json& ex = json_require(j, subject, "exchanges");
  if (!ex.is_array()) throw_input(subject, "exchanges: not an array");
  for (size_t i = 0; i < ex.size(); ++i)
    r.exchanges.push_back(AdviceExchange::from_json(ex[i], subject + ": exchanges[" + std::to_string(i) + "]"));
  return r;
}

void AdviceRecord::save(const fs::path& path) const { write_file_atomic(path, to_json().dump(2) + "\n"); }

const AdviceExchange* AdviceRecord::find(const std::string& signature, const std::string& backend) const {
  for (const auto& e : exchanges)
    if (e.signature == signature && e.backend == backend) return &e;
  return nullptr;
}

AdvisorConfig advisor_config(const std::string& spec, const std::string& url_flag, const std::string& model_flag) {
  AdvisorConfig c;
  if (spec == "heuristic" || spec == "none" || spec == "openai") {
    c.kind = spec;
  } else if (spec.rfind("replay:", 0) == 0 && spec.size() > 7) {
    c.kind = "replay";
    c.replay_file = spec.substr(7);
  } else {
    throw_input("--advisor", json_quote(spec) + " is not heuristic, openai, replay:FILE or none");
  }
  c.llm_url = url_flag.empty() ? env("AGENTCOMPILE_LLM_URL") : url_flag;
  c.llm_model = model_flag.empty() ? env("AGENTCOMPILE_LLM_MODEL") : model_flag;
  std::string key_from;
  for (const char* var : kApiKeyVariables) {
    c.api_key = env(var);
    if (!c.api_key.empty()) {
      key_from = var;
      break;
    }
  }
  if (c.kind == "openai") {
    // The key goes into a header line: a stray newline would end it.
    for (unsigned char ch : c.api_key)
      if (ch <= 0x20 || ch >= 0x7f) throw_input(key_from, "the API key holds spaces, control or non-ASCII characters");
    if (c.llm_url.empty()) throw_input("--advisor openai", "needs --llm-url or AGENTCOMPILE_LLM_URL");
    if (c.llm_model.empty()) throw_input("--advisor openai", "needs --llm-model or AGENTCOMPILE_LLM_MODEL");
    // It goes into the request and every record as a JSON string.
    if (!utf8_valid(c.llm_model) || std::any_of(c.llm_model.begin(), c.llm_model.end(), [](unsigned char ch) { return ch < 0x20; }))
      throw_input("--llm-model", json_quote(c.llm_model) + ": not valid UTF-8 or holds control characters");
    std::string why;
    if (llm::chat_completions_url(c.llm_url, &why).empty()) throw_input("--llm-url", json_quote(c.llm_url) + ": " + why);
  }
  return c;
}

AdviceResult Advisor::advise(const AdvisorRequest& request) {
  const auto t0 = std::chrono::steady_clock::now();
  AdviceResult r = answer(request);
  ++tally_.asked;
  tally_.wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r.fell_back && tally_.fell_back++ == 0) {
    // The note says why and then what was done about it; the tally keeps the why.
    tally_.first_failure = r.note;
    const std::string tail = "; heuristic order used";
    if (r.note.size() >= tail.size() && r.note.compare(r.note.size() - tail.size(), tail.size(), tail) == 0)
      tally_.first_failure.resize(r.note.size() - tail.size());
  }
  return r;
}

Json AdvisorTally::to_json(const std::string& advisor) const {
  std::string source = advisor;
  if (fell_back > 0 && fell_back == asked) source = "heuristic (fallback)";
  else if (fell_back > 0) source = advisor + ", heuristic (fallback) for " + std::to_string(fell_back) + " of " + std::to_string(asked);
  return {{"advisor", advisor}, {"requests", asked}, {"fell_back", fell_back}, {"source", source},
          {"reason", first_failure}, {"wait_s", wait_s}};
}

std::string AdvisorTally::summary(const std::string& advisor) const {
  if (fell_back == 0) return "";
  return "advisor " + advisor + ": " + std::to_string(fell_back) + " of " + std::to_string(asked) +
         " requests fell back to the heuristic advice (first: " + first_failure + ")";
}

std::unique_ptr<Advisor> make_advisor(const AdvisorConfig& c) {
  if (c.kind == "heuristic") return std::make_unique<HeuristicAdvisor>();
  if (c.kind == "none") return std::make_unique<NoneAdvisor>();
  if (c.kind == "replay") return std::make_unique<ReplayAdvisor>(c.replay_file);
  if (c.kind == "openai") return advisors::make_openai(c);
  throw_input("--advisor", json_quote(c.kind) + " is not heuristic, openai, replay:FILE or none");
}

}  // namespace ac
