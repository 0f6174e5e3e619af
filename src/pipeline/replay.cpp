#include "pipeline/replay.hpp"

#include <boost/json.hpp>

namespace tollgate::pipeline {
namespace json = boost::json;

namespace {

json::object chunk_base(const json::object& c) {
  json::object o;
  for (const char* k : {"id", "created", "model", "system_fingerprint"})
    if (auto* v = c.if_contains(k)) o[k] = *v;
  o["object"] = "chat.completion.chunk";
  return o;
}

}  // namespace

std::vector<std::string> completion_to_chunks(const json::object& completion, bool include_usage) {
  std::vector<std::string> out;
  const auto* choices = completion.if_contains("choices");
  if (choices && choices->is_array()) {
    for (const auto& ch : choices->as_array()) {
      if (!ch.is_object()) continue;
      const auto& choice = ch.as_object();
      json::object delta;
      delta["role"] = "assistant";
      if (auto* msg = choice.if_contains("message"); msg && msg->is_object()) {
        for (const auto& [k, v] : msg->as_object())
          if (k != "role") delta[k] = v;
      }
      json::object c = chunk_base(completion);
      json::object dc;
      dc["index"] = choice.contains("index") ? choice.at("index") : json::value(0);
      dc["delta"] = std::move(delta);
      dc["finish_reason"] = nullptr;
      c["choices"] = json::array{std::move(dc)};
      out.push_back(json::serialize(c));

      json::object f = chunk_base(completion);
      json::object fc;
      fc["index"] = choice.contains("index") ? choice.at("index") : json::value(0);
      fc["delta"] = json::object{};
      fc["finish_reason"] = choice.contains("finish_reason") ? choice.at("finish_reason") : json::value("stop");
      f["choices"] = json::array{std::move(fc)};
      out.push_back(json::serialize(f));
    }
  }
  if (include_usage) {
    if (auto* u = completion.if_contains("usage"); u && u->is_object()) {
      json::object c = chunk_base(completion);
      c["choices"] = json::array{};
      c["usage"] = *u;
      out.push_back(json::serialize(c));
    }
  }
  return out;
}

}  // namespace tollgate::pipeline
