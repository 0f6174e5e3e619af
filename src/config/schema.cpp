#include "config/schema.hpp"

#include "config/section.hpp"
#include "config/sections.hpp"

#include <algorithm>

namespace tollgate::config {

std::string_view to_string(SettingStatus s) {
  switch (s) {
    case SettingStatus::supported: return "supported";
    case SettingStatus::warned: return "warned";
    case SettingStatus::no_effect: return "no_effect";
    case SettingStatus::refused: return "refused";
  }
  return "supported";
}

std::vector<SettingInfo> all_settings() {
  std::vector<SettingInfo> out;
  detail::append_top_level_settings(out);
  detail::append_deployment_settings(out);
  detail::append_litellm_settings(out);
  detail::append_router_settings(out);
  detail::append_general_settings(out);
  detail::append_tollgate_settings(out);
  detail::append_policy_settings(out);
  return out;
}

namespace {

/// The section a key belongs to: its path without the last segment ("" = top level).
std::string_view section_of(std::string_view path) {
  const auto dot = path.rfind('.');
  return dot == std::string_view::npos ? std::string_view{} : path.substr(0, dot);
}

/// Text safe inside a markdown table cell.
std::string cell(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += "\\|";
    else if (ch == '\n') out += ' ';
    else out += ch;
  }
  return out;
}

std::string tollgate_cell(const SettingInfo& s) {
  std::string label;
  switch (s.status) {
    case SettingStatus::supported: label = "**supported**"; break;
    case SettingStatus::warned: label = "**warns**:"; break;
    case SettingStatus::no_effect: label = "**no effect**"; break;
    case SettingStatus::refused: label = "**error**:"; break;
  }
  if (s.note.empty()) return label;
  const bool colon = label.back() == ':';
  return label + (colon ? " " : ". ") + cell(s.note);
}

}  // namespace

std::string reference_markdown() {
  const std::vector<SettingInfo> all = all_settings();
  std::vector<std::string_view> order;
  for (const SettingInfo& s : all) {
    const std::string_view sec = section_of(s.path);
    if (std::find(order.begin(), order.end(), sec) == order.end()) order.push_back(sec);
  }
  std::string out;
  for (std::string_view sec : order) {
    out += "### ";
    out += sec.empty() ? std::string("Top level") : "`" + std::string(sec) + "`";
    out += "\n\n| Key | Type | Default | LiteLLM | Tollgate |\n|---|---|---|---|---|\n";
    for (const SettingInfo& s : all) {
      if (section_of(s.path) != sec) continue;
      out += "| `" + std::string(detail::key_of(s.path)) + "` | " + cell(s.type) + " | " +
             (s.default_value.empty() ? std::string("—") : cell(s.default_value)) + " | " +
             (s.litellm.empty() ? std::string("— (Tollgate's)") : cell(s.litellm)) + " | " + tollgate_cell(s) + " |\n";
    }
    out += "\n";
  }
  return out;
}

namespace detail {

std::string_view key_of(std::string_view schema_path) {
  const auto dot = schema_path.rfind('.');
  return dot == std::string_view::npos ? schema_path : schema_path.substr(dot + 1);
}

void apply_status(LoadContext& c, const SettingInfo& info, const YAML::Node& v, const std::string& path, int line) {
  switch (info.status) {
    case SettingStatus::supported:
    case SettingStatus::no_effect:
      c.walk_scalars(v, path, line);
      return;
    case SettingStatus::warned:
      c.walk_scalars(v, path, line);
      c.warn(path, line, std::string(info.note));
      return;
    case SettingStatus::refused:
      c.error(path, line, std::string(info.note));
      return;
  }
}

}  // namespace detail

}  // namespace tollgate::config
