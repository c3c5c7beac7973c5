#include "agentcompile/tokenizer/tokenizer.h"

#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "agentcompile/core/error.h"
#include "agentcompile/core/json.h"
#include "agentcompile/tokenizer/added_tokens.h"
#include "agentcompile/tokenizer/bpe.h"
#include "agentcompile/tokenizer/byte_level.h"
#include "agentcompile/tokenizer/normalizer.h"
#include "agentcompile/tokenizer/post_processor.h"
#include "agentcompile/tokenizer/pre_tokenizer.h"
#include "agentcompile/tokenizer/stream_decoder.h"
#include "agentcompile/tokenizer/tokenizer_json.h"
#include "agentcompile/tokenizer/utf8.h"

namespace ac {

namespace {

constexpr size_t kMaxTokenizerBytes = size_t(512) << 20;
constexpr size_t kMaxConfigBytes = size_t(16) << 20;
// Tables by id cost about 80 bytes an id, so the id space must stay in proportion to the tokens
// the file holds: a few tokens with one id of 16,777,215 would otherwise take over a gigabyte.
// Real tokenizers are dense (Qwen3: 151,669 ids for 151,669 tokens; Llama 3: 128,256 for
// 128,256); a trimmed one may keep its special tokens at their high ids, hence the floor.
constexpr int64_t kMinIdSpace = int64_t(1) << 18;
constexpr int64_t kIdsPerToken = 4;

// A token named in tokenizer_config.json: a string, or {"__type": "AddedToken", "content": ...}.
std::optional<std::string> config_token(const Json& cfg, const std::string& subject, const std::string& key) {
  if (!cfg.contains(key) || cfg[key].is_null()) return std::nullopt;
  const Json& v = cfg[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object()) return json_string(v, subject + ": " + key, "content");
  throw_input(subject, key + ": expected a string or an AddedToken object");
}

// Refuses an id space out of proportion to the number of tokens, before anything is sized by it.
void check_id_space(const TokenizerJson& file, const AddedTokens& added, const std::string& subject) {
  int64_t max_id = -1;
  for (const auto& entry : file.vocab) max_id = std::max(max_id, entry.second);
  for (const AddedToken& a : added.tokens()) max_id = std::max(max_id, int64_t(a.id));
  const int64_t tokens = int64_t(file.vocab.size() + added.tokens().size());
  const int64_t allowed = std::max(kMinIdSpace, kIdsPerToken * tokens);
  if (max_id >= allowed)
    throw_input(subject, "the largest token id is " + std::to_string(max_id) + " but there are only " +
                             std::to_string(tokens) + " tokens: ids must stay below " + std::to_string(allowed) +
                             " (" + std::to_string(kIdsPerToken) + " per token, at least " + std::to_string(kMinIdSpace) +
                             ")");
}

void check_decoder(const Json& j, const std::string& subject) {
  if (j.is_null()) throw_input(subject, "missing (a ByteLevel decoder is required: only byte-level BPE is supported)");
  if (!j.is_object()) throw_input(subject, "expected an object");
  std::string type = json_string(j, subject, "type");
  if (type != "ByteLevel") throw_input(subject, "type: " + json_quote(type, 60) + " is not supported (ByteLevel)");
}

}  // namespace

struct Tokenizer::Impl {
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  BpeModel bpe;
  AddedTokens added;
  PostProcessor post;
  std::vector<Piece> pieces;  // by id
  std::vector<bool> exists;   // by id
  std::unordered_map<int32_t, std::string> added_text;
  std::optional<int32_t> bos, eos;
  void build_pieces();
  void read_config(const Json& cfg, const std::string& cname, std::unordered_set<std::string>& special);
  void mark_special(const std::unordered_set<std::string>& special);
};

// What each id decodes to (see Piece).
void Tokenizer::Impl::build_pieces() {
  const auto& texts = bpe.token_texts();
  size_t size = texts.size();
  for (const AddedToken& a : added.tokens()) size = std::max(size, size_t(a.id) + 1);
  pieces.resize(size);
  exists.assign(size, false);
  std::unordered_set<std::string> added_contents;
  for (const AddedToken& a : added.tokens()) added_contents.insert(a.content);
  for (size_t id = 0; id < texts.size(); ++id) {
    if (texts[id].empty()) continue;
    exists[id] = true;
    // A vocabulary entry spelling an added token's content decodes as that text, unconverted.
    if (added_contents.count(texts[id])) pieces[id] = Piece{texts[id], true, false};
    else pieces[id] = Piece{*byte_level_to_bytes(texts[id]), false, false};
  }
  for (const AddedToken& a : added.tokens()) {
    exists[size_t(a.id)] = true;
    pieces[size_t(a.id)] = Piece{a.content, true, false};
    added_text[a.id] = a.content;
  }
}

// tokenizer_config.json: more special tokens, BOS/EOS (the chat template is src/chat's).
void Tokenizer::Impl::read_config(const Json& cfg, const std::string& cname, std::unordered_set<std::string>& special) {
  if (!cfg.is_object()) throw_input(cname, "expected a JSON object");
  if (cfg.contains("additional_special_tokens") && cfg["additional_special_tokens"].is_array())
    for (const Json& s : cfg["additional_special_tokens"])
      if (s.is_string()) special.insert(s.get<std::string>());
  auto bos_token = config_token(cfg, cname, "bos_token");
  auto eos_token = config_token(cfg, cname, "eos_token");
  if (bos_token) bos = bpe.find(*bos_token);
  if (eos_token) eos = bpe.find(*eos_token);
}

// Special tokens are those whose text is in `special`, whatever their id (as the reference filters).
void Tokenizer::Impl::mark_special(const std::unordered_set<std::string>& special) {
  for (size_t id = 0; id < pieces.size(); ++id) {
    if (!exists[id]) continue;
    auto it = added_text.find(static_cast<int32_t>(id));
    pieces[id].special = special.count(it != added_text.end() ? it->second : bpe.token_texts()[id]) > 0;
  }
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw_input(dir.string(), "not a folder");
  const fs::path tj = dir / "tokenizer.json";
  if (!fs::exists(tj, ec)) throw_input(tj.string(), "missing (the model folder has no tokenizer.json)");
  std::string tokenizer_text = read_file(tj, kMaxTokenizerBytes);
  const fs::path cj = dir / "tokenizer_config.json";
  std::string config_text;
  if (fs::exists(cj, ec)) config_text = read_file(cj, kMaxConfigBytes);
  return parse(tokenizer_text, config_text, tj.string(), cj.string());
}

Tokenizer Tokenizer::parse(std::string_view tokenizer_json, std::string_view config_json, const std::string& tname,
                           const std::string& cname) {
  auto impl = std::make_unique<Impl>();
  Impl& t = *impl;
  {
    const TokenizerJson file = read_tokenizer_json(tokenizer_json, tname);
    const Json& root = file.root;
    if (!root.is_object()) throw_input(tname, "expected a JSON object");
    const Json null_json;
    auto field = [&](const char* key) -> const Json& { return root.contains(key) ? root[key] : null_json; };
    t.added = AddedTokens::from_json(field("added_tokens"), tname + ": added_tokens");
    check_id_space(file, t.added, tname);
    t.bpe = BpeModel::from_json(file, tname);
    t.normalizer = Normalizer::from_json(field("normalizer"), tname + ": normalizer");
    t.pre_tokenizer = PreTokenizer::from_json(field("pre_tokenizer"), tname + ": pre_tokenizer");
    t.post = PostProcessor::from_json(field("post_processor"), tname + ": post_processor");
    check_decoder(field("decoder"), tname + ": decoder");
  }

  // Added tokens take over their content's id, as they do in the reference's token maps.
  for (const AddedToken& a : t.added.tokens()) t.bpe.alias(a.content, a.id);
  t.build_pieces();
  for (int32_t id : t.post.added_ids())
    if (id < 0 || size_t(id) >= t.exists.size() || !t.exists[size_t(id)])
      throw_input(tname + ": post_processor", "adds token id " + std::to_string(id) + ", which is not a token");
  std::unordered_set<std::string> special;
  for (const AddedToken& a : t.added.tokens())
    if (a.special) special.insert(a.content);
  if (!config_json.empty()) t.read_config(parse_json_strict(config_json, cname), cname, special);
  t.mark_special(special);
  return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool allow_special) const {
  return encode(text, allow_special, {});
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool allow_special,
                                       const std::vector<std::pair<size_t, size_t>>& plain_spans) const {
  const Impl& t = *impl_;
  std::string sanitized;
  if (!utf8_valid(text)) {
    // The spans index the text as given: replacing invalid bytes would move them.
    if (!plain_spans.empty()) throw_internal("encode", "plain spans need valid UTF-8 text");
    sanitized = utf8_sanitize(text);
    text = sanitized;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<TextSection> sections;
  t.added.split(text, allow_special, plain_spans, sections);
  std::vector<std::string_view> words;
  std::deque<std::string> arena;
  std::string normalized;
  MatchBudget budget;  // one for the whole call: see split_regex.h
  for (const TextSection& s : sections) {
    if (s.token >= 0) {
      ids.push_back(t.added.tokens()[size_t(s.token)].id);
      continue;
    }
    std::string_view norm = t.normalizer.apply(s.text, normalized);
    if (norm.empty()) continue;
    words.clear();
    arena.clear();
    t.pre_tokenizer.split(norm, words, arena, budget);
    for (std::string_view w : words)
      if (!w.empty()) t.bpe.encode_word(w, ids);
  }
  return ids;
}

std::vector<int32_t> Tokenizer::add_special_tokens(const std::vector<int32_t>& ids) const {
  return impl_->post.apply(ids);
}

bool Tokenizer::is_token(int32_t id) const {
  return id >= 0 && size_t(id) < impl_->exists.size() && impl_->exists[size_t(id)];
}

void Tokenizer::check_id(int32_t id) const {
  if (id < 0 || size_t(id) >= impl_->exists.size())
    throw_input("token id " + std::to_string(id), "out of range [0, " + std::to_string(impl_->exists.size()) + ")");
  if (!impl_->exists[size_t(id)]) throw_input("token id " + std::to_string(id), "no token has this id");
}

const Tokenizer::Piece& Tokenizer::piece(int32_t id) const { return impl_->pieces[size_t(id)]; }

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::string out;
  StreamDecoder d(*this, skip_special_tokens);
  for (int32_t id : ids) d.push(id, out);
  d.finish(out);
  return out;
}

std::vector<int32_t> Tokenizer::ids_without_text(const std::vector<int32_t>& ids) const {
  std::vector<int32_t> out;
  std::unordered_set<int32_t> seen;
  for (int32_t id : ids)
    if (!is_token(id) && seen.insert(id).second) out.push_back(id);
  return out;
}

bool Tokenizer::is_special(int32_t id) const { return is_token(id) && impl_->pieces[size_t(id)].special; }

int64_t Tokenizer::vocab_size() const { return static_cast<int64_t>(impl_->exists.size()); }

std::optional<int32_t> Tokenizer::token_id(std::string_view token_text) const {
  return impl_->bpe.find(token_text);
}

std::string Tokenizer::token_text(int32_t id) const {
  if (!is_token(id)) return {};
  auto it = impl_->added_text.find(id);
  return it != impl_->added_text.end() ? it->second : impl_->bpe.token_texts()[size_t(id)];
}

std::optional<int32_t> Tokenizer::bos_token_id() const { return impl_->bos; }
std::optional<int32_t> Tokenizer::eos_token_id() const { return impl_->eos; }

}  // namespace ac
