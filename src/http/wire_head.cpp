#include "http/wire_head.hpp"

#include <charconv>

namespace tollgate::http {

namespace bhttp = boost::beast::http;

namespace {

void append_version(std::string& out, unsigned version) {
  out += "HTTP/";
  out.push_back(static_cast<char>('0' + version / 10));
  out.push_back('.');
  out.push_back(static_cast<char>('0' + version % 10));
}

void append_fields(std::string& out, const bhttp::fields& fields) {
  for (const auto& f : fields) {
    const auto name = f.name_string();
    const auto value = f.value();
    out.append(name.data(), name.size());
    out += ": ";
    out.append(value.data(), value.size());
    out += "\r\n";
  }
  out += "\r\n";
}

std::size_t fields_size(const bhttp::fields& fields) {
  std::size_t n = 2;
  for (const auto& f : fields) n += f.name_string().size() + f.value().size() + 4;
  return n;
}

void append_status_line(std::string& out, unsigned version, unsigned code, std::string_view reason) {
  append_version(out, version);
  out.push_back(' ');
  out.push_back(static_cast<char>('0' + code / 100 % 10));
  out.push_back(static_cast<char>('0' + code / 10 % 10));
  out.push_back(static_cast<char>('0' + code % 10));
  out.push_back(' ');
  out.append(reason.data(), reason.size());
  out += "\r\n";
}

}  // namespace

std::string wire_head(const bhttp::response_header<>& h) {
  const auto reason = h.reason();  // the one set, else obsolete_reason(code)
  std::string out;
  out.reserve(15 + reason.size() + fields_size(h));
  append_status_line(out, h.version(), h.result_int(), std::string_view(reason.data(), reason.size()));
  append_fields(out, h);
  return out;
}

std::string wire_head(unsigned status, unsigned version, bool keep_alive, std::span<const FieldView> fields,
                      std::size_t content_length) {
  const auto reason = bhttp::obsolete_reason(bhttp::int_to_status(status));
  std::size_t size = 15 + reason.size() + 2 + 24 + 40;
  for (const auto& [name, value] : fields) size += name.size() + value.size() + 4;
  std::string out;
  out.reserve(size);
  append_status_line(out, version, status, std::string_view(reason.data(), reason.size()));
  for (const auto& [name, value] : fields) {
    out.append(name);
    out += ": ";
    out.append(value);
    out += "\r\n";
  }
  // Beast's keep_alive(): HTTP/1.1 says "close" when not kept alive, HTTP/1.0 "keep-alive" when it is.
  if (version >= 11 && !keep_alive) out += "Connection: close\r\n";
  else if (version < 11 && keep_alive) out += "Connection: keep-alive\r\n";
  out += "Content-Length: ";
  char digits[24];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, content_length).ptr);
  out += "\r\n\r\n";
  return out;
}


std::string wire_head(const bhttp::request_header<>& h) {
  const auto method = h.method_string();
  const auto target = h.target();
  std::string out;
  out.reserve(method.size() + target.size() + 12 + fields_size(h));
  out.append(method.data(), method.size());
  out.push_back(' ');
  out.append(target.data(), target.size());
  out.push_back(' ');
  append_version(out, h.version());
  out += "\r\n";
  append_fields(out, h);
  return out;
}

}  // namespace tollgate::http
