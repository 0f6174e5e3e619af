#include "providers/tool_call_index.hpp"

#include <algorithm>

#include <boost/json.hpp>

namespace tollgate::providers {
namespace json = boost::json;

namespace {

std::optional<std::int64_t> int_of(const json::value* v) {
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64() && v->as_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) return static_cast<std::int64_t>(v->as_uint64());
  return std::nullopt;
}

}  // namespace

bool ToolCallIndexer::repair(json::object& chunk) {
  auto* choices = chunk.if_contains("choices");
  if (choices == nullptr || !choices->is_array()) return false;
  bool changed = false;
  for (auto& cv : choices->as_array()) {
    auto* choice = cv.if_object();
    if (choice == nullptr) continue;
    auto* delta = choice->if_contains("delta");
    if (delta == nullptr || !delta->is_object()) continue;
    auto* calls = delta->as_object().if_contains("tool_calls");
    if (calls == nullptr || !calls->is_array()) continue;
    Choice& st = choices_[int_of(choice->if_contains("index")).value_or(0)];
    for (auto& callv : calls->as_array()) {
      auto* call = callv.if_object();
      if (call == nullptr) continue;
      const auto up = int_of(call->if_contains("index"));
      const auto* idv = call->if_contains("id");
      const std::string id = idv != nullptr && idv->is_string() ? std::string(idv->as_string()) : std::string();
      int ix = -1;
      if (!id.empty()) {
        auto it = std::find(st.ids.begin(), st.ids.end(), id);
        if (it != st.ids.end()) {
          ix = static_cast<int>(it - st.ids.begin());
        } else if (st.last >= 0 && st.ids[static_cast<std::size_t>(st.last)].empty() && up &&
                   st.by_upstream.contains(*up) && st.by_upstream[*up] == st.last) {
          ix = st.last;  // a call whose first delta had no id learns it now
          st.ids[static_cast<std::size_t>(ix)] = id;
        } else {
          ix = static_cast<int>(st.ids.size());
          st.ids.push_back(id);
        }
      } else if (up && st.by_upstream.contains(*up)) {
        ix = st.by_upstream[*up];
      } else if (!up && st.last >= 0) {
        ix = st.last;
      } else {
        ix = static_cast<int>(st.ids.size());
        st.ids.emplace_back();
      }
      if (up) st.by_upstream[*up] = ix;
      st.last = ix;
      if (!up || *up != ix) {
        (*call)["index"] = ix;
        changed = true;
      }
    }
  }
  return changed;
}

}  // namespace tollgate::providers
