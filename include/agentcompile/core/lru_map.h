#pragma once
// A map that holds at most `capacity` entries: inserting into a full one evicts the entry used
// least recently (found or inserted). For caches keyed by inputs a long-running process may see
// without bound (a server's prompt lengths), where a plain map would only grow. Header-only; not
// thread-safe (its users hold one per executor).
#include <cstddef>
#include <iterator>
#include <list>
#include <map>
#include <utility>

namespace ac {

template <class K, class V>
class LruMap {
 public:
  explicit LruMap(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

  // The value under `k`, now the most recently used; null when absent.
  V* find(const K& k) {
    auto it = index_.find(k);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }

  // Stores `v` under `k` (replacing one there), evicting the least recently used entry when full;
  // returns the stored value. References to other entries stay valid unless evicted.
  V& insert(const K& k, V v) {
    if (auto it = index_.find(k); it != index_.end()) {
      it->second->second = std::move(v);
      order_.splice(order_.begin(), order_, it->second);
      return it->second->second;
    }
    if (order_.size() >= capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
      ++evicted_;
    }
    order_.emplace_front(k, std::move(v));
    index_.emplace(k, order_.begin());
    return order_.front().second;
  }

  size_t size() const { return order_.size(); }
  size_t capacity() const { return capacity_; }
  size_t evicted() const { return evicted_; }  // entries evicted so far

 private:
  size_t capacity_;
  size_t evicted_ = 0;
  std::list<std::pair<K, V>> order_;  // most recently used first
  std::map<K, typename std::list<std::pair<K, V>>::iterator> index_;
};

}  // namespace ac
