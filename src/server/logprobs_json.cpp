#include "server/logprobs_json.h"

#include <cstdio>

#include "agentcompile/tokenizer/utf8.h"

namespace ac::server {

std::string LogprobsJson::text_of(int32_t id) const {
  if (!tok_.is_token(id)) return "";
  const std::string& b = tok_.piece(id).bytes;
  if (utf8_valid(b)) return b;
  std::string out = "bytes:";
  for (unsigned char c : b) {
    char hex[5];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    out += hex;
  }
  return out;
}

Json LogprobsJson::bytes_of(int32_t id) const {
  Json a = Json::array();
  if (tok_.is_token(id))
    for (unsigned char c : tok_.piece(id).bytes) a.push_back(int(c));
  return a;
}

void LogprobsJson::reset() {
  count_ = 0;
  if (chat_) j_ = {{"content", Json::array()}, {"refusal", nullptr}};
  else j_ = {{"tokens", Json::array()}, {"token_logprobs", Json::array()}, {"top_logprobs", Json::array()}, {"text_offset", Json::array()}};
}

void LogprobsJson::add(const TokenLogprobs& lp, int64_t text_offset) {
  ++count_;
  if (chat_) {
    Json top = Json::array();
    for (const auto& [id, v] : lp.top) top.push_back({{"token", text_of(id)}, {"logprob", v}, {"bytes", bytes_of(id)}});
    j_["content"].push_back({{"token", text_of(lp.token)}, {"logprob", lp.logprob}, {"bytes", bytes_of(lp.token)}, {"top_logprobs", top}});
    return;
  }
  Json top = Json::object();
  for (const auto& [id, v] : lp.top) top[text_of(id)] = v;
  top[text_of(lp.token)] = lp.logprob;
  j_["tokens"].push_back(text_of(lp.token));
  j_["token_logprobs"].push_back(lp.logprob);
  j_["top_logprobs"].push_back(top);
  j_["text_offset"].push_back(text_offset);
}

Json LogprobsJson::take() {
  Json out = std::move(j_);
  reset();
  return out;
}

}  // namespace ac::server
