#pragma once
// What /metrics reports, in Prometheus' text format: requests by how they finished, prompt and
// generated tokens, the scheduler's queue depth, running batch and prefix-cache hits, and
// histograms of the time to first token and of the time between tokens.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "agentcompile/runtime/scheduler.h"

namespace ac::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1) {}
  void observe(double v);
  // The _bucket, _sum and _count lines of `name`.
  void write(std::string& out, const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative); the last is +Inf
  double sum_ = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  // One generation request ended: finish_reason stop, length, cancelled or error.
  void request_done(const std::string& finish_reason, int64_t prompt_tokens, int64_t generated_tokens);
  // Seconds from a request's arrival to its first token, and between two of its tokens.
  void first_token(double seconds);
  void next_token(double seconds);
  // The text of /metrics; `sched` is null while the model loads.
  std::string render(const SchedulerCounters* sched) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> requests_;  // by finish_reason
  uint64_t prompt_tokens_ = 0, generated_tokens_ = 0;
  Histogram ttft_, itl_;
};

}  // namespace ac::server
