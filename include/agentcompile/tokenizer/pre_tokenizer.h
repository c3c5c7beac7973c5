#pragma once
// The tokenizer.json "pre_tokenizer": Split(regex or string, Isolated) steps followed by one
// ByteLevel step, alone or in a Sequence, as Qwen2/Qwen3 and Llama 3 (and GPT-2) use. Steps run
// as the reference runs them: each on every piece the previous step produced. ByteLevel's byte to
// character mapping is implicit (the BPE works on raw bytes); its add_prefix_space and use_regex
// (the GPT-2 split pattern) are honoured. Other types and behaviours are rejected at load.
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "agentcompile/core/json.h"
#include "agentcompile/tokenizer/split_regex.h"

namespace ac {

class PreTokenizer {
 public:
  // `j` is the "pre_tokenizer" value; errors name `subject` (file: field).
  static PreTokenizer from_json(const Json& j, const std::string& subject);

  // Appends the words of `text` (valid UTF-8) to out, as raw bytes: views into `text` or into
  // strings this call adds to `arena`. Split patterns draw their matching work from `budget`.
  void split(std::string_view text, std::vector<std::string_view>& out, std::deque<std::string>& arena,
             MatchBudget& budget) const;

 private:
  struct Step {
    bool byte_level = false;
    SplitRegex regex;               // Split: the pattern; ByteLevel with use_regex: the GPT-2 pattern
    bool use_regex = false;         // ByteLevel only
    bool add_prefix_space = false;  // ByteLevel only
  };
  std::vector<Step> steps_;
};

}  // namespace ac
