#include "agentcompile/server/metrics.h"

#include <algorithm>
#include <cstdio>

namespace ac::server {

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void family(std::string& out, const std::string& name, const char* type, const char* help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

// A family of one unlabelled sample.
void sample(std::string& out, const std::string& name, const char* type, const char* help, int64_t value) {
  family(out, name, type, help);
  out += name + " " + std::to_string(value) + "\n";
}

}  // namespace

void Histogram::observe(double v) {
  const size_t i = size_t(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  ++counts_[i];
  sum_ += v;
}

void Histogram::write(std::string& out, const std::string& name) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + num(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  cumulative += counts_.back();
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cumulative) + "\n";
  out += name + "_sum " + num(sum_) + "\n";
  out += name + "_count " + std::to_string(cumulative) + "\n";
}

ServerMetrics::ServerMetrics()
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}),
      itl_({0.0005, 0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1,
            2.5}) {
  for (const char* r : {"stop", "length", "cancelled", "error"}) requests_[r] = 0;
}

void ServerMetrics::request_done(const std::string& finish_reason, int64_t prompt_tokens, int64_t generated_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[finish_reason];
  prompt_tokens_ += uint64_t(prompt_tokens);
  generated_tokens_ += uint64_t(generated_tokens);
}

void ServerMetrics::first_token(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ttft_.observe(seconds);
}

void ServerMetrics::next_token(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  itl_.observe(seconds);
}

std::string ServerMetrics::render(const SchedulerCounters* sched) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  family(out, "agentcompile_requests_total", "counter", "Generation requests finished, by finish reason");
  for (const auto& [reason, n] : requests_)
    out += "agentcompile_requests_total{finish_reason=\"" + reason + "\"} " + std::to_string(n) + "\n";
  sample(out, "agentcompile_prompt_tokens_total", "counter", "Prompt tokens of finished requests", int64_t(prompt_tokens_));
  sample(out, "agentcompile_generation_tokens_total", "counter", "Tokens generated for finished requests",
         int64_t(generated_tokens_));
  const SchedulerCounters c = sched ? *sched : SchedulerCounters{};
  sample(out, "agentcompile_queue_depth", "gauge", "Requests waiting for a KV slot", c.waiting);
  sample(out, "agentcompile_running_requests", "gauge", "Requests in the running batch", c.running);
  sample(out, "agentcompile_prefix_cache_hits_total", "counter", "Requests that reused part of a KV slot's cache",
         c.prefix_hits);
  sample(out, "agentcompile_prefix_cache_reused_tokens_total", "counter",
         "Prompt tokens taken from a KV slot's cache instead of prefilled", c.reused_tokens);
  sample(out, "agentcompile_prefill_tokens_total", "counter", "Prompt tokens prefilled", c.prefilled_tokens);
  sample(out, "agentcompile_steps_total", "counter", "Batched forward steps run", c.steps);
  family(out, "agentcompile_time_to_first_token_seconds", "histogram", "Seconds from a request's arrival to its first token");
  ttft_.write(out, "agentcompile_time_to_first_token_seconds");
  family(out, "agentcompile_inter_token_latency_seconds", "histogram", "Seconds between two tokens of one request");
  itl_.write(out, "agentcompile_inter_token_latency_seconds");
  return out;
}

}  // namespace ac::server
