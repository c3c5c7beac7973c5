#pragma once
// Advisors: who orders and narrows a region's candidate space. All of them answer with a reply
// in the advice schema (advice.h), which is validated the same way whatever its origin:
//   heuristic  deterministic rules from the roofline, the hardware and the measured history;
//   openai     any OpenAI-compatible /v1/chat/completions endpoint (HTTP or HTTPS), JSON-only
//              prompt built from the summary, the space and the measured history (contrastive:
//              the best and worst measured candidates with their speedups);
//   replay     the replies of a recorded run (--record FILE), re-validated;
//   none       no advice: space order.
// An advisor never fails a compile: when it cannot answer (unreachable, slow, HTTP error,
// garbage, oversized) the heuristic advice is used and the result says so (fell_back, note).
// Every exchange is recorded (prompt hash, raw reply, validated advice) so a run can be replayed.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/compiler/advice.h"
#include "agentcompile/compiler/candidate_space.h"
#include "agentcompile/tuning/summary.h"
#include "agentcompile/core/fs.h"
#include "agentcompile/core/json.h"

namespace ac {

// One measured candidate of the same region signature (issue 7 fills these from its tuning DB).
struct MeasuredCandidate {
  std::string family;     // FamilySpace::id
  ParamPoint params;
  std::string status;     // "ok", or the stage that failed: "constraints", "compile", "correctness", "timing"
  double time_us = 0;     // median time when ok
  double speedup = 0;     // fallback time / time when ok
  std::string detail;     // the failure reason, short
  Json to_json() const;
};

struct AdvisorRequest {
  const RegionSummary* summary = nullptr;
  const CandidateSpace* space = nullptr;
  std::vector<MeasuredCandidate> history;  // may be empty
};

struct AdviceExchange {
  std::string advisor;        // "heuristic", "openai", "replay", "none"
  std::string llm_model;      // openai only
  std::string signature, region, phase, backend;
  std::string prompt_sha256;  // of the prompt messages (build_prompt)
  std::string raw_reply;      // the reply text as received (LLM message content; heuristic JSON)
  std::string status;         // "ok" or "error: <why>"
  int attempts = 0;
  double elapsed_ms = 0;
  Json advice;                // the validated advice (Advice::to_json)
  Json to_json() const;
  static AdviceExchange from_json(const Json& j, const std::string& subject);
};

struct AdviceResult {
  Advice advice;
  AdviceExchange exchange;
  bool fell_back = false;  // the advisor could not answer; the heuristic advice is used
  std::string note;        // why, or what else the report should say
};

// What an advisor did over a run: compile's report and the one line the CLI prints when it fell
// back.
struct AdvisorTally {
  size_t asked = 0;           // requests
  size_t fell_back = 0;       // of them answered by the heuristic instead
  std::string first_failure;  // why the first fallback happened (its note)
  double wait_s = 0;          // time spent answering (for openai: mostly waiting for the endpoint)
  Json to_json(const std::string& advisor) const;
  // "" when nothing fell back, else one line: how many requests fell back and the first reason.
  std::string summary(const std::string& advisor) const;
};

class Advisor {
 public:
  virtual ~Advisor() = default;
  virtual std::string name() const = 0;
  // The advice for one request, never an exception for what the endpoint did; tallied.
  AdviceResult advise(const AdvisorRequest& request);
  const AdvisorTally& tally() const { return tally_; }

 protected:
  virtual AdviceResult answer(const AdvisorRequest& request) = 0;

 private:
  AdvisorTally tally_;
};

struct AdvisorConfig {
  std::string kind = "heuristic";  // heuristic | openai | replay | none
  fs::path replay_file;
  std::string llm_url, llm_model, api_key;
  double connect_timeout_s = 5.0;
  double read_timeout_s = 30.0;    // per read
  double total_timeout_s = 60.0;   // per attempt, body included
  double request_timeout_s = 90.0; // per request: every attempt and backoff included
  int max_attempts = 3;            // refused connections, 429 and 5xx are retried; timeouts are not
  double backoff_s = 0.5;          // doubled after each failed attempt
  size_t max_response_bytes = 256 * 1024;
  int max_consecutive_failures = 2;  // then the remaining regions go straight to the heuristic
  // When set (compile: its advisor share of --budget), no request waits past it, and the requests
  // after it get the heuristic advice; deadline_what names it in the notes.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  std::string deadline_what;
};

// The environment variables the API key is read from, first set (non-empty) one first.
inline constexpr const char* kApiKeyVariables[] = {"AGENTCOMPILE_LLM_API_KEY", "OPENAI_API_KEY"};

// From --advisor heuristic|openai|replay:FILE|none, --llm-url, --llm-model and the environment
// (AGENTCOMPILE_LLM_URL, AGENTCOMPILE_LLM_MODEL; flags win; the key from kApiKeyVariables).
// BadInput for an unknown advisor, openai without a URL or model, or a key with spaces or
// control characters.
AdvisorConfig advisor_config(const std::string& spec, const std::string& url_flag, const std::string& model_flag);
std::unique_ptr<Advisor> make_advisor(const AdvisorConfig& config);

// The JSON-only chat messages sent to an LLM for this request ([system, user]).
Json build_prompt(const AdvisorRequest& request);
std::string prompt_sha256(const Json& messages);

// The heuristic's reply (advice schema) and its family order.
Json heuristic_reply(const AdvisorRequest& request);
std::vector<std::string> heuristic_family_order(const AdvisorRequest& request);
// The heuristic advice, validated, with its exchange.
AdviceResult heuristic_advice(const AdvisorRequest& request);

// A recorded run: every exchange, in order.
struct AdviceRecord {
  std::string advisor;
  std::string llm_model;
  std::vector<AdviceExchange> exchanges;
  Json to_json() const;
  static AdviceRecord load(const fs::path& path);  // BadInput naming the file on any defect
  void save(const fs::path& path) const;           // atomically
  // The exchange for a region signature on a backend (null when none).
  const AdviceExchange* find(const std::string& signature, const std::string& backend) const;
};

}  // namespace ac
