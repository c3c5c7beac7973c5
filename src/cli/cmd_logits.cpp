// agentcompile logits MODEL --tokens 1,2,3 [--top N | --json]: teacher-forced logits. The table
// shows each position's most likely next tokens; --json prints every logit. Rows are computed a
// chunk at a time and written as they come, so memory does not grow with the sequence.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

#include "agentcompile/core/error.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/runtime/backends.h"
#include "agentcompile/runtime/engine.h"
#include "agentcompile/runtime/plan_executor.h"
#include "agentcompile/tokenizer/tokenizer.h"
#include "cli/cli_common.h"

namespace ac::cli {

namespace {

// Positions per step: bounds the executor's logit buffer (chunk x vocab floats) for any length.
constexpr int64_t kChunk = 64;

struct LogitsOptions {
  std::string model, tokens, backend = "cpu", plan;
  bool json = false, rebuild_kernels = false;
  std::optional<int64_t> top;
};

// One row of the JSON matrix. JSON has no NaN or infinity: such logits are written as null.
void write_json_row(std::FILE* out, int64_t pos, const float* row, int64_t vocab) {
  std::string s = pos ? ",\n[" : "\n[";
  char buf[32];
  for (int64_t j = 0; j < vocab; ++j) {
    if (j) s += ',';
    if (std::isfinite(row[j])) {
      std::snprintf(buf, sizeof buf, "%.9g", double(row[j]));  // "%.9g" keeps every f32 bit
      s += buf;
    } else {
      s += "null";
    }
  }
  s += "]";
  std::fwrite(s.data(), 1, s.size(), out);
}

// A token's text for the table: quoted with escapes, or a note when the tokenizer has none.
std::string token_text(const Tokenizer* tok, int32_t id) {
  if (tok == nullptr) return "";
  std::string t;
  try {
    t = tok->decode({id}, /*skip_special_tokens=*/false);
  } catch (const Error&) {
    return "(no text)";
  }
  Json q = t;
  return q.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// One position: the input token, then the top-N next tokens with logit and probability.
void write_table_rows(std::FILE* out, const Tokenizer* tok, int64_t pos, int32_t input, const float* row,
                      int64_t vocab, int64_t top) {
  std::vector<int32_t> ids;
  double mx = -INFINITY;
  int64_t bad = 0;
  for (int64_t j = 0; j < vocab; ++j) {
    if (!std::isfinite(row[j])) {
      ++bad;
      continue;
    }
    ids.push_back(int32_t(j));
    mx = std::max(mx, double(row[j]));
  }
  double z = 0;
  for (int32_t j : ids) z += std::exp(double(row[j]) - mx);
  const size_t n = std::min<size_t>(size_t(top), ids.size());
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int32_t a, int32_t b) {
    return row[a] != row[b] ? row[a] > row[b] : a < b;
  });
  std::fprintf(out, "position %lld, token %d %s\n", (long long)pos, input, token_text(tok, input).c_str());
  for (size_t k = 0; k < n; ++k)
    std::fprintf(out, "  %2zu  %8d  logit %10.4f  p %.4f  %s\n", k + 1, ids[k], double(row[ids[k]]),
                 std::exp(double(row[ids[k]]) - mx) / z, token_text(tok, ids[k]).c_str());
  if (bad) std::fprintf(out, "  (%lld logits are NaN or infinite)\n", (long long)bad);
}

int run_logits(const LogitsOptions& o) {
  if (o.json && o.top) throw_input("--top", "applies to the table; --json prints every logit");
  const int64_t top = o.top.value_or(5);
  std::vector<int32_t> tokens = parse_id_list(o.tokens, "--tokens");
  auto model = load_model(o.model);
  std::optional<Plan> plan;
  if (o.rebuild_kernels && o.plan.empty()) throw_input("--rebuild-kernels", "needs --plan");
  if (!o.plan.empty()) prepare_model_for_plan(o.plan, *model);
  if (!o.plan.empty())
    plan = load_plan_for(o.plan, *model, o.backend == "cpu" ? "" : o.backend,
                         o.rebuild_kernels ? PlanKernels::Rebuild : PlanKernels::Load);
  check_context(model->config, int64_t(tokens.size()), 0);
  for (int32_t t : tokens)
    if (t >= model->config.vocab_size)
      throw_input("--tokens", "token id " + std::to_string(t) + " is outside the vocabulary (" +
                                  std::to_string(model->config.vocab_size) + ")");
  std::unique_ptr<Tokenizer> tok;
  if (!o.json && model->has_tokenizer()) tok = std::make_unique<Tokenizer>(Tokenizer::load(model->dir));
  Graph g = build_decoder_graph(model->config, model->weights);
  const int64_t chunk = std::min<int64_t>(kChunk, int64_t(tokens.size()));
  ExecutorLimits lim{1, int64_t(tokens.size()), chunk, chunk};
  auto ex = plan ? make_plan_executor(*plan, g, lim) : make_executor(o.backend, g, lim);
  const int64_t vocab = ex->vocab_size();
  int64_t nonfinite_rows = 0;
  if (o.json) std::fputs("{\"logits\": [", stdout);
  teacher_forced_logits(*ex, tokens, chunk, [&](int64_t pos, const float* row) {
    if (o.json) {
      write_json_row(stdout, pos, row, vocab);
      nonfinite_rows += std::any_of(row, row + vocab, [](float x) { return !std::isfinite(x); });
    } else {
      write_table_rows(stdout, tok.get(), pos, tokens[size_t(pos)], row, vocab, top);
    }
  });
  if (o.json) std::fputs("]}\n", stdout);
  std::fflush(stdout);
  if (nonfinite_rows)
    std::fprintf(stderr, "warning: %lld positions have NaN or infinite logits (written as null)\n",
                 (long long)nonfinite_rows);
  return 0;
}

}  // namespace

Subcommand add_logits(CLI::App& root) {
  auto o = std::make_shared<LogitsOptions>();
  CLI::App* app = root.add_subcommand("logits", "Print the logits of every position of a token sequence (teacher forcing)");
  app->add_option("MODEL", o->model, "Hugging Face model folder")->required();
  app->add_option("--tokens", o->tokens, "Comma-separated token ids")->required();
  app->add_option("--backend", o->backend, "cpu (default), cuda or auto");
  app->add_option("--plan", o->plan, "Run a compiled plan folder (its backend; refused when made for another model or machine)");
  app->add_option("--top", o->top, "Most likely next tokens shown per position in the table (default 5)")
      ->check(in_range(1, 1000));
  app->add_flag("--rebuild-kernels", o->rebuild_kernels, "Ignore the plan's kernel binaries: compile its kernels from this build's templates (its choices are kept)");
  app->add_flag("--json", o->json,
                "Print {\"logits\": [[...], ...]}: every logit of every position (NaN or infinite logits as null)");
  return {app, [o]() { return run_logits(*o); }};
}

}  // namespace ac::cli
