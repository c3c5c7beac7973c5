#include "agentcompile/tokenizer/stream_decoder.h"

namespace ac {

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tok_(tokenizer), skip_special_(skip_special_tokens) {}

std::string StreamDecoder::push(int32_t id) {
  std::string out;
  push(id, out);
  return out;
}

void StreamDecoder::push(int32_t id, std::string& out) {
  // Hugging Face drops ids without a token before decoding: they do not end a byte run either.
  if (!tok_.is_token(id)) return;
  const Tokenizer::Piece& p = tok_.piece(id);
  if (skip_special_ && p.special) return;  // skipped tokens do not split a byte run
  if (p.verbatim) {
    // Added tokens end the byte run: the reference decodes each run on its own.
    bytes_.finish(out);
    out += p.bytes;
  } else {
    bytes_.push(p.bytes, out);
  }
}

std::string StreamDecoder::finish() {
  std::string out;
  finish(out);
  return out;
}

void StreamDecoder::finish(std::string& out) { bytes_.finish(out); }

}  // namespace ac
