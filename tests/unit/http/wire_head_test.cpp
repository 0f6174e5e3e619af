// http::wire_head: the head written by hand is byte for byte the one Beast's serializer writes,
// for responses (set reason, standard reason, an unknown code, HTTP/1.0) and requests (known and
// unknown verbs), with repeated and custom fields.
#include "http/wire_head.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include <boost/beast/http.hpp>

namespace tollgate::http {
namespace {

namespace bhttp = boost::beast::http;

template <class Message>
std::string beast_bytes(Message& m) {
  std::ostringstream os;
  os << m;  // Beast's serializer: head, then body
  return os.str();
}

TEST(WireHead, ResponsesMatchBeastsSerializer) {
  for (const unsigned code : {200u, 204u, 429u, 503u, 599u}) {
    for (const unsigned version : {10u, 11u}) {
      bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(code), version};
      res.set(bhttp::field::content_type, "application/json");
      res.set("x-litellm-call-id", "019aef3c-5d2e-7a41-9b3f-0c1d2e3f4a5b");
      res.insert("x-repeated", "one");
      res.insert("x-repeated", "two");
      res.set(bhttp::field::server, "");
      if (code != 204) res.body() = R"({"ok":true})";
      res.keep_alive(version == 11);
      res.prepare_payload();
      EXPECT_EQ(wire_head(res) + res.body(), beast_bytes(res)) << code << " HTTP/" << version;
    }
  }
  bhttp::response<bhttp::string_body> own{bhttp::status::ok, 11};
  own.reason("Fine Thanks");
  own.prepare_payload();
  EXPECT_EQ(wire_head(own), "HTTP/1.1 200 Fine Thanks\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(wire_head(own), beast_bytes(own));
}

// The field-view form (ResponseWriter::send_fields) writes what send() writes for a Response
// holding the same fields: Connection as keep_alive() leaves it, then Content-Length.
TEST(WireHead, FieldViewsMatchBeastsSerializerOfTheSameResponse) {
  const std::vector<FieldView> fields = {{"Content-Type", "application/json"},
                                         {"x-litellm-call-id", "019aef3c-5d2e-7a41-9b3f-0c1d2e3f4a5b"},
                                         {"x-empty", ""},
                                         {"X-Tollgate-Decision", "g/d ok; retries=0/2"}};
  for (const unsigned code : {200u, 202u, 400u, 429u, 503u, 599u})
    for (const unsigned version : {10u, 11u})
      for (const bool keep_alive : {true, false})
        for (const std::string& body : {std::string(), std::string(R"({"ok":true})"), std::string(70000, 'x')}) {
          bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(code), version};
          for (const auto& [name, value] : fields) res.set(name, value);
          res.body() = body;
          res.keep_alive(keep_alive);
          res.prepare_payload();
          EXPECT_EQ(wire_head(code, version, keep_alive, fields, body.size()) + body, beast_bytes(res))
              << code << " HTTP/" << version << " keep-alive " << keep_alive << " body " << body.size();
        }
}

TEST(WireHead, RequestsMatchBeastsSerializer) {
  bhttp::request<bhttp::string_body> post{bhttp::verb::post, "/v1/chat/completions?api-version=2024-10-21", 11};
  post.set(bhttp::field::host, "upstream.example:8443");
  post.set(bhttp::field::content_type, "application/json");
  post.set("authorization", "Bearer sk-x");
  post.keep_alive(true);
  post.body() = R"({"model":"m","messages":[]})";
  post.prepare_payload();
  EXPECT_EQ(wire_head(post) + post.body(), beast_bytes(post));

  bhttp::request<bhttp::string_body> get{bhttp::verb::get, "/v1/models", 11};
  get.set(bhttp::field::host, "h");
  get.prepare_payload();
  EXPECT_EQ(wire_head(get), beast_bytes(get));
  EXPECT_EQ(wire_head(get), "GET /v1/models HTTP/1.1\r\nHost: h\r\n\r\n");

  bhttp::request<bhttp::string_body> odd;
  odd.method_string("PURGE");
  odd.target("/x");
  odd.version(10);
  odd.prepare_payload();
  EXPECT_EQ(wire_head(odd), beast_bytes(odd));
}

}  // namespace
}  // namespace tollgate::http
