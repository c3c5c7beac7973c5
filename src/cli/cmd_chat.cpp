// agentcompile chat MODEL [options]: a conversation on standard input, one user message a line
// (a line ending in a backslash goes on with the next line). Each reply is streamed as it is
// generated (or printed as one JSON line with --json) and joins the conversation. The KV cache is
// kept between turns: the next prompt is rendered from the whole conversation, and only its
// tokens after the prefix the cache already holds are prefilled.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "agentcompile/chat/chat_template.h"
#include "agentcompile/core/error.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/runtime/chat_prompt.h"
#include "agentcompile/runtime/engine.h"
#include "agentcompile/tokenizer/stream_decoder.h"
#include "agentcompile/tokenizer/tokenizer.h"
#include "agentcompile/tokenizer/utf8.h"
#include "cli/chat_input.h"
#include "cli/cli_common.h"
#include "cli/generation_flags.h"

namespace ac::cli {

namespace {

struct ChatCliOptions {
  std::string model, system;
  std::vector<std::string> vars;
  bool no_think = false, no_special = false, chat_fallback = false, json = false;
  int64_t max_tokens = 512;    // per reply
  int64_t max_context = 4096;  // positions the cache holds: the whole conversation must fit
  GenerationFlags run;
};

// The next user message: one line, or several where a line ends in a backslash (the backslash
// becomes a newline); empty messages are skipped. False at the end of the input.
bool read_user_turn(std::istream& in, bool prompt, std::string& message) {
  std::string line;
  for (;;) {
    message.clear();
    if (prompt) std::fputs("> ", stderr);
    bool more = true;
    while (more) {
      if (!std::getline(in, line)) return !message.empty();
      if (!line.empty() && line.back() == '\r') line.pop_back();
      more = !line.empty() && line.back() == '\\';
      if (more) line.back() = '\n';
      message += line;
    }
    if (!message.empty()) return true;
  }
}

size_t shared_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

int run_chat(const ChatCliOptions& o) {
  auto model = load_model(o.model);
  if (!model->has_tokenizer()) throw_input(o.model, "has no tokenizer.json (chat needs one)");
  prepare_model_from_flags(o.run, *model);
  const std::optional<Plan> plan = plan_from_flags(o.run, *model);
  const Tokenizer tok = Tokenizer::load(model->dir);
  if (tok.vocab_size() > model->config.vocab_size)
    throw_input(o.model, "the tokenizer has " + std::to_string(tok.vocab_size()) + " tokens, more than the model's " +
                             std::to_string(model->config.vocab_size));
  const chat::ChatTemplate tpl = chat::ChatTemplate::load(model->dir);
  const ChatPromptOptions prompt_options{o.no_special, o.chat_fallback};
  check_chat_template(tpl, prompt_options);

  chat::ChatRequest request;
  request.variables = parse_template_vars(o.vars);
  if (o.no_think) request.variables["enable_thinking"] = false;
  if (!o.system.empty()) request.messages.push_back({{"role", "system"}, {"content", o.system}});

  GenerateOptions g;
  g.stop_ids = chat_stop_ids(model->config, tok);
  g.sampling = sampling_from_flags(o.run, model->dir);
  const int64_t max_seq = std::min(o.max_context, model->config.context_limit());
  Graph graph = build_decoder_graph(model->config, model->weights);
  auto ex = executor_from_flags(o.run, plan, graph, ExecutorLimits{1, max_seq, max_seq, 1});

  std::vector<int32_t> cached;  // the tokens whose keys and values the cache holds, from position 0
  const bool interactive = ::isatty(STDIN_FILENO) == 1;
  std::string message;
  while (read_user_turn(std::cin, interactive, message)) {
    request.messages.push_back({{"role", "user"}, {"content", utf8_valid(message) ? message : utf8_sanitize(message)}});
    const std::vector<int32_t> prompt = chat_prompt_ids(tok, tpl, request, prompt_options);
    if (int64_t(prompt.size()) >= max_seq)
      throw_input("chat", "the conversation has grown to " + std::to_string(prompt.size()) +
                              " tokens, which fills the context of " + std::to_string(max_seq) +
                              " positions (--max-context, at most the model's)");
    g.max_tokens = std::min(o.max_tokens, max_seq - int64_t(prompt.size()));
    g.cached_prefix = int64_t(std::min(shared_prefix(prompt, cached), prompt.size() - 1));

    StreamDecoder stream(tok, /*skip_special_tokens=*/true);
    auto on_token = [&](int32_t t) {
      if (o.json) return;
      const std::string piece = stream.push(t);
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    };
    const GenerateResult r = generate(*ex, model->config, prompt, g, on_token);
    const std::string reply = tok.decode(r.tokens, /*skip_special_tokens=*/true);
    const size_t prefilled = prompt.size() - size_t(g.cached_prefix);
    if (o.json) {
      const Json line = {{"reply", reply},          {"tokens", r.tokens},         {"finish_reason", r.finish_reason},
                         {"prompt_tokens", prompt.size()}, {"prefilled_tokens", prefilled},
                         {"timings", {{"prefill_ms", r.prefill_ms}, {"decode_ms_per_token", r.decode_ms_per_token}}}};
      std::printf("%s\n", line.dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
    } else {
      const std::string rest = stream.finish();
      std::fwrite(rest.data(), 1, rest.size(), stdout);
      std::printf("\n");
      std::fprintf(stderr, "[%zu tokens, %s; %zu of %zu prompt tokens prefilled in %.1f ms, decode %.2f ms/token]\n",
                   r.tokens.size(), r.finish_reason.c_str(), prefilled, prompt.size(), r.prefill_ms,
                   r.decode_ms_per_token);
    }
    std::fflush(stdout);
    request.messages.push_back({{"role", "assistant"}, {"content", reply}});
    // Every prompt token and every generated token but the last was fed to the model.
    cached = prompt;
    if (!r.tokens.empty()) cached.insert(cached.end(), r.tokens.begin(), r.tokens.end() - 1);
  }
  return 0;
}

}  // namespace

Subcommand add_chat(CLI::App& root) {
  auto o = std::make_shared<ChatCliOptions>();
  CLI::App* app = root.add_subcommand(
      "chat",
      "Chat with a model on standard input: one user message a line (a line ending in \\ goes on with the next), each "
      "reply streamed and added to the conversation, which the model's chat template renders; the KV cache is kept "
      "between turns, so only the new part of the prompt is prefilled. Ends at the end of the input");
  app->add_option("MODEL", o->model, "Hugging Face model folder")->required();
  app->add_option("--system", o->system, "System message that opens the conversation");
  add_template_var_flag(app, o->vars);
  app->add_flag("--no-think", o->no_think, "Render with enable_thinking=false (Qwen3: no reasoning block)");
  app->add_flag("--no-special-in-prompt", o->no_special, "Treat special-token text in the messages as plain text");
  app->add_flag("--chat-template-fallback", o->chat_fallback,
                "On a model without a chat template: write each message as a \"role: content\" line instead of failing");
  app->add_option("--max-tokens", o->max_tokens, "Most tokens of one reply (default 512)")
      ->check(in_range(1, ConfigLimits::kMaxPositions));
  app->add_option("--max-context", o->max_context,
                  "Positions kept for the whole conversation (default 4096, at most the model's context)")
      ->check(in_range(2, ConfigLimits::kMaxPositions));
  add_sampling_flags(app, o->run);
  add_executor_flags(app, o->run);
  app->add_flag("--json", o->json,
                "Print each reply as one JSON line (reply, tokens, finish_reason, prompt_tokens, prefilled_tokens, "
                "timings) instead of streaming it");
  return {app, [o]() { return run_chat(*o); }};
}

}  // namespace ac::cli
