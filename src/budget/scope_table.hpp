#pragma once
/// ScopeTable: the budget ledger's map from a scope to its counters, built for admission's lookups
/// (issue 16: admission with 1M keys in ≤ 2 µs). Open addressing with linear probing over slots
/// of {hash, node}; a node holds the value and the scope's kind and id bytes in one allocation.
/// A hit in a table too large for the caches costs two memory loads that miss (the slot, the
/// node) where std::unordered_map's costs four (the bucket, the node before, the node, the id's
/// heap bytes).
///
/// Not thread-safe (the ledger guards each shard's table with the shard's mutex). A value's
/// address is stable from its insertion until it is erased or the table destroyed: growing moves
/// slots, never nodes.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "budget/scope.hpp"

namespace tollgate::budget {

template <class V>
class ScopeTable {
 public:
  ScopeTable() = default;
  ScopeTable(const ScopeTable&) = delete;
  ScopeTable& operator=(const ScopeTable&) = delete;
  ~ScopeTable() {
    for (const Slot& s : slots_)
      if (s.node != nullptr) destroy(s.node);
  }

  /// The value of `id`, whose ScopeIdHash is `hash`; nullptr when absent.
  V* find(std::size_t hash, const ScopeId& id) noexcept {
    if (slots_.empty()) return nullptr;
    for (std::size_t i = home(hash);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.node == nullptr) return nullptr;
      if (s.hash == hash && s.node->is(id)) return &s.node->value;
    }
  }
  const V* find(std::size_t hash, const ScopeId& id) const noexcept {
    return const_cast<ScopeTable*>(this)->find(hash, id);
  }

  /// The value of `id` (ScopeIdHash `hash`), value-initialised and inserted when absent. Throws
  /// std::bad_alloc, or std::length_error for an id of 4 GiB or more (the table keeps its entries
  /// then).
  V& find_or_add(std::size_t hash, const ScopeId& id) {
    if (V* v = find(hash, id)) return *v;
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();  // load factor at most 3/4
    Node* node = make(id);
    place(Slot{hash, node});
    ++size_;
    return node->value;
  }

  /// Erases every entry for which `pred(kind, id, value)` is true; returns how many. Pointers to
  /// the other values stay valid. Allocates nothing. `pred` must not change the table; an entry
  /// may be shown to it twice (when erasing moves it back across the slots' end), so it should
  /// answer the same for the same entry. If it throws, the entries erased before stay erased and
  /// the table stays whole.
  template <class Pred>
  std::size_t erase_if(Pred pred) {
    std::size_t erased = 0;
    for (std::size_t i = 0; i < slots_.size();) {
      Node* node = slots_[i].node;
      if (node == nullptr || !pred(node->kind, node->id(), std::as_const(node->value))) {
        ++i;
        continue;
      }
      remove_at(i);  // slot i now holds a later entry of the run, or nothing: look at it again
      destroy(node);
      --size_;
      ++erased;
    }
    return erased;
  }

  /// Calls `fn(kind, id, value)` for every entry, in no particular order.
  template <class Fn>
  void for_each(Fn fn) const {
    for (const Slot& s : slots_)
      if (s.node != nullptr) fn(s.node->kind, s.node->id(), std::as_const(s.node->value));
  }

  std::size_t size() const noexcept { return size_; }

 private:
  struct Node {
    V value{};
    ScopeKind kind;
    std::uint32_t length;
    // `length` bytes of the id follow the node in the same allocation.
    const char* bytes() const noexcept { return reinterpret_cast<const char*>(this + 1); }
    std::string_view id() const noexcept { return {bytes(), length}; }
    bool is(const ScopeId& s) const noexcept {
      return kind == s.kind && length == s.id.size() && std::memcmp(bytes(), s.id.data(), length) == 0;
    }
  };
  struct Slot {
    std::size_t hash = 0;
    Node* node = nullptr;
  };

  static_assert(alignof(Node) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
  static_assert(sizeof(std::size_t) == 8, "home() and grow() take the slot from a 64-bit hash's high bits");

  static Node* make(const ScopeId& id) {
    if (id.id.size() > UINT32_MAX) throw std::length_error("scope id longer than 4 GiB");
    void* mem = ::operator new(sizeof(Node) + id.id.size());
    Node* node = nullptr;
    try {
      node = ::new (mem) Node{};
    } catch (...) {
      ::operator delete(mem);
      throw;
    }
    node->kind = id.kind;
    node->length = static_cast<std::uint32_t>(id.id.size());
    std::memcpy(reinterpret_cast<char*>(node + 1), id.id.data(), id.id.size());
    return node;
  }
  static void destroy(Node* node) noexcept {
    node->~Node();
    ::operator delete(node);
  }

  // The slot a hash starts probing at: its high bits (the ledger picks shards from the low ones).
  std::size_t home(std::size_t hash) const noexcept { return static_cast<std::size_t>(hash >> shift_); }

  // Backward-shift deletion: the entries after `hole` in its run move back into it while their
  // home allows, so no probe run is broken and no tombstone is left.
  void remove_at(std::size_t hole) noexcept {
    for (std::size_t j = (hole + 1) & mask_;; j = (j + 1) & mask_) {
      const Slot s = slots_[j];
      if (s.node == nullptr) break;
      // It may move to the hole unless its home lies (cyclically) after the hole, up to j.
      if (((j - home(s.hash)) & mask_) >= ((j - hole) & mask_)) {
        slots_[hole] = s;
        hole = j;
      }
    }
    slots_[hole] = Slot{};
  }

  void place(Slot s) noexcept {
    std::size_t i = home(s.hash);
    while (slots_[i].node != nullptr) i = (i + 1) & mask_;
    slots_[i] = s;
  }

  void grow() {
    const std::size_t cap = slots_.empty() ? 16 : slots_.size() * 2;
    std::vector<Slot> old(cap);
    old.swap(slots_);
    mask_ = cap - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(cap));
    for (const Slot& s : old)
      if (s.node != nullptr) place(s);
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
  std::size_t mask_ = 0;
  unsigned shift_ = 64;
};

}  // namespace tollgate::budget
