#pragma once
// A conversation as the prompt token ids a chat model is given, and where its replies stop
// (shared by the chat commands and the server).
#include <cstdint>
#include <string>
#include <vector>

#include "agentcompile/chat/chat_template.h"

namespace ac {

class Tokenizer;
struct ModelConfig;

struct ChatPromptOptions {
  // --no-special-in-prompt: special-token text inside the messages stays text (see chat_prompt_ids).
  bool plain_content = false;
  // --chat-template-fallback: a model without a chat template gets chat::plain_chat_text.
  bool fallback = false;
};

// BadInput when `tpl` has no template and options do not allow the fallback.
void check_chat_template(const chat::ChatTemplate& tpl, const ChatPromptOptions& options);

// The ids of `request` rendered by `tpl`, as Hugging Face's apply_chat_template(tokenize=True)
// makes them: the rendered text encoded without adding special tokens (the template writes
// them), special-token text anywhere in it becoming special tokens. With plain_content, the
// special-token text of a message's content is encoded as text instead; that needs the template
// to write the content as given (BadInput otherwise).
std::vector<int32_t> chat_prompt_ids(const Tokenizer& tok, const chat::ChatTemplate& tpl, const chat::ChatRequest& request,
                                     const ChatPromptOptions& options);

// What ends an assistant's turn: the model's eos ids (generation_config.json, else config.json)
// and the eos_token of tokenizer_config.json (<|im_end|> for Qwen3, <|eot_id|> for Llama 3.x
// instruct models), each once.
std::vector<int64_t> chat_stop_ids(const ModelConfig& config, const Tokenizer& tok);

// BadInput unless the conversation ends with a turn the assistant answers: a "user" message or
// a "tool" result.
void check_last_turn(const chat::OrderedJson& messages, const std::string& subject);

}  // namespace ac
