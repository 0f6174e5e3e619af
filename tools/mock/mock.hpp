#pragma once
// tollgate-mock: shared declarations of the upstream LLM-provider simulator.
// Pure data / string building lives here; socket I/O only in server.cpp.
// See tools/mock/README.md for the user reference.

#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tollgate::mock {

/// Upper bounds that keep any input from exhausting memory or time.
inline constexpr std::int64_t kMaxCompletionTokens = 1'000'000;
inline constexpr int kMaxChoices = 128;
inline constexpr std::int64_t kMaxDelayMs = 3'600'000;

/// One scripted behaviour; every field optional (README "Behaviour object").
struct Behavior {
  std::optional<int> status;
  std::optional<std::string> error;
  std::optional<std::string> retry_after;  ///< seconds (integer text) or verbatim HTTP-date
  std::optional<std::int64_t> retry_after_ms;
  std::optional<std::int64_t> latency_ms;
  std::optional<double> tokens_per_second;
  std::optional<std::int64_t> completion_tokens;
  std::optional<std::string> content;
  std::optional<std::string> fault;
  std::optional<std::int64_t> prompt_tokens;
  std::optional<std::int64_t> cached_tokens;

  bool has_outcome() const { return status || error || fault || retry_after || retry_after_ms; }
};

/// Parses a behaviour JSON object. Unknown fields or bad types → false and `err`.
bool parse_behavior(const boost::json::value& v, Behavior& out, std::string& err);
/// Parses query-string directives (`error=x&retry_after=1`). Same strictness.
bool parse_behavior_query(std::string_view query, Behavior& out, std::string& err);
/// `high` overrides `low`: outcome fields (status, error, fault, retry_after*) as one group,
/// the other fields one by one.
Behavior merge_behavior(const Behavior& low, const Behavior& high);

/// Scripted queues per model (thread safe).
void script_set(const std::string& model, std::vector<Behavior> queue);
/// Next behaviour for the model: pops the front unless it is the last one (which repeats).
std::optional<Behavior> script_next(const std::string& model);
void script_reset();

/// Statistics (thread safe). Every request ends in exactly one of succeeded/failed/cancelled.
enum class Outcome { succeeded, failed, cancelled };
void stats_request_begin(const std::string* model, bool stream);  ///< model null: no model known
void stats_request_end(const std::string& model, Outcome outcome, std::int64_t prompt_tokens,
                       std::int64_t completion_tokens, std::int64_t cached_tokens);
void stats_note_model(const std::string& model);
std::string stats_json();
std::string models_json();
void stats_reset();

/// What one successful answer looks like, independent of the wire family.
struct Completion {
  std::string id;
  std::int64_t created = 0;
  std::string model;
  std::int64_t prompt_tokens = 0;
  std::int64_t cached_tokens = 0;
  std::int64_t tokens = 0;  ///< completion tokens per choice
  int n = 1;
  bool capped = false;  ///< stopped by max_tokens
  bool include_usage = false;
  std::vector<std::string> words;  ///< custom content words; empty = lorem ipsum cycle

  /// The text of token i (a word plus a separating space unless last).
  std::string piece(std::int64_t i) const;
  /// Concatenation of the first `count` pieces.
  std::string text(std::int64_t count) const;
};

/// Input of an error reply.
struct ErrorSpec {
  std::string name;  ///< error name; empty = bare status
  int status = 0;    ///< 0 = the name's own status
  std::string model;
  std::int64_t prompt_tokens = 0;
  std::optional<std::string> retry_after;
  std::optional<std::int64_t> retry_after_ms;
  std::string request_id;
  std::string message;  ///< non-empty: replaces the catalogue message
};

/// A complete, non-streaming reply. `headers` are extra "name: value\r\n" lines.
struct Reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string headers;
  std::string body;
};

/// One wire family (OpenAI-compatible or Anthropic Messages).
class Api {
 public:
  virtual ~Api() = default;
  virtual std::string new_request_id() const = 0;
  virtual std::string new_completion_id() const = 0;
  /// Request-id header line plus the family's usual success headers (rate limits …).
  virtual std::string success_headers(const Completion& c, std::string_view request_id) const = 0;
  /// Header lines every reply of the family carries (request id).
  virtual std::string base_headers(std::string_view request_id) const = 0;
  virtual std::string body(const Completion& c) const = 0;
  /// SSE text before the first token, for one token (all choices), and after the last one.
  virtual std::string stream_open(const Completion& c) const = 0;
  virtual std::string stream_token(const Completion& c, std::int64_t i) const = 0;
  virtual std::string stream_close(const Completion& c) const = 0;
  virtual Reply error(const ErrorSpec& e) const = 0;
};

const Api& openai_api();
const Api& anthropic_api();

// ---- small shared helpers (util.cpp) ----
std::string random_token(std::size_t len);  ///< [A-Za-z0-9]
std::int64_t unix_now();
std::string json_quote(std::string_view s);  ///< JSON string literal with quotes
std::string rfc3339_after(std::int64_t seconds_from_now);
std::string_view reason_phrase(int status);
/// 502 page as sent by a fronting proxy.
Reply bad_gateway_html(std::string_view request_id_header);
/// Retry-After value ("1" by default).
std::string retry_after_value(const std::optional<std::string>& v);

}  // namespace tollgate::mock
