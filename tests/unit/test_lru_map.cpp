// LruMap (core/lru_map.h): at most `capacity` entries, the least recently used (found or inserted)
// evicted first; a found entry moves to the front; inserting an existing key replaces its value
// without evicting anything.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "agentcompile/core/lru_map.h"

using namespace ac;

TEST(LruMap, EvictsTheLeastRecentlyUsed) {
  LruMap<int, std::string> m(3);
  m.insert(1, "a");
  m.insert(2, "b");
  m.insert(3, "c");
  ASSERT_NE(m.find(1), nullptr);  // 1 is now the most recent: 2 is the least
  m.insert(4, "d");
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.evicted(), 1u);
  EXPECT_EQ(m.find(2), nullptr);
  ASSERT_NE(m.find(1), nullptr);
  EXPECT_EQ(*m.find(1), "a");
  EXPECT_EQ(*m.find(3), "c");
  EXPECT_EQ(*m.find(4), "d");
  // Replacing a present key keeps the size and evicts nothing; it becomes the most recent.
  m.insert(3, "C");
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.evicted(), 1u);
  EXPECT_EQ(*m.find(3), "C");
  m.insert(5, "e");  // the least recent now: 1 (found before 3, 4 and the replacement of 3)
  EXPECT_EQ(m.find(1), nullptr);
  EXPECT_NE(m.find(4), nullptr);
  EXPECT_NE(m.find(5), nullptr);
}

TEST(LruMap, BoundedOverManyKeysAndHoldsMoveOnlyValues) {
  LruMap<long long, std::unique_ptr<int>> m(8);
  for (long long k = 0; k < 1000; ++k) {
    int& v = *m.insert(k, std::make_unique<int>(int(k)));
    EXPECT_EQ(v, int(k));
    EXPECT_LE(m.size(), 8u);
  }
  EXPECT_EQ(m.size(), 8u);
  EXPECT_EQ(m.evicted(), 992u);
  for (long long k = 992; k < 1000; ++k) ASSERT_NE(m.find(k), nullptr) << k;
  EXPECT_EQ(m.find(991), nullptr);
  LruMap<int, int> one(0);  // a capacity of 0 holds one entry
  one.insert(1, 1);
  one.insert(2, 2);
  EXPECT_EQ(one.capacity(), 1u);
  EXPECT_EQ(one.find(1), nullptr);
  EXPECT_EQ(*one.find(2), 2);
}
