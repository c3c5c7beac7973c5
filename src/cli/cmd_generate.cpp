// agentcompile generate MODEL (--prompt S | --prompt-file F | --prompt-tokens 1,2 | --chat --messages F) [...]:
// streams text, or --json.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "agentcompile/chat/chat_template.h"
#include "agentcompile/core/error.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/runtime/chat_prompt.h"
#include "agentcompile/runtime/engine.h"
#include "agentcompile/tokenizer/stream_decoder.h"
#include "agentcompile/tokenizer/tokenizer.h"
#include "cli/chat_input.h"
#include "cli/cli_common.h"
#include "cli/generation_flags.h"

namespace ac::cli {

namespace {

struct GenerateCliOptions {
  std::string model, prompt, prompt_file, prompt_tokens, messages, system;
  std::vector<std::string> vars;
  bool chat = false, json = false, ignore_eos = false, no_special = false, no_think = false;
  bool chat_fallback = false;
  int64_t max_tokens = 128;
  GenerationFlags run;
};

// A prompt file may hold up to this many bytes per position of the model's context: the longest
// token of the Qwen3 and Llama 3 vocabularies is 128 bytes, so a longer text cannot fit anyway.
constexpr size_t kPromptBytesPerPosition = 1024;
constexpr size_t kMaxPromptBytes = size_t(1) << 30;

Json timings_json(const GenerateResult& r) {
  return {{"prefill_ms", r.prefill_ms}, {"decode_ms_per_token", r.decode_ms_per_token},
          {"decode_steps", r.decode_ms.size()}};
}

// The prompt as token ids: plain text with the special tokens Hugging Face adds by default (the
// tokenizer.json post_processor: a BOS for Llama 3), or with --chat the conversation through the
// model's chat template, encoded as apply_chat_template does (chat_prompt.h).
std::vector<int32_t> encode_prompt(const Tokenizer& tok, const Model& model, const GenerateCliOptions& o) {
  if (!o.chat) return tok.add_special_tokens(tok.encode(o.prompt, !o.no_special));
  chat::ChatRequest request;
  request.variables = parse_template_vars(o.vars);
  if (o.no_think) request.variables["enable_thinking"] = false;
  if (!o.messages.empty()) {
    request.messages = read_messages_file(o.messages);
    check_last_turn(request.messages, o.messages == "-" ? "stdin" : o.messages);
  } else {
    if (!o.system.empty()) request.messages.push_back({{"role", "system"}, {"content", o.system}});
    request.messages.push_back({{"role", "user"}, {"content", o.prompt}});
  }
  const chat::ChatTemplate tpl = chat::ChatTemplate::load(model.dir);
  return chat_prompt_ids(tok, tpl, request, ChatPromptOptions{o.no_special, o.chat_fallback});
}

int run_generate(GenerateCliOptions o) {
  if (int(!o.prompt.empty()) + int(!o.prompt_file.empty()) + int(!o.prompt_tokens.empty()) + int(!o.messages.empty()) != 1)
    throw_input("generate", "give exactly one of --prompt, --prompt-file, --prompt-tokens and --messages");
  if (!o.system.empty() && !o.chat) throw_input("--system", "needs --chat");
  if (!o.messages.empty() && !o.chat) throw_input("--messages", "needs --chat");
  if (!o.messages.empty() && !o.system.empty())
    throw_input("--system", "cannot be combined with --messages (put the system message in the file)");
  for (const auto& [flag, set] : {std::pair{"--var", !o.vars.empty()}, std::pair{"--chat-template-fallback", o.chat_fallback},
                                  std::pair{"--no-think", o.no_think}})
    if (set && !o.chat) throw_input(flag, "needs --chat");
  auto model = load_model(o.model);
  if (!o.prompt_file.empty()) {
    const int64_t context = model->config.context_limit();
    const size_t limit = std::min(kMaxPromptBytes, size_t(context) * kPromptBytesPerPosition);
    o.prompt = read_text_input(o.prompt_file, limit,
                               std::to_string(kPromptBytesPerPosition) + " bytes for each of the model's " +
                                   std::to_string(context) + " positions");
  }
  prepare_model_from_flags(o.run, *model);
  const std::optional<Plan> plan = plan_from_flags(o.run, *model);
  std::unique_ptr<Tokenizer> tok;
  if (model->has_tokenizer()) tok = std::make_unique<Tokenizer>(Tokenizer::load(model->dir));
  std::vector<int32_t> prompt;
  if (!o.prompt_tokens.empty()) {
    if (o.chat) throw_input("--chat", "needs a text --prompt, not --prompt-tokens");
    prompt = parse_id_list(o.prompt_tokens, "--prompt-tokens");
    for (int32_t t : prompt)
      if (t >= model->config.vocab_size)
        throw_input("--prompt-tokens", "token id " + std::to_string(t) + " is outside the vocabulary (" +
                                           std::to_string(model->config.vocab_size) + ")");
  } else {
    if (!tok) throw_input(o.model, "has no tokenizer.json; give the prompt as --prompt-tokens");
    prompt = encode_prompt(*tok, *model, o);
  }
  if (int64_t(tok ? tok->vocab_size() : 0) > model->config.vocab_size)
    throw_input(o.model, "the tokenizer has " + std::to_string(tok->vocab_size()) + " tokens, more than the model's " +
                             std::to_string(model->config.vocab_size));
  check_context(model->config, int64_t(prompt.size()), o.max_tokens);

  GenerateOptions g;
  g.max_tokens = o.max_tokens;
  g.ignore_eos = o.ignore_eos;
  // A chat reply also ends at tokenizer_config.json's eos_token (the end of a turn), as a chat
  // model's config may leave it out.
  g.stop_ids = o.chat ? chat_stop_ids(model->config, *tok) : model->config.eos_token_ids;
  g.sampling = sampling_from_flags(o.run, model->dir);

  Graph graph = build_decoder_graph(model->config, model->weights);
  ExecutorLimits lim{1, int64_t(prompt.size()) + o.max_tokens, int64_t(prompt.size()), 1};
  auto ex = executor_from_flags(o.run, plan, graph, lim);

  // Streamed text: special tokens (the stop token among them) are not shown, as HF's
  // skip_special_tokens=True; without a tokenizer the ids are printed. Ids the model's vocabulary
  // has but the tokenizer lacks (Qwen3's padding ids) add no text and are listed at the end.
  std::unique_ptr<StreamDecoder> stream;
  if (tok) stream = std::make_unique<StreamDecoder>(*tok, /*skip_special_tokens=*/true);
  std::vector<int32_t> generated;  // kept here too, so that a failing step loses nothing
  auto on_token = [&](int32_t t) {
    generated.push_back(t);
    if (o.json) return;
    if (stream) {
      std::string piece = stream->push(t);
      std::fwrite(piece.data(), 1, piece.size(), stdout);
    } else {
      std::printf("%d ", t);
    }
    std::fflush(stdout);
  };
  // The output, whole or (when a step fails) with what was generated before the failure.
  auto finish = [&](const GenerateResult* r, const std::string& error) {
    const std::vector<int32_t>& tokens = r ? r->tokens : generated;
    const std::vector<int32_t> no_text = tok ? tok->ids_without_text(tokens) : std::vector<int32_t>();
    if (o.json) {
      Json j = {{"prompt_tokens", prompt}, {"tokens", tokens},
                {"text", tok ? tok->decode(tokens, /*skip_special_tokens=*/true) : std::string()},
                {"finish_reason", r ? r->finish_reason : "error"}, {"backend", ex->name()}};
      if (tok) j["ids_without_text"] = no_text;
      if (r) j["timings"] = timings_json(*r);
      else j["error"] = error;
      std::printf("%s\n", j.dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
      std::fflush(stdout);
      return;
    }
    if (stream) {
      std::string rest = stream->finish();
      std::fwrite(rest.data(), 1, rest.size(), stdout);
    }
    std::printf("\n");
    std::fflush(stdout);
    if (!no_text.empty()) {
      std::fprintf(stderr, "warning: generated token ids without text in the tokenizer (they add nothing): %s\n",
                   join_ids(no_text, ", ").c_str());
    }
    if (r)
      std::fprintf(stderr, "[%zu tokens, %s; prefill %.1f ms, decode %.2f ms/token, backend %s]\n", r->tokens.size(),
                   r->finish_reason.c_str(), r->prefill_ms, r->decode_ms_per_token, ex->name().c_str());
  };
  GenerateResult r;
  try {
    r = generate(*ex, model->config, prompt, g, on_token);
  } catch (const std::exception& e) {
    if (!generated.empty()) finish(nullptr, e.what());  // then the error line and its exit code
    throw;
  }
  finish(&r, "");
  return 0;
}

}  // namespace

Subcommand add_generate(CLI::App& root) {
  auto o = std::make_shared<GenerateCliOptions>();
  CLI::App* app = root.add_subcommand("generate", "Generate text from a prompt (streams to stdout, or --json)");
  app->add_option("MODEL", o->model, "Hugging Face model folder")->required();
  app->add_option("--prompt", o->prompt, "Prompt text");
  app->add_option("--prompt-file", o->prompt_file,
                  "Read the prompt text from a file (- for standard input), for prompts too long for the command line");
  app->add_option("--prompt-tokens", o->prompt_tokens, "Prompt as comma-separated token ids (no tokenizer needed)");
  app->add_flag("--chat", o->chat,
                "Make the prompt a conversation rendered by the model's chat template (tokenizer_config.json or "
                "chat_template.jinja): --prompt is the user's message");
  app->add_option("--system", o->system, "System message (with --chat)");
  app->add_option("--messages", o->messages,
                  "With --chat: a JSON file (- for standard input) with the whole conversation, a list of "
                  "{\"role\": ..., \"content\": ...} ending with a user message or a tool result");
  add_template_var_flag(app, o->vars);
  app->add_flag("--chat-template-fallback", o->chat_fallback,
                "With --chat on a model without a chat template: write each message as a \"role: content\" line and "
                "end with \"assistant: \" instead of failing");
  app->add_option("--max-tokens", o->max_tokens, "Most tokens to generate (default 128)")->check(in_range(0, ConfigLimits::kMaxPositions));
  add_sampling_flags(app, o->run);
  app->add_flag("--ignore-eos", o->ignore_eos, "Do not stop at end-of-sequence tokens");
  add_executor_flags(app, o->run);
  app->add_flag("--no-special-in-prompt", o->no_special,
                "Treat special-token text in the prompt (with --chat: in the messages' content) as plain text");
  app->add_flag("--no-think", o->no_think,
                "With --chat: render with enable_thinking=false (Qwen3: no reasoning block)");
  app->add_flag("--json", o->json, "Print one JSON object with tokens, text, finish_reason and timings");
  return {app, [o]() { return run_generate(*o); }};
}

}  // namespace ac::cli
