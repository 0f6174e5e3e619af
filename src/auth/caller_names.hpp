#pragma once
/// Names a caller chooses: the end user and the request tags of a model call, and the ids,
/// aliases and tag names of the admin API. Each becomes a budget scope, a ledger row, a column of
/// the spend log or an identity record, so each is bounded (docs/budgets.md "Caller-supplied
/// names"): at most kMaxNameBytes bytes, and a request names at most kMaxRequestTags tags.
/// This header is the one place those limits live; `read_caller_names` is the one place a model
/// call's names are read and checked. Pure functions; thread-safe.

#include <cstddef>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "core/error.hpp"

namespace tollgate::auth {

/// The longest caller-supplied name, in bytes (UTF-8 as sent; no normalisation).
inline constexpr std::size_t kMaxNameBytes = 256;
/// The most request tags one model call may name (`metadata.tags` and `tags` together, counted
/// as sent, before duplicates are merged); also the most tags an admin may give a key.
inline constexpr std::size_t kMaxRequestTags = 32;

/// Why a caller-supplied name is refused: the message to send and the error code.
struct NameProblem {
  std::string message;
  const char* code;  ///< "name_too_long" | "invalid_caller_name"
};

/// nullopt when `value` is at most `max_bytes` long, valid UTF-8 and free of control characters,
/// else: "<field> is <n> bytes long; caller-supplied names are limited to 256 bytes"
/// (name_too_long), "<field> contains a control character (0x00 at byte 3); …" (invalid_caller_name:
/// a C0 control or DEL), or "<field> is not valid UTF-8 (0xff at byte 1)" (invalid_caller_name: RFC
/// 3629; a header value, x-litellm-tags, is not checked by the JSON parser). Names become budget
/// scope ids and spend-log columns: PostgreSQL's text parameters end at a NUL ("a\0b" would be
/// stored, and its budget rebuilt, as "a") and refuse invalid UTF-8 (the whole batch would fail).
std::optional<NameProblem> name_problem(std::string_view field, std::string_view value,
                                        std::size_t max_bytes = kMaxNameBytes);

/// The request dialect a body is in: where its names are.
enum class CallerApi {
  /// OpenAI chat completions (LiteLLM): end user = `user`; tags = `metadata.tags` then `tags`.
  openai_chat,
  /// Anthropic Messages: end user = `metadata.user_id` (the translation sends it upstream as
  /// `user`); tags = `metadata.tags` then `tags`, as on chat (LiteLLM's; they are not sent
  /// upstream: the translation keeps no other `metadata` field).
  anthropic_messages,
};

/// The bounds read_caller_names enforces: the defaults for every request from a client.
struct CallerNameLimits {
  std::size_t max_name_bytes = kMaxNameBytes;
  std::size_t max_tags = kMaxRequestTags;
};

/// A model call's own identity facts, validated.
struct CallerNames {
  std::string end_user;           ///< empty = none named
  std::vector<std::string> tags;  ///< in request order, empty strings dropped, duplicates kept
};

/// Reads the end user and request tags of `body` (a request as the client sent it, before any
/// translation) and checks them against `limits`. Absent or JSON null = not given; an empty string = not given.
/// Errors (400 `invalid_request_error`, `param` = the field, e.g. "user", "metadata.user_id",
/// "metadata.tags[3]"):
///  - a name that is not a string (code `invalid_caller_name`), tags that are not an array
///    (code `invalid_caller_name`);
///  - a name longer than `limits.max_name_bytes` (code `name_too_long`);
///  - more than `limits.max_tags` tags (code `too_many_tags`, param the list that went over).
/// A `metadata` that is not an object is not read (it is the provider's field to judge).
std::expected<CallerNames, core::Error> read_caller_names(const boost::json::object& body, CallerApi api,
                                                         const CallerNameLimits& limits = {});

/// Appends the tags of LiteLLM's `x-litellm-tags` request header (comma-separated, each
/// trimmed of spaces and tabs, empty ones dropped; docs: LiteLLM "Request Tags") to `names`
/// (after the body's). Errors as read_caller_names, with param "x-litellm-tags": a tag longer than
/// `limits.max_name_bytes`, or more than `limits.max_tags` tags with the body's.
std::optional<core::Error> add_header_tags(std::string_view header, CallerNames& names,
                                           const CallerNameLimits& limits = {});

}  // namespace tollgate::auth
