#include "agentcompile/tokenizer/tokenizer_json.h"

#include <cmath>

#include "agentcompile/core/error.h"

namespace ac {

namespace {

constexpr int kMaxDepth = 64;
constexpr int64_t kMaxId = INT32_MAX;

class Reader : public nlohmann::json_sax<Json> {
 public:
  Reader(TokenizerJson& out, const std::string& subject) : out_(out), subject_(subject) {}

  bool null() override { return value(Json(nullptr)); }
  bool boolean(bool v) override { return value(Json(v)); }
  bool number_integer(number_integer_t v) override {
    if (mode_ == Mode::Vocab) return vocab_id(v >= 0 && v <= kMaxId ? v : -1);
    return value(Json(v));
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (mode_ == Mode::Vocab) return vocab_id(v <= uint64_t(kMaxId) ? int64_t(v) : -1);
    return value(Json(v));
  }
  bool number_float(number_float_t v, const string_t&) override {
    if (mode_ == Mode::Vocab) return vocab_id(v >= 0 && v <= double(kMaxId) && v == std::floor(v) ? int64_t(v) : -1);
    return value(Json(v));
  }
  bool string(string_t& s) override {
    if (mode_ == Mode::Merges) {
      size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        fail("model: " + merge_name() + ": " + json_quote(s, 60) + " is not \"left right\"");
      out_.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      return true;
    }
    if (mode_ == Mode::MergePair) {
      if (pair_.size() == 2) fail("model: " + merge_name() + ": expected two strings");
      pair_.push_back(std::move(s));
      return true;
    }
    return value(Json(std::move(s)));
  }
  bool binary(binary_t&) override { return value(Json(nullptr)); }

  bool start_object(std::size_t) override {
    enter();
    if (mode_ == Mode::Dom && at_model_field("vocab")) {
      out_.has_vocab = true;
      mode_ = Mode::Vocab;
      return true;
    }
    if (mode_ != Mode::Dom) fail("model: " + where() + ": unexpected object");
    frames_.push_back({put(Json::object()), {}});
    return true;
  }
  bool key(string_t& k) override {
    if (mode_ == Mode::Vocab) {
      vocab_key_ = std::move(k);
      return true;
    }
    // model.vocab and model.merges are streamed, not kept in the tree: their flags catch repeats.
    const bool in_model = frames_.size() == 2 && frames_[0].key == "model";
    const bool streamed_again = in_model && ((k == "vocab" && out_.has_vocab) || (k == "merges" && out_.has_merges));
    if (frames_.back().node->contains(k) || streamed_again) fail("invalid JSON: duplicate key " + json_quote(k, 60));
    frames_.back().key = std::move(k);
    return true;
  }
  bool end_object() override {
    --depth_;
    if (mode_ == Mode::Vocab) {
      mode_ = Mode::Dom;
      return true;
    }
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    enter();
    if (mode_ == Mode::Dom && at_model_field("merges")) {
      out_.has_merges = true;
      mode_ = Mode::Merges;
      return true;
    }
    if (mode_ == Mode::Merges) {
      mode_ = Mode::MergePair;
      pair_.clear();
      return true;
    }
    if (mode_ != Mode::Dom) fail("model: " + where() + ": unexpected array");
    frames_.push_back({put(Json::array()), {}});
    return true;
  }
  bool end_array() override {
    --depth_;
    if (mode_ == Mode::MergePair) {
      if (pair_.size() != 2) fail("model: " + merge_name() + ": expected two strings");
      out_.merges.emplace_back(std::move(pair_[0]), std::move(pair_[1]));
      mode_ = Mode::Merges;
      return true;
    }
    if (mode_ == Mode::Merges) {
      mode_ = Mode::Dom;
      return true;
    }
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    fail("invalid JSON: " + json_error_text(e.what()));  // printable: nlohmann quotes the raw bytes
  }

 private:
  enum class Mode { Dom, Vocab, Merges, MergePair };
  struct Frame {
    Json* node;
    std::string key;  // objects: the key of the value being read
  };

  [[noreturn]] void fail(const std::string& why) { throw_input(subject_, why); }

  void enter() {
    if (++depth_ > kMaxDepth) fail("invalid JSON: nested deeper than " + std::to_string(kMaxDepth) + " levels");
  }
  // True when the container about to open is root.model.<name>.
  bool at_model_field(const char* name) const {
    return frames_.size() == 2 && frames_[0].key == "model" && frames_[1].node->is_object() && frames_[1].key == name;
  }
  std::string merge_name() const { return "merges[" + std::to_string(out_.merges.size()) + "]"; }
  std::string where() const {
    if (mode_ == Mode::Vocab) return "vocab: " + json_quote(vocab_key_, 60);
    return merge_name();
  }
  bool vocab_id(int64_t id) {
    out_.vocab.emplace_back(std::move(vocab_key_), id);
    return true;
  }
  bool value(Json v) {
    if (mode_ == Mode::Vocab) {
      vocab_id(-1);
      return true;
    }
    if (mode_ != Mode::Dom) fail("model: " + merge_name() + ": expected \"left right\" or [\"left\", \"right\"]");
    put(std::move(v));
    return true;
  }
  Json* put(Json v) {
    if (frames_.empty()) {
      out_.root = std::move(v);
      return &out_.root;
    }
    Json& top = *frames_.back().node;
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    Json& slot = top[frames_.back().key];
    slot = std::move(v);
    return &slot;
  }

  TokenizerJson& out_;
  const std::string& subject_;
  Mode mode_ = Mode::Dom;
  std::vector<Frame> frames_;
  std::vector<std::string> pair_;
  std::string vocab_key_;
  int depth_ = 0;
};

}  // namespace

TokenizerJson read_tokenizer_json(std::string_view text, const std::string& subject) {
  TokenizerJson out;
  // Most of the file is vocab and merges; reserving (untouched memory is free) avoids regrowth.
  out.vocab.reserve(text.size() / 32);
  out.merges.reserve(text.size() / 24);
  Reader reader(out, subject);
  Json::sax_parse(text.begin(), text.end(), &reader, nlohmann::detail::input_format_t::json, /*strict=*/true);
  return out;
}

}  // namespace ac
