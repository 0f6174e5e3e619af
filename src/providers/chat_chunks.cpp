#include "providers/chat_chunks.hpp"

#include "providers/provider.hpp"

#include <chrono>

#include <boost/json/serialize.hpp>

#include "core/json_out.hpp"

namespace tollgate::providers {

ChunkWriter::ChunkWriter(std::string id, std::string model, bool include_usage, std::int64_t created)
    : id_(std::move(id)), model_(std::move(model)), include_usage_(include_usage), created_(created) {
  if (created_ == 0)
    created_ = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void ChunkWriter::set_id(std::string id) { id_ = std::move(id); }

std::string ChunkWriter::prefix() const {
  std::string s = "{\"id\":";
  core::append_json_string(s, id_);
  s += ",\"object\":\"chat.completion.chunk\",\"created\":" + std::to_string(created_) + ",\"model\":";
  core::append_json_string(s, model_);
  s += ',';
  return s;
}

std::string ChunkWriter::chunk(std::string_view delta_json, std::string_view finish_reason) const {
  std::string s = prefix();
  s += "\"choices\":[{\"index\":0,\"delta\":";
  s += delta_json;
  s += ",\"logprobs\":null,\"finish_reason\":";
  if (finish_reason.empty()) s += "null";
  else core::append_json_string(s, finish_reason);
  s += "}]";
  if (include_usage_) s += ",\"usage\":null";
  s += '}';
  return s;
}

std::string ChunkWriter::role() const { return chunk(R"({"role":"assistant","content":""})", ""); }

std::string ChunkWriter::content(std::string_view text) const {
  std::string d = "{\"content\":";
  core::append_json_string(d, text);
  d += '}';
  return chunk(d, "");
}

std::string ChunkWriter::tool_call_start(std::int64_t index, std::string_view id, std::string_view name,
                                         std::string_view arguments) const {
  std::string d = "{\"tool_calls\":[{\"index\":" + std::to_string(index) + ",\"id\":";
  core::append_json_string(d, id);
  d += ",\"type\":\"function\",\"function\":{\"name\":";
  core::append_json_string(d, name);
  d += ",\"arguments\":";
  core::append_json_string(d, arguments);
  d += "}}]}";
  return chunk(d, "");
}

std::string ChunkWriter::tool_call_arguments(std::int64_t index, std::string_view fragment) const {
  std::string d = "{\"tool_calls\":[{\"index\":" + std::to_string(index) + ",\"function\":{\"arguments\":";
  core::append_json_string(d, fragment);
  d += "}}]}";
  return chunk(d, "");
}

std::string ChunkWriter::finish(std::string_view reason) const { return chunk("{}", reason); }

std::string ChunkWriter::usage_chunk(const Usage& u) const {
  return prefix() + "\"choices\":[],\"usage\":" + boost::json::serialize(usage_to_openai(u)) + "}";
}

namespace {

bool json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/// Whether some `"<key>":` member of `text` has a value that is output: a non-empty string, an
/// object or a non-empty array (not null, false, "" or []).
bool member_has_value(std::string_view text, std::string_view quoted_key) {
  for (auto pos = text.find(quoted_key); pos != std::string_view::npos; pos = text.find(quoted_key, pos + 1)) {
    auto i = pos + quoted_key.size();
    while (i < text.size() && json_space(text[i])) ++i;
    if (i >= text.size() || text[i] != ':') continue;
    ++i;
    while (i < text.size() && json_space(text[i])) ++i;
    if (i + 1 >= text.size()) continue;
    const char c = text[i];
    if (c == '"' && text[i + 1] != '"') return true;
    if (c == '{') return true;
    if (c == '[') {
      auto j = i + 1;
      while (j < text.size() && json_space(text[j])) ++j;
      if (j < text.size() && text[j] != ']') return true;
    }
  }
  return false;
}

}  // namespace

bool chat_chunk_carries_output(std::string_view chunk) noexcept {
  for (std::string_view key : {"\"content\"", "\"tool_calls\"", "\"refusal\"", "\"reasoning_content\"", "\"reasoning\"",
                               "\"function_call\"", "\"audio\""})
    if (member_has_value(chunk, key)) return true;
  return false;
}

bool StreamDecoder::carries_output(std::string_view chunk) const { return chat_chunk_carries_output(chunk); }

}  // namespace tollgate::providers
