#include "agentcompile/tokenizer/bpe.h"

#include <algorithm>
#include <queue>

#include "agentcompile/core/error.h"
#include "agentcompile/tokenizer/byte_level.h"
#include "agentcompile/tokenizer/utf8.h"

namespace ac {

namespace {

constexpr int64_t kMaxVocabId = (int64_t(1) << 24) - 1;
constexpr size_t kMaxCachedWord = 128;     // bytes; longer words rarely repeat
constexpr size_t kMaxCacheEntries = 1 << 17;

uint64_t pair_key(int32_t left, int32_t right) { return (uint64_t(uint32_t(left)) << 32) | uint32_t(right); }

uint64_t hash_text(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}

uint64_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return k;
}

// A merge candidate: the pair starting at symbol `pos` (a byte offset) whose ids were left/right.
struct Candidate {
  int32_t rank;
  int32_t pos;
  int32_t right_pos;
  int32_t left;
  int32_t right;
  int32_t merged;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

struct WordScratch {
  std::vector<int32_t> id, prev, next;
  std::vector<Candidate> heap;
};

}  // namespace

BpeModel::BpeModel(BpeModel&& o) noexcept { *this = std::move(o); }

BpeModel& BpeModel::operator=(BpeModel&& o) noexcept {
  texts_ = std::move(o.texts_);
  index_ = std::move(o.index_);
  index_mask_ = o.index_mask_;
  aliases_ = std::move(o.aliases_);
  std::copy(std::begin(o.byte_id_), std::end(o.byte_id_), std::begin(byte_id_));
  merges_ = std::move(o.merges_);
  merge_mask_ = o.merge_mask_;
  ignore_merges_ = o.ignore_merges_;
  remap_ = std::move(o.remap_);
  cache_ = std::move(o.cache_);
  return *this;
}

int32_t BpeModel::find_vocab(std::string_view text) const {
  if (index_.empty()) return -1;
  for (uint64_t h = hash_text(text) & index_mask_;; h = (h + 1) & index_mask_) {
    int32_t id = index_[h];
    if (id < 0) return -1;
    if (texts_[size_t(id)] == text) return id;
  }
}

bool BpeModel::insert_vocab(int32_t id) {
  const std::string& text = texts_[size_t(id)];
  for (uint64_t h = hash_text(text) & index_mask_;; h = (h + 1) & index_mask_) {
    int32_t& slot = index_[h];
    if (slot < 0) {
      slot = id;
      return true;
    }
    if (texts_[size_t(slot)] == text) return false;
  }
}

std::optional<int32_t> BpeModel::find(std::string_view text) const {
  if (!aliases_.empty()) {
    auto it = aliases_.find(std::string(text));
    if (it != aliases_.end()) return it->second;
  }
  int32_t id = find_vocab(text);
  if (id < 0) return std::nullopt;
  return id;
}

const BpeModel::MergeSlot* BpeModel::find_merge(int32_t left, int32_t right) const {
  const uint64_t key = pair_key(left, right);
  for (uint64_t h = mix(key) & merge_mask_;; h = (h + 1) & merge_mask_) {
    const MergeSlot& s = merges_[h];
    if (s.key == key) return &s;
    if (s.key == ~uint64_t(0)) return nullptr;
  }
}

void BpeModel::insert_merge(int32_t left, int32_t right, int32_t rank, int32_t merged) {
  const uint64_t key = pair_key(left, right);
  for (uint64_t h = mix(key) & merge_mask_;; h = (h + 1) & merge_mask_) {
    MergeSlot& s = merges_[h];
    if (s.key == key || s.key == ~uint64_t(0)) {
      // A repeated pair keeps its last rank, as the reference's Map construction does.
      s = MergeSlot{key, rank, merged};
      return;
    }
  }
}

BpeModel BpeModel::from_json(const TokenizerJson& file, const std::string& file_name) {
  const Json& model = json_require(file.root, file_name, "model");
  const std::string subject = file_name + ": model";
  if (!model.is_object()) throw_input(subject, "expected an object");
  BpeModel m;
  auto type = json_opt_string(model, subject, "type");
  if (type && *type != "BPE") throw_input(subject, "type: " + json_quote(*type, 60) + " is not supported (BPE)");
  if (auto d = json_opt_number(model, subject, "dropout"); d && *d != 0.0)
    throw_input(subject, "dropout: BPE dropout is not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto v = json_opt_string(model, subject, key);
    if (v && !v->empty()) throw_input(subject, std::string(key) + ": " + json_quote(*v, 60) + " is not supported");
  }
  m.ignore_merges_ = json_opt_bool(model, subject, "ignore_merges").value_or(false);

  if (!file.has_vocab)
    throw_input(subject, model.contains("vocab") ? "vocab: expected an object of token -> id" : "vocab: missing");
  int64_t max_id = -1;
  for (const auto& [text, id] : file.vocab) {
    if (id < 0 || id > kMaxVocabId) throw_input(subject, "vocab: " + json_quote(text, 60) + ": not a token id in [0, 2^24)");
    max_id = std::max(max_id, id);
  }
  m.texts_.resize(size_t(max_id + 1));
  size_t cap = 16;
  while (cap < file.vocab.size() * 2) cap <<= 1;
  m.index_.assign(cap, -1);
  m.index_mask_ = cap - 1;
  for (const auto& [text, id64] : file.vocab) {
    const auto id = static_cast<int32_t>(id64);
    if (!m.texts_[size_t(id)].empty()) throw_input(subject, "vocab: id " + std::to_string(id) + " is used by two tokens");
    if (text.empty()) throw_input(subject, "vocab: empty token");
    if (!byte_level_to_bytes(text)) throw_input(subject, "vocab: " + json_quote(text, 60) + " is not byte-level text");
    m.texts_[size_t(id)] = text;
    if (!m.insert_vocab(id)) throw_input(subject, "vocab: " + json_quote(text, 60) + " appears twice");
  }
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    utf8_append(ch, byte_level_char(static_cast<uint8_t>(b)));
    int32_t id = m.find_vocab(ch);
    if (id < 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", b);
      throw_input(subject, std::string("vocab: no token for byte ") + hex + " (\"" + ch + "\"): the byte-level alphabet is incomplete");
    }
    m.byte_id_[b] = id;
  }

