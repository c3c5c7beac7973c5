#pragma once
// The tokenizer.json "post_processor": the special tokens Hugging Face adds around one encoded
// text when add_special_tokens is true (encode's default there; a BOS for Meta's Llama 3 files).
// Supported, for a single sequence, as the reference tokenizers run them:
//  - TemplateProcessing: the "single" template, special-token pieces around one $A piece (the
//    ids come from its "special_tokens" map; type ids play no part in ids);
//  - RobertaProcessing / BertProcessing: cls, the text, sep;
//  - ByteLevel: nothing (it only adjusts offsets);
//  - a Sequence of these, applied in order; null adds nothing.
// Any other type is refused when the tokenizer loads, as Hugging Face refuses it.
#include <cstdint>
#include <string>
#include <vector>

#include "agentcompile/core/json.h"

namespace ac {

class PostProcessor {
 public:
  // `j` is the "post_processor" value (null for none); errors name `subject` (file: field).
  static PostProcessor from_json(const Json& j, const std::string& subject);

  // The ids with the special tokens added around them.
  std::vector<int32_t> apply(const std::vector<int32_t>& ids) const;

  // Every id the processor adds (to check that they are tokens).
  std::vector<int32_t> added_ids() const;

 private:
  void add_step(const Json& j, const std::string& subject);
  std::vector<int32_t> before_, after_;
};

}  // namespace ac
