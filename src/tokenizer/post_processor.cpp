#include "agentcompile/tokenizer/post_processor.h"

#include "agentcompile/core/error.h"

namespace ac {

namespace {

constexpr int64_t kMaxId = INT32_MAX;

// "name:1" -> "name": the type id that the string form may carry (it plays no part in ids).
std::string without_type_id(const std::string& s) {
  const size_t c = s.rfind(':');
  if (c == std::string::npos || c == 0 || c + 1 == s.size()) return s;
  for (size_t k = c + 1; k < s.size(); ++k)
    if (s[k] < '0' || s[k] > '9') return s;
  return s.substr(0, c);
}

// A template piece: the sequence (true) or the name of a special token. The stored form is an
// object ({"Sequence": {"id": "A"}} or {"SpecialToken": {"id": "<s>"}}); the string form of
// Hugging Face's Python API ("$A", "$0", "$", "<s>", each with an optional ":type_id") is read too.
bool read_piece(const Json& p, const std::string& where, std::string& special) {
  std::string sequence;
  if (p.is_string()) {
    const std::string s = without_type_id(p.get<std::string>());
    if (s.empty()) throw_input(where, "empty template piece");
    if (s[0] != '$') {
      special = s;
      return false;
    }
    sequence = s == "$" || s == "$0" ? "A" : s == "$1" ? "B" : s.substr(1);
  } else if (p.is_object() && p.size() == 1 && p.contains("Sequence")) {
    sequence = json_string(p["Sequence"], where + ".Sequence", "id");
  } else if (p.is_object() && p.size() == 1 && p.contains("SpecialToken")) {
    special = json_string(p["SpecialToken"], where + ".SpecialToken", "id");
    return false;
  } else {
    throw_input(where, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
  }
  if (sequence == "B") throw_input(where, "sequence B: the single-sequence template can only hold A");
  if (sequence != "A") throw_input(where, "sequence " + json_quote(sequence, 60) + " is not A or B");
  return true;
}

// The ids of a template's special token, from the "special_tokens" map.
std::vector<int32_t> special_ids(const Json& step, const std::string& subject, const std::string& name) {
  const Json* map = step.contains("special_tokens") ? &step["special_tokens"] : nullptr;
  if (map == nullptr || !map->is_object() || !map->contains(name))
    throw_input(subject, "special_tokens: " + json_quote(name, 60) + " is used by the template but missing");
  const std::string where = subject + ": special_tokens: " + json_quote(name, 60);
  const Json& e = (*map)[name];
  if (!e.is_object()) throw_input(where, "expected an object with ids and tokens");
  const Json& ids = json_require(e, where, "ids");
  if (!ids.is_array()) throw_input(where, "ids: expected an array of token ids");
  if (e.contains("tokens") && (!e["tokens"].is_array() || e["tokens"].size() != ids.size()))
    throw_input(where, "tokens: expected as many tokens as ids");
  std::vector<int32_t> out;
  for (const Json& id : ids) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > kMaxId)
      throw_input(where, "ids: " + id.dump() + " is not a token id");
    out.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return out;
}

// A [token, id] pair of RobertaProcessing / BertProcessing.
int32_t pair_id(const Json& step, const std::string& subject, const char* key) {
  const Json& v = json_require(step, subject, key);
  if (!v.is_array() || v.size() != 2 || !v[0].is_string() || !v[1].is_number_integer() || v[1].get<int64_t>() < 0 ||
      v[1].get<int64_t>() > kMaxId)
    throw_input(subject, std::string(key) + ": expected [token, id]");
  return static_cast<int32_t>(v[1].get<int64_t>());
}

}  // namespace

PostProcessor PostProcessor::from_json(const Json& j, const std::string& subject) {
  PostProcessor p;
  if (j.is_null()) return p;
  if (!j.is_object()) throw_input(subject, "expected an object");
  if (json_string(j, subject, "type") == "Sequence") {
    const Json& list = json_require(j, subject, "processors");
    if (!list.is_array()) throw_input(subject, "processors: expected an array");
    for (size_t k = 0; k < list.size(); ++k) {
      const std::string where = subject + ".processors[" + std::to_string(k) + "]";
      if (!list[k].is_object()) throw_input(where, "expected an object");
      if (json_string(list[k], where, "type") == "Sequence") throw_input(where, "type: a Sequence inside a Sequence is not supported");
      p.add_step(list[k], where);
    }
  } else {
    p.add_step(j, subject);
  }
  return p;
}

// One processor, wrapped around what the steps before it produced.
void PostProcessor::add_step(const Json& j, const std::string& subject) {
  const std::string type = json_string(j, subject, "type");
  std::vector<int32_t> before, after;
  if (type == "ByteLevel") {
    return;  // trim_offsets and add_prefix_space only change offsets
  } else if (type == "TemplateProcessing") {
    const Json& single = json_require(j, subject, "single");
    std::vector<Json> pieces;
    if (single.is_string()) {  // "<s> $A </s>"
      const std::string s = single.get<std::string>();
      for (size_t i = 0; i < s.size();) {
        size_t e = s.find(' ', i);
        if (e == std::string::npos) e = s.size();
        if (e > i) pieces.emplace_back(s.substr(i, e - i));
        i = e + 1;
      }
    } else if (single.is_array()) {
      pieces.assign(single.begin(), single.end());
    } else {
      throw_input(subject, "single: expected an array of pieces");
    }
    int sequences = 0;
    for (size_t k = 0; k < pieces.size(); ++k) {
      std::string special;
      if (read_piece(pieces[k], subject + ": single[" + std::to_string(k) + "]", special)) {
        ++sequences;
        continue;
      }
      std::vector<int32_t> ids = special_ids(j, subject, special);
      (sequences ? after : before).insert((sequences ? after : before).end(), ids.begin(), ids.end());
    }
    if (sequences != 1) throw_input(subject, "single: expected exactly one $A piece, found " + std::to_string(sequences));
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    before = {pair_id(j, subject, "cls")};
    after = {pair_id(j, subject, "sep")};
  } else {
    throw_input(subject, "type: " + json_quote(type, 60) +
                             " is not supported (TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel, "
                             "Sequence)");
  }
  before_.insert(before_.begin(), before.begin(), before.end());
  after_.insert(after_.end(), after.begin(), after.end());
}

std::vector<int32_t> PostProcessor::apply(const std::vector<int32_t>& ids) const {
  std::vector<int32_t> out;
  out.reserve(before_.size() + ids.size() + after_.size());
  out.insert(out.end(), before_.begin(), before_.end());
  out.insert(out.end(), ids.begin(), ids.end());
  out.insert(out.end(), after_.begin(), after_.end());
  return out;
}

std::vector<int32_t> PostProcessor::added_ids() const {
  std::vector<int32_t> out = before_;
  out.insert(out.end(), after_.begin(), after_.end());
  return out;
}

}  // namespace ac
