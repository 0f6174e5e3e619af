#include "http/sse.hpp"

#include <limits>

namespace tollgate::http {

namespace {

constexpr char kBom[] = "\xEF\xBB\xBF";

// First CR or LF in s, or npos. A plain loop: the set is two bytes and lines are short.
std::size_t find_eol(std::string_view s) noexcept {
  const char* p = s.data();
  const std::size_t n = s.size();
  for (std::size_t i = 0; i < n; ++i) {
    const char c = p[i];
    if (c == '\n' || c == '\r') return i;
  }
  return std::string_view::npos;
}

std::optional<int> parse_retry(std::string_view v) noexcept {
  if (v.empty()) return std::nullopt;
  long long n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return std::nullopt;  // spec: only ASCII digits
    n = n * 10 + (c - '0');
    if (n > std::numeric_limits<int>::max()) return std::nullopt;
  }
  return static_cast<int>(n);
}

void append_data_lines(std::string& out, std::string_view data) {
  for (;;) {
    const std::size_t eol = find_eol(data);
    out.append("data: ");
    if (eol == std::string_view::npos) {
      out.append(data);
      out.push_back('\n');
      return;
    }
    out.append(data.substr(0, eol));
    out.push_back('\n');
    const bool crlf = data[eol] == '\r' && eol + 1 < data.size() && data[eol + 1] == '\n';
    data.remove_prefix(eol + (crlf ? 2 : 1));
  }
}

}  // namespace

void SseParser::fail() noexcept {
  failed_ = true;
  line_.clear();
  line_.shrink_to_fit();
  data_.clear();
  data_.shrink_to_fit();
}

bool SseParser::step(std::string_view& bytes) {
  if (failed_) {
    bytes = {};
    return false;
  }
  if (!bom_done_) {
    while (!bytes.empty() && bom_seen_ < 3 && bytes.front() == kBom[bom_seen_]) {
      ++bom_seen_;
      bytes.remove_prefix(1);
    }
    if (bom_seen_ == 3) {
      bom_done_ = true;
    } else if (bytes.empty()) {
      return false;  // so far a prefix of a BOM: wait for more
    } else {
      // Not a BOM: the bytes matched so far (no CR/LF among them) start the first line.
      line_.assign(kBom, bom_seen_);
      bom_done_ = true;
    }
  }
  while (!bytes.empty()) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (bytes.front() == '\n') {
        bytes.remove_prefix(1);
        continue;
      }
    }
    const std::size_t eol = find_eol(bytes);
    if (eol == std::string_view::npos) {
      if (line_.size() + bytes.size() > max_line_bytes_) {
        fail();
        bytes = {};
        return false;
      }
      line_.append(bytes);
      bytes = {};
      return false;
    }
    if (line_.size() + eol > max_line_bytes_) {
      fail();
      bytes = {};
      return false;
    }
    std::string_view line;
    if (line_.empty()) {
      line = bytes.substr(0, eol);  // whole line in this chunk: no copy
    } else {
      line_.append(bytes.data(), eol);
      line = line_;
    }
    skip_lf_ = bytes[eol] == '\r';
    bytes.remove_prefix(eol + 1);
    const bool ready = process_line(line);
    line_.clear();
    if (failed_) {
      bytes = {};
      return false;
    }
    if (ready) return true;
  }
  return false;
}

bool SseParser::process_line(std::string_view line) {
  if (line.empty()) {
    in_event_ = false;
    if (data_.empty()) {
      event_type_.clear();
      return false;
    }
    data_.pop_back();  // the LF after the last data value
    ready_.data.swap(data_);
    ready_.event.swap(event_type_);
    data_.clear();
    event_type_.clear();
    ready_.id = last_id_;
    ready_.retry = retry_;
    retry_.reset();
    return true;
  }
  if (line.front() == ':') return false;  // comment
  in_event_ = true;
  std::string_view field = line;
  std::string_view value;
  if (const std::size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (data_.size() + value.size() + 1 > max_event_bytes_) {
      fail();
      return false;
    }
    data_.append(value);
    data_.push_back('\n');
  } else if (field == "event") {
    event_type_.assign(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) last_id_.assign(value);
  } else if (field == "retry") {
    if (auto r = parse_retry(value)) retry_ = r;
  }
  return false;
}

std::vector<SseEvent> SseParser::feed(std::string_view bytes) {
  std::vector<SseEvent> events;
  feed(bytes, [&events](SseEvent&& ev) { events.push_back(std::move(ev)); });
  return events;
}

bool SseParser::finish() noexcept {
  const bool pending = !line_.empty() || in_event_ || (!bom_done_ && bom_seen_ > 0);
  line_.clear();
  data_.clear();
  event_type_.clear();
  last_id_.clear();
  retry_.reset();
  bom_seen_ = 0;
  bom_done_ = false;
  skip_lf_ = false;
  in_event_ = false;
  failed_ = false;
  return pending;
}

void append_sse_event(std::string& out, std::string_view event, std::string_view data) {
  if (!event.empty()) {
    if (const std::size_t eol = find_eol(event); eol != std::string_view::npos) {
      event = event.substr(0, eol);
    }
    out.append("event: ");
    out.append(event);
    out.push_back('\n');
  }
  append_data_lines(out, data);
  out.push_back('\n');
}

std::string format_sse(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 8);
  append_data_lines(out, data);
  out.push_back('\n');
  return out;
}

std::string format_sse_event(std::string_view event, std::string_view data) {
  std::string out;
  out.reserve(event.size() + data.size() + 17);
  append_sse_event(out, event, data);
  return out;
}

}  // namespace tollgate::http
