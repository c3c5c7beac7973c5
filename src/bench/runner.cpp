#include "bench/runner.h"

#include <cmath>

#include "agentcompile/core/error.h"
#include "agentcompile/runtime/engine.h"
#include "agentcompile/runtime/sampler.h"
#include "bench/stats.h"

namespace ac::bench {

namespace {

void check_tokens(const std::vector<int32_t>& out, size_t rows) {
  if (out.size() != rows) throw_internal("bench", "the backend returned " + std::to_string(out.size()) + " tokens for " +
                                                      std::to_string(rows) + " rows");
  for (int32_t t : out)
    if (t < 0) throw_internal("bench", "the logits hold NaN or Inf");
}

std::vector<int32_t> pick(Executor& ex, size_t rows) {
  std::vector<int32_t> out;
  if (!ex.argmax_rows(out)) {
    out.clear();
    for (size_t r = 0; r < rows; ++r) out.push_back(argmax(ex.logits() + int64_t(r) * ex.vocab_size(), ex.vocab_size()));
  }
  check_tokens(out, rows);
  return out;
}

// Prefill of every row's prompt in one step.
StepBatch prefill_step(const std::vector<std::vector<int32_t>>& prompts) {
  StepBatch st;
  for (size_t r = 0; r < prompts.size(); ++r) {
    for (size_t i = 0; i < prompts[r].size(); ++i) {
      st.tokens.push_back(prompts[r][i]);
      st.positions.push_back(int32_t(i));
      st.slots.push_back(int32_t(r));
    }
    st.logit_rows.push_back(int32_t(st.tokens.size()) - 1);
  }
  return st;
}

// One decode step: row r's token at positions[r] of slot r.
StepBatch decode_step(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions) {
  StepBatch st;
  st.tokens = tokens;
  for (size_t r = 0; r < tokens.size(); ++r) {
    st.positions.push_back(positions[r]);
    st.slots.push_back(int32_t(r));
    st.logit_rows.push_back(int32_t(r));
  }
  return st;
}

}  // namespace

RunOut run_greedy(Executor& ex, const ModelConfig& cfg, const std::vector<std::vector<int32_t>>& prompts, int64_t gen) {
  RunOut out;
  if (prompts.size() == 1) {
    GenerateOptions g;
    g.max_tokens = gen;
    g.ignore_eos = true;
    GenerateResult r = generate(ex, cfg, prompts[0], g, nullptr);
    out.tokens = {r.tokens};
    out.prefill_ms = r.prefill_ms;
    out.step_ms = r.decode_ms;
    return out;
  }
  const size_t rows = prompts.size();
  out.tokens.assign(rows, {});
  auto t0 = Clock::now();
  ex.forward(prefill_step(prompts));
  std::vector<int32_t> next = pick(ex, rows);
  out.prefill_ms = ms_since(t0);
  // Each row continues at its own prompt's length (the rows may differ: a ragged batch).
  std::vector<int32_t> pos;
  for (const auto& p : prompts) pos.push_back(int32_t(p.size()));
  auto advance = [&pos] {
    const std::vector<int32_t> now = pos;
    for (int32_t& p : pos) ++p;
    return now;
  };
  for (size_t r = 0; r < rows; ++r) out.tokens[r].push_back(next[r]);
  if (gen <= 1) return out;
  // As generate: the host one step behind the device (Executor::decode_ahead).
  DecodeAheadScope ahead(ex);
  auto t1 = Clock::now();
  ex.decode_ahead(decode_step(next, advance()), false);
  int64_t enqueued = 1;  // decode steps enqueued: they give tokens 1 .. enqueued
  for (int64_t s = 1; s < gen; ++s) {
    if (enqueued < gen - 1) {
      ex.decode_ahead(decode_step(next, advance()), true);
      ++enqueued;
    }
    ex.next_greedy(next);
    check_tokens(next, rows);
    out.step_ms.push_back(ms_since(t1));
    t1 = Clock::now();
    for (size_t r = 0; r < rows; ++r) out.tokens[r].push_back(next[r]);
  }
  return out;
}

std::vector<std::vector<int32_t>> teacher_forced_choices(Executor& ex, const std::vector<int32_t>& prompt,
                                                         const std::vector<int32_t>& reference, int n, int64_t batch) {
  const size_t rows = size_t(batch);
  std::vector<std::vector<int32_t>> ours(rows);
  if (n <= 0) return ours;
  ex.forward(prefill_step(std::vector<std::vector<int32_t>>(rows, prompt)));
  for (int i = 0;; ++i) {
    std::vector<int32_t> got = pick(ex, rows);
    for (size_t r = 0; r < rows; ++r) ours[r].push_back(got[r]);
    if (i + 1 >= n || size_t(i) >= reference.size()) break;
    ex.forward(decode_step(std::vector<int32_t>(rows, reference[size_t(i)]),
                           std::vector<int32_t>(rows, int32_t(prompt.size()) + i)));
  }
  return ours;
}

Reference greedy_reference(Executor& ex, const std::vector<int32_t>& prompt, int n, const std::string& source) {
  Reference ref;
  ref.source = source;
  ref.prompt = prompt;
  if (n <= 0) return ref;
  ex.forward(prefill_step({prompt}));
  for (int i = 0;; ++i) {
    const float* row = ex.logits();
    int32_t best = -1, second = -1;
    for (int32_t v = 0; v < int32_t(ex.vocab_size()); ++v) {
      if (!std::isfinite(row[v])) throw_internal("bench", "the reference's logits hold NaN or Inf");
      if (best < 0 || row[v] > row[best]) {
        second = best;
        best = v;
      } else if (second < 0 || row[v] > row[second]) {
        second = v;
      }
    }
    ref.tokens.push_back(best);
    ref.second.push_back(second);
    ref.margins.push_back(second < 0 ? 0.0 : double(row[best]) - double(row[second]));
    if (i + 1 >= n) break;
    ex.forward(decode_step({best}, {int32_t(prompt.size()) + i}));
  }
  return ref;
}

}  // namespace ac::bench
