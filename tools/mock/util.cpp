// Small helpers shared by the response builders.
#include "mock.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

#include <iterator>
#include <chrono>
#include <ctime>
#include <random>
#include <thread>

namespace tollgate::mock {

namespace {
constexpr std::string_view kLorem[] = {
    "lorem",     "ipsum",      "dolor",   "sit",      "amet",      "consectetur", "adipiscing",
    "elit",      "sed",        "do",      "eiusmod",  "tempor",    "incididunt",  "ut",
    "labore",    "et",         "dolore",  "magna",    "aliqua",    "ut",          "enim",
    "ad",        "minim",      "veniam",  "quis",     "nostrud",   "exercitation", "ullamco",
    "laboris",   "nisi",       "ut",      "aliquip",  "ex",        "ea",          "commodo",
    "consequat", "duis",       "aute",    "irure",    "dolor",     "in",          "reprehenderit",
    "in",        "voluptate",  "velit",   "esse",     "cillum",    "dolore",      "eu",
    "fugiat",    "nulla",      "pariatur", "excepteur", "sint",    "occaecat",    "cupidatat",
    "non",       "proident",   "sunt",    "in",       "culpa",     "qui",         "officia",
    "deserunt",  "mollit",     "anim",    "id",       "est",       "laborum"};

std::mt19937_64& rng() {
  thread_local std::mt19937_64 gen{std::random_device{}() ^
                                   std::hash<std::thread::id>{}(std::this_thread::get_id())};
  return gen;
}
}  // namespace

std::string Completion::piece(std::int64_t i) const {
  std::string out = i == 0 && lead_space ? " " : "";
  const auto w = static_cast<std::size_t>(i + first);
  if (words.empty()) {
    out += kLorem[w % std::size(kLorem)];
  } else {
    out += words[w % words.size()];
  }
  if (i + 1 < tokens) out += ' ';
  return out;
}

std::string Completion::text(std::int64_t count) const {
  std::string out;
  out.reserve(static_cast<std::size_t>(count) * 7);
  for (std::int64_t i = 0; i < count; ++i) out += piece(i);
  return out;
}

std::string random_token(std::size_t len) {
  static constexpr std::string_view kAlnum =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string out(len, 'x');
  auto& g = rng();
  for (auto& ch : out) ch = kAlnum[g() % kAlnum.size()];
  return out;
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string json_quote(std::string_view s) {
  return boost::json::serialize(boost::json::string(s));
}

std::string rfc3339_after(std::int64_t seconds_from_now) {
  std::time_t t = static_cast<std::time_t>(unix_now() + seconds_from_now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 402: return "Payment Required";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 529: return "Site Overloaded";
    default: break;
  }
  if (status >= 500) return "Server Error";
  if (status >= 400) return "Client Error";
  return "Unknown";
}

Reply bad_gateway_html(std::string_view request_id_header) {
  Reply r;
  r.status = 502;
  r.content_type = "text/html";
  r.headers = std::string(request_id_header);
  r.body =
      "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
      "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>cloudflare</center>\r\n"
      "</body>\r\n</html>\r\n";
  return r;
}

std::string retry_after_value(const std::optional<std::string>& v) {
  return v ? *v : std::string("1");
}

std::string count_json(std::int64_t v, bool quoted) {
  return quoted ? "\"" + std::to_string(v) + "\"" : std::to_string(v);
}

}  // namespace tollgate::mock