  if (!file.has_merges)
    throw_input(subject, model.contains("merges") ? "merges: expected an array" : "merges: missing");
  const auto& merges = file.merges;
  if (merges.size() > size_t(kMaxVocabId)) throw_input(subject, "merges: too many entries");
  cap = 16;
  while (cap < merges.size() + merges.size() / 2) cap <<= 1;
  m.merges_.assign(cap, MergeSlot{});
  m.merge_mask_ = cap - 1;
  std::string joined;
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto& [left, right] = merges[r];
    auto find = [&](const std::string& t) -> int32_t {
      int32_t id = m.find_vocab(t);
      if (id < 0) throw_input(subject, "merges[" + std::to_string(r) + "]: " + json_quote(t, 60) + " is not in the vocabulary");
      return id;
    };
    joined.assign(left);
    joined.append(right);
    const int32_t l = find(left), rr = find(right), merged = find(joined);  // in this order, for the message
    m.insert_merge(l, rr, static_cast<int32_t>(r), merged);
  }
  return m;
}

void BpeModel::alias(const std::string& text, int32_t id) {
  aliases_[text] = id;
  int32_t old = find_vocab(text);
  if (old >= 0 && old != id) {
    if (remap_.empty()) {
      remap_.resize(texts_.size());
      for (size_t k = 0; k < remap_.size(); ++k) remap_[k] = static_cast<int32_t>(k);
    }
    remap_[size_t(old)] = id;
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  thread_local WordScratch w;
  const auto n = static_cast<int32_t>(word.size());
  w.id.resize(size_t(n));
  w.prev.resize(size_t(n));
  w.next.resize(size_t(n));
  w.heap.clear();
  auto push = [&](int32_t pos, int32_t right_pos) {
    if (const MergeSlot* s = find_merge(w.id[size_t(pos)], w.id[size_t(right_pos)])) {
      w.heap.push_back(Candidate{s->rank, pos, right_pos, w.id[size_t(pos)], w.id[size_t(right_pos)], s->merged});
      std::push_heap(w.heap.begin(), w.heap.end(), std::greater<>());
    }
  };
  for (int32_t i = 0; i < n; ++i) {
    w.id[size_t(i)] = byte_id_[static_cast<uint8_t>(word[size_t(i)])];
    w.prev[size_t(i)] = i - 1;
    w.next[size_t(i)] = i + 1 < n ? i + 1 : -1;
  }
  for (int32_t i = 0; i + 1 < n; ++i) push(i, i + 1);
  while (!w.heap.empty()) {
    std::pop_heap(w.heap.begin(), w.heap.end(), std::greater<>());
    Candidate c = w.heap.back();
    w.heap.pop_back();
    // Stale when either side has merged since: merges keep the left symbol's position, so a
    // pair is still current if the same two ids still sit next to each other.
    if (w.id[size_t(c.pos)] != c.left || w.next[size_t(c.pos)] != c.right_pos || w.id[size_t(c.right_pos)] != c.right)
      continue;
    w.id[size_t(c.pos)] = c.merged;
    w.id[size_t(c.right_pos)] = -1;
    int32_t after = w.next[size_t(c.right_pos)];
    w.next[size_t(c.pos)] = after;
    if (after >= 0) w.prev[size_t(after)] = c.pos;
    if (w.prev[size_t(c.pos)] >= 0) push(w.prev[size_t(c.pos)], c.pos);
    if (after >= 0) push(c.pos, after);
  }
  for (int32_t i = 0; i >= 0; i = w.next[size_t(i)]) out.push_back(out_id(w.id[size_t(i)]));
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() == 1) {
    out.push_back(out_id(byte_id_[static_cast<uint8_t>(word[0])]));
    return;
  }
  if (ignore_merges_) {
    if (auto id = find(bytes_to_byte_level(word))) {
      out.push_back(*id);
      return;
    }
  }
  const bool cacheable = word.size() <= kMaxCachedWord;
  std::string key;
  if (cacheable) {
    key.assign(word);
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = out.size();
  merge_word(word, out);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();
    cache_.emplace(std::move(key), std::vector<int32_t>(out.begin() + std::ptrdiff_t(start), out.end()));
  }
}

}  // namespace ac
