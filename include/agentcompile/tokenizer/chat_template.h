#pragma once
// Chat formats, recognised from the tokenizer_config.json chat_template and rendered by
// hard-coded formatters that reproduce what the Jinja templates render for plain conversations
// (roles system / user / assistant, no tools):
//  - Qwen3: <|im_start|>role\n...<|im_end|>\n turns; assistant turns after the last user query keep
//    their <think> block, earlier ones lose it; enable_thinking=false appends an empty think block
//    to the generation prompt.
//  - Llama 3: <|start_header_id|>role<|end_header_id|>\n\n + trimmed content + <|eot_id|>, BOS text
//    first; some Llama 3 templates append the assistant header whatever add_generation_prompt says,
//    and that is reproduced.
//  - Llama 3.1 / 3.2: as Llama 3, plus a system turn that always comes first and holds
//    "Cutting Knowledge Date: December 2023\nToday Date: <date_string>\n\n" and the (trimmed)
//    system message.
// Jinja string functions are reproduced as the reference's engine (@huggingface/jinja) runs them:
// trim / strip / lstrip / rstrip remove JavaScript whitespace (so U+FEFF too) and ignore a
// character argument; Python's Jinja differs only for text with such whitespace at those places.
#include <string>
#include <string_view>
#include <vector>

#include "agentcompile/tokenizer/tokenizer.h"

namespace ac {

enum class ChatFormat { None, Qwen3, Llama3, Llama31 };

struct ChatTemplate {
  ChatFormat format = ChatFormat::None;
  bool always_generation_prompt = false;  // Llama 3 templates without an add_generation_prompt test
  std::string bos_token;                  // text the Llama templates start with

  // Recognises a template (ChatFormat::None when it is none of the known ones).
  static ChatTemplate detect(std::string_view template_text, std::string bos_token);

  std::string_view name() const;
  // The text of the token that ends a turn ("" for None).
  std::string_view end_of_turn() const;
  // Renders; BadInput on an empty conversation or an unsupported role.
  std::string render(const std::vector<ChatMessage>& msgs, const ChatOptions& opts) const;
};

}  // namespace ac
