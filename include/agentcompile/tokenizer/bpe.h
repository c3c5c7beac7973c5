#pragma once
// Byte-level BPE (the tokenizer.json "model" of type BPE): the vocabulary, the merges in either
// stored form ("a b" strings or ["a", "b"] pairs) and ignore_merges. Words are raw bytes; each
// byte starts as its byte-level token and the lowest-ranked adjacent pair is merged first, the
// leftmost on ties (the order of the reference's priority queue). A merge table keyed by the pair
// of ids, a heap over a linked list of symbols (O(n log n) per word) and a bounded cache of
// short words keep encoding fast.
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agentcompile/tokenizer/tokenizer_json.h"

namespace ac {

class BpeModel {
 public:
  // The "model" of a tokenizer.json; errors name the file and the field ("file: model: ...").
  static BpeModel from_json(const TokenizerJson& file, const std::string& file_name);

  BpeModel() = default;
  BpeModel(BpeModel&& o) noexcept;
  BpeModel& operator=(BpeModel&& o) noexcept;

  // Appends the ids of one word (raw bytes, not empty).
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  // Vocabulary entries: id -> token text as stored (byte-level form); ids without an entry are
  // empty. Size is the largest vocabulary id + 1.
  const std::vector<std::string>& token_texts() const { return texts_; }

  // Token text -> id: the vocabulary plus the aliases below (the reference's tokens_to_ids).
  std::optional<int32_t> find(std::string_view text) const;

  // Makes `text` stand for `id`, as an added token with that content does in the reference, whose
  // map of token text to id it overwrites: a merge result or (with ignore_merges) a whole word
  // spelling `text` then yields `id`.
  void alias(const std::string& text, int32_t id);

  bool ignore_merges() const { return ignore_merges_; }

 private:
  struct MergeSlot {
    uint64_t key = ~uint64_t(0);  // left << 32 | right; all ones = empty
    int32_t rank = 0;
    int32_t merged = 0;
  };
  int32_t find_vocab(std::string_view text) const;  // -1 when absent
  bool insert_vocab(int32_t id);                     // false when the text is there already
  const MergeSlot* find_merge(int32_t left, int32_t right) const;
  void insert_merge(int32_t left, int32_t right, int32_t rank, int32_t merged);
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;
  int32_t out_id(int32_t id) const { return remap_.empty() ? id : remap_[size_t(id)]; }

  std::vector<std::string> texts_;
  std::vector<int32_t> index_;  // open addressing over texts_ (ids; -1 = empty), power-of-two size
  uint64_t index_mask_ = 0;
  std::unordered_map<std::string, int32_t> aliases_;  // text -> id, over the vocabulary
  int32_t byte_id_[256] = {};
  std::vector<MergeSlot> merges_;  // open addressing, power-of-two size
  uint64_t merge_mask_ = 0;
  bool ignore_merges_ = false;
  std::vector<int32_t> remap_;  // vocabulary id -> id emitted (empty: identity)

  // Cache of short words; encode is const and may run on several threads.
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace ac
