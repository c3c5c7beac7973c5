#pragma once
// Token log-probabilities in the shape of each endpoint's "logprobs" field:
//  chat:        {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}],
//                "refusal": null}
//  completions: {"tokens": [...], "token_logprobs": [...], "top_logprobs": [{token: logprob}],
//                "text_offset": [...]}, where each top_logprobs map holds the alternatives and the
//                chosen token (as vLLM does), and text_offset counts characters of the completion.
// A token's text is its bytes when they are valid UTF-8, else "bytes:\xNN..." (a piece of a
// character), as OpenAI writes it; "bytes" always holds the raw bytes.
#include <cstdint>

#include "agentcompile/core/json.h"
#include "agentcompile/runtime/logprobs.h"
#include "agentcompile/tokenizer/tokenizer.h"

namespace ac::server {

class LogprobsJson {
 public:
  LogprobsJson(const Tokenizer& tok, bool chat) : tok_(tok), chat_(chat) { reset(); }
  // One generated token; text_offset: characters of the completion's text before it.
  void add(const TokenLogprobs& lp, int64_t text_offset);
  bool empty() const { return count_ == 0; }
  // The entries added since the last take(), as a "logprobs" value.
  Json take();

 private:
  std::string text_of(int32_t id) const;
  Json bytes_of(int32_t id) const;
  void reset();

  const Tokenizer& tok_;
  bool chat_;
  Json j_;
  int64_t count_ = 0;
};

}  // namespace ac::server
