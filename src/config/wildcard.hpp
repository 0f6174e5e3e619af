#pragma once
/// LiteLLM's wildcard model names (https://docs.litellm.ai/docs/wildcard_routing): a
/// `model_name` holding `*` (`"*"`, `"openai/*"`, `"anthropic/claude-3-*"`) serves every
/// requested model that matches it and that no exact group names; a `*` in the deployment's
/// `litellm_params.model` (`openai/*`) is replaced by what the name's `*` matched, so the
/// requested model is passed through to that provider.

#include <optional>
#include <string>
#include <string_view>

namespace tollgate::config {

/// Whether `name` is a wildcard pattern (holds `*`).
[[nodiscard]] inline bool is_wildcard(std::string_view name) noexcept { return name.find('*') != std::string_view::npos; }

/// When `name` matches `pattern` (each `*` matches any run of characters; no other character is
/// special), the text the first `*` matched; nullopt otherwise, and also when that text is not a
/// model identifier (empty, over 256 bytes, or holding anything but letters, digits and
/// `. _ : @ + - /`, or `..`, `//`, a leading `/` or `.`, a trailing `/`): the caller's text is passed upstream.
[[nodiscard]] std::optional<std::string> wildcard_capture(std::string_view pattern, std::string_view name);

/// How specific a pattern is: its characters other than `*`. Of the patterns that match a name,
/// the most specific serves it (`openai/*` before `*`).
[[nodiscard]] std::size_t wildcard_specificity(std::string_view pattern) noexcept;

/// The upstream model of a wildcard deployment for `capture`: every `*` of `upstream_template`
/// (its litellm_params.model without the provider prefix) replaced by `capture`, with a leading
/// `<provider_prefix>/` dropped from `capture` when the template is just `*`
/// (`model_name: "*"`, `model: openai/*`, request `openai/gpt-4o` → upstream `gpt-4o`).
[[nodiscard]] std::string resolve_wildcard_model(std::string_view upstream_template, std::string_view capture,
                                                 std::string_view provider_prefix);

}  // namespace tollgate::config
