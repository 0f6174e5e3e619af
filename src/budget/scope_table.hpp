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
  /// std::bad_alloc (the table is unchanged then).
  V& find_or_add(std::size_t hash, const ScopeId& id) {
    if (V* v = find(hash, id)) return *v;
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();  // load factor at most 3/4
    Node* node = make(id);
    place(Slot{hash, node});
    ++size_;
    return node->value;
  }

  /// Erases every entry for which `pred(kind, id, value)` is true; returns how many. Pointers to
  /// the other values stay valid.
  template <class Pred>
  std::size_t erase_if(Pred pred) {
    const auto doomed = [&pred](const Slot& s) {
      return s.node != nullptr && pred(s.node->kind, s.node->id(), std::as_const(s.node->value));
    };
    bool any = false;
    for (const Slot& s : slots_)
      if ((any = doomed(s))) break;
    if (!any) return 0;
    std::vector<Slot> kept(slots_.size());  // allocated before anything changes (may throw)
    kept.swap(slots_);                      // slots_: all empty, the same size
    std::size_t erased = 0;
    for (const Slot& s : kept) {
      if (s.node == nullptr) continue;
      if (doomed(s)) {
        destroy(s.node);
        ++erased;
      } else {
        place(s);
      }
    }
    size_ -= erased;
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

  static Node* make(const ScopeId& id) {
    void* mem = ::operator new(sizeof(Node) + id.id.size());
    Node* node = ::new (mem) Node{};
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
