#pragma once
/// Tool-call indexes of an OpenAI chat stream, made what OpenAI sends (chat.completion.chunk:
/// every `choices[].delta.tool_calls[]` entry has `index`, 0, 1, … one per call). Some
/// OpenAI-compatible servers deviate (tools/mock/README.md "Quirks catalogue"): Ollama before
/// 0.4.7 sent no `index` (github.com/ollama/ollama/issues/7881), later versions index 0 for every
/// call of a parallel answer, each with its own id (github.com/ollama/ollama/issues/15457).
/// Clients that assemble calls by index (the OpenAI SDKs' stream helpers) then merge calls or
/// fail; the repaired chunk keeps every call apart.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

namespace tollgate::providers {

/// One stream's tool calls, per choice. Not thread-safe (one per stream decoder).
class ToolCallIndexer {
 public:
  /// Gives each tool-call delta of `chunk` its call's index: a call is known by its `id` (a new
  /// id is a new call, whatever index it came with); an entry without id continues the call its
  /// upstream index named, or, with no index either, the last call. True when `chunk` changed.
  bool repair(boost::json::object& chunk);

 private:
  struct Choice {
    std::vector<std::string> ids;             ///< call ids by our index ("" = a call that had none)
    std::map<std::int64_t, int> by_upstream;  ///< upstream index → our index (its latest call)
    int last = -1;                            ///< the call the previous delta belonged to
  };
  std::map<std::int64_t, Choice> choices_;
};

}  // namespace tollgate::providers
