#include "budget/scope_table.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tollgate::budget {
namespace {

struct Counter {
  std::int64_t n = 0;
};

std::size_t hash_of(const ScopeId& id) { return ScopeIdHash{}(id); }

TEST(ScopeTable, AnEmptyTableFindsNothing) {
  ScopeTable<Counter> t;
  EXPECT_EQ(t.find(hash_of({ScopeKind::key, "k"}), {ScopeKind::key, "k"}), nullptr);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.erase_if([](ScopeKind, std::string_view, const Counter&) { return true; }), 0u);
}

TEST(ScopeTable, AddsOnceAndKeepsEveryValueInPlaceWhileItGrows) {
  ScopeTable<Counter> t;
  std::vector<std::pair<ScopeId, Counter*>> added;
  for (int i = 0; i < 20'000; ++i) {
    ScopeId id{i % 2 == 0 ? ScopeKind::key : ScopeKind::team, std::string(64, 'a') + std::to_string(i)};
    Counter& c = t.find_or_add(hash_of(id), id);
    EXPECT_EQ(c.n, 0);  // value-initialised
    c.n = i;
    added.emplace_back(std::move(id), &c);
  }
  EXPECT_EQ(t.size(), 20'000u);
  for (std::size_t i = 0; i < added.size(); ++i) {
    const auto& [id, where] = added[i];
    ASSERT_EQ(t.find(hash_of(id), id), where) << i;  // the same node after every growth
    EXPECT_EQ(where->n, static_cast<std::int64_t>(i));
    EXPECT_EQ(&t.find_or_add(hash_of(id), id), where);  // found, not added again
  }
  EXPECT_EQ(t.size(), 20'000u);
}

TEST(ScopeTable, KindLengthAndEveryByteTellScopesApart) {
  ScopeTable<Counter> t;
  const std::vector<ScopeId> ids = {{ScopeKind::key, "x"},        {ScopeKind::team, "x"},
                                    {ScopeKind::key, "xx"},       {ScopeKind::key, std::string("x\0", 2)},
                                    {ScopeKind::global, ""},      {ScopeKind::key, ""},
                                    {ScopeKind::key, "abcdefgh"}, {ScopeKind::key, "abcdefgi"}};
  // One hash for all of them: only the comparison of kind, length and bytes separates them.
  for (std::size_t i = 0; i < ids.size(); ++i) t.find_or_add(42, ids[i]).n = static_cast<std::int64_t>(i) + 1;
  EXPECT_EQ(t.size(), ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const Counter* c = t.find(42, ids[i]);
    ASSERT_NE(c, nullptr) << i;
    EXPECT_EQ(c->n, static_cast<std::int64_t>(i) + 1);
  }
  EXPECT_EQ(t.find(42, {ScopeKind::team, "xx"}), nullptr);
  EXPECT_EQ(t.find(43, ids[0]), nullptr);  // the hash is part of the key the caller gives
}

TEST(ScopeTable, EraseIfKeepsTheOthersFindableAndInPlace) {
  ScopeTable<Counter> t;
  std::vector<std::pair<ScopeId, Counter*>> added;
  for (int i = 0; i < 1'000; ++i) {
    ScopeId id{ScopeKind::end_user, "u-" + std::to_string(i)};
    // A weak hash (8 values) makes long probe runs, which erasing must not break.
    Counter& c = t.find_or_add(static_cast<std::size_t>(i % 8) << 60, id);
    c.n = i;
    added.emplace_back(std::move(id), &c);
  }
  std::size_t visited = 0;
  const auto erased = t.erase_if([&](ScopeKind kind, std::string_view id, const Counter& c) {
    ++visited;
    EXPECT_EQ(kind, ScopeKind::end_user);
    EXPECT_EQ(id, "u-" + std::to_string(c.n));
    return c.n % 3 == 0;
  });
  EXPECT_GE(visited, 1'000u);
  EXPECT_EQ(erased, 334u);
  EXPECT_EQ(t.size(), 666u);
  for (int i = 0; i < 1'000; ++i) {
    const auto& [id, where] = added[static_cast<std::size_t>(i)];
    const Counter* c = t.find(static_cast<std::size_t>(i % 8) << 60, id);
    if (i % 3 == 0) {
      EXPECT_EQ(c, nullptr) << i;
    } else {
      EXPECT_EQ(c, where) << i;
      EXPECT_EQ(c->n, i);
    }
  }
  std::size_t seen = 0;
  t.for_each([&](ScopeKind, std::string_view, const Counter& c) {
    ++seen;
    EXPECT_NE(c.n % 3, 0);
  });
  EXPECT_EQ(seen, 666u);
}

// A run that starts at the last slot wraps to the first ones; erasing its first entry must move
// the wrapped ones back across the end, and erasing them must not break the run.
TEST(ScopeTable, ErasingInARunThatWrapsAroundTheEndKeepsTheRestFindable) {
  ScopeTable<Counter> t;
  constexpr std::size_t kLast = std::size_t{0xF} << 60;  // the last slot of the first 16
  std::vector<ScopeId> ids;
  for (int i = 0; i < 6; ++i) {
    ids.push_back({ScopeKind::tag, "t" + std::to_string(i)});
    t.find_or_add(kLast, ids.back()).n = i;
  }
  t.find_or_add(std::size_t{1} << 60, {ScopeKind::tag, "home-1"}).n = 100;  // pushed along by the run
  ASSERT_EQ(t.size(), 7u);
  for (int gone : {0, 3, 5}) {
    EXPECT_EQ(t.erase_if([&](ScopeKind, std::string_view, const Counter& c) { return c.n == gone; }), 1u);
    EXPECT_EQ(t.find(kLast, ids[static_cast<std::size_t>(gone)]), nullptr);
    for (int i = 0; i < 6; ++i) {
      if (i == 0 || i == 3 || i == 5) {
        if (i <= gone) {
          EXPECT_EQ(t.find(kLast, ids[static_cast<std::size_t>(i)]), nullptr) << i;
        }
        continue;
      }
      const Counter* c = t.find(kLast, ids[static_cast<std::size_t>(i)]);
      ASSERT_NE(c, nullptr) << "after erasing " << gone << ", " << i;
      EXPECT_EQ(c->n, i);
    }
    const Counter* other = t.find(std::size_t{1} << 60, {ScopeKind::tag, "home-1"});
    ASSERT_NE(other, nullptr) << gone;
    EXPECT_EQ(other->n, 100);
  }
  EXPECT_EQ(t.size(), 4u);
}

// A predicate that throws leaves the entries erased before erased and the table whole.
TEST(ScopeTable, APredicateThatThrowsLeavesTheTableWhole) {
  ScopeTable<Counter> t;
  for (int i = 0; i < 40; ++i) t.find_or_add(static_cast<std::size_t>(i % 4) << 62, {ScopeKind::key, std::to_string(i)}).n = i;
  int calls = 0;
  EXPECT_THROW(t.erase_if([&](ScopeKind, std::string_view, const Counter& c) {
    if (++calls == 20) throw std::runtime_error("stop");
    return c.n % 2 == 0;
  }),
               std::runtime_error);
  std::size_t found = 0;
  for (int i = 0; i < 40; ++i)
    if (const Counter* c = t.find(static_cast<std::size_t>(i % 4) << 62, {ScopeKind::key, std::to_string(i)})) {
      EXPECT_EQ(c->n, i);
      ++found;
    }
  EXPECT_EQ(found, t.size());
  EXPECT_LT(t.size(), 40u);
  EXPECT_GE(t.size(), 20u);  // at most the 19 entries shown before the throw were erased
}

// Random adds, finds and erases against std::map, with hashes from a small set so that probe
// runs are long.
TEST(ScopeTable, AgreesWithAnOrderedMapUnderRandomOperations) {
  std::mt19937_64 rng(7);
  ScopeTable<Counter> t;
  std::map<std::pair<int, std::string>, std::int64_t> model;
  const auto hash = [](const std::string& id) { return (std::hash<std::string>{}(id) % 16) * 0x1111111111111111ULL; };
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 500; ++i) {
      const std::string id = std::to_string(rng() % 3'000);
      const auto kind = rng() % 2 == 0 ? ScopeKind::key : ScopeKind::tag;
      Counter& c = t.find_or_add(hash(id), {kind, id});
      c.n += 1;
      model[{static_cast<int>(kind), id}] += 1;
    }
    const std::int64_t cut = static_cast<std::int64_t>(rng() % 3);
    const auto erased = t.erase_if([&](ScopeKind, std::string_view, const Counter& c) { return c.n <= cut; });
    std::size_t expected = 0;
    for (auto it = model.begin(); it != model.end();)
      if (it->second <= cut) {
        it = model.erase(it);
        ++expected;
      } else {
        ++it;
      }
    ASSERT_EQ(erased, expected) << round;
    ASSERT_EQ(t.size(), model.size()) << round;
    for (const auto& [key, n] : model) {
      const Counter* c = t.find(hash(key.second), {static_cast<ScopeKind>(key.first), key.second});
      ASSERT_NE(c, nullptr);
      ASSERT_EQ(c->n, n);
    }
  }
}

}  // namespace
}  // namespace tollgate::budget
