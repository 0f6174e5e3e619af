// W3C traceparent parsing and formatting, fresh ids, and the OTLP/HTTP JSON encoding of spans.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <regex>
#include <set>

#include "telemetry/otlp_json.hpp"
#include "telemetry/trace_context.hpp"

namespace tollgate::telemetry {
namespace {

TEST(TraceContext, ParsesAValidTraceparentAndRefusesEveryMalformedOne) {
  auto c = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(c->span_id, "00f067aa0ba902b7");
  EXPECT_TRUE(c->sampled);
  EXPECT_FALSE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")->sampled);
  EXPECT_TRUE(parse_traceparent(" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\t").has_value());
  // A later version is read by its first four fields.
  EXPECT_TRUE(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra").has_value());
  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",        // no flags
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",     // all-zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",     // all-zero span id
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",     // uppercase
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     // forbidden version
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",   // version 00 with more
           "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",     // separators
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",     // not hex
       })
    EXPECT_FALSE(parse_traceparent(bad).has_value()) << bad;
  EXPECT_EQ(format_traceparent("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", true),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
}

TEST(TraceContext, FreshIdsAreLowercaseHexOfTheirLengthAndDistinct) {
  std::set<std::string> seen;
  const std::regex trace("^[0-9a-f]{32}$"), span("^[0-9a-f]{16}$");
  for (int i = 0; i < 1000; ++i) {
    auto t = new_trace_id(), s = new_span_id();
    EXPECT_TRUE(std::regex_match(t, trace)) << t;
    EXPECT_TRUE(std::regex_match(s, span)) << s;
    EXPECT_TRUE(seen.insert(t).second);
    EXPECT_TRUE(parse_traceparent(format_traceparent(t, s, true)).has_value());
  }
}

TEST(OtlpJson, EncodesSpansInTheJsonMapping) {
  Resource r;
  r.attributes.add_string("service.name", "svc");
  Span s;
  s.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  s.span_id = "00f067aa0ba902b7";
  s.parent_span_id = "1111111111111111";
  s.name = "chat m";
  s.kind = Span::Kind::client;
  s.start_unix_nano = 1700000000000000001;
  s.end_unix_nano = 1700000000000000002;
  s.status = Span::Status::error;
  s.status_message = "failed";
  s.attributes.add_string("a.string", "x\"\n\x01");
  s.attributes.add_int("a.int", std::int64_t{9007199254740993});
  s.attributes.add_double("a.double", 0.5);
  s.attributes.add_bool("a.bool", true);
  s.attributes.add_strings("a.list", {"p", "q"});
  s.attributes.add_double("a.nan", std::nan(""));
  const auto v = boost::json::parse(encode_export_request(r, {s}));
  const auto& rs = v.at("resourceSpans").at(0);
  EXPECT_EQ(rs.at("resource").at("attributes").at(0).at("value").at("stringValue"), "svc");
  const auto& sp = rs.at("scopeSpans").at(0).at("spans").at(0);
  EXPECT_EQ(rs.at("scopeSpans").at(0).at("scope").at("name"), "tollgate");
  EXPECT_EQ(sp.at("traceId").as_string(), s.trace_id);
  EXPECT_EQ(sp.at("parentSpanId"), "1111111111111111");
  EXPECT_EQ(sp.at("kind"), 3);
  EXPECT_EQ(sp.at("startTimeUnixNano"), "1700000000000000001") << "int64 as a decimal string";
  EXPECT_EQ(sp.at("status").at("code"), 2);
  EXPECT_EQ(sp.at("status").at("message"), "failed");
  const auto& at = sp.at("attributes").as_array();
  ASSERT_EQ(at.size(), 6u);
  EXPECT_EQ(at[0].at("key"), "a.string");
  EXPECT_EQ(at[0].at("value").at("stringValue"), "x\"\n\x01") << "escaped and read back unchanged";
  EXPECT_EQ(at[1].at("value").at("intValue"), "9007199254740993") << "exact past 2^53";
  EXPECT_EQ(at[2].at("value").at("doubleValue"), 0.5);
  EXPECT_EQ(at[3].at("value").at("boolValue"), true);
  EXPECT_EQ(at[4].at("value").at("arrayValue").at("values").at(1).at("stringValue"), "q");
  EXPECT_TRUE(at[5].at("value").at("doubleValue").is_null()) << "NaN is not JSON";
  Span root = s;
  root.parent_span_id.clear();
  root.status = Span::Status::unset;
  const auto w = boost::json::parse(encode_export_request(r, {root}));
  const auto& rsp = w.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0).as_object();
  EXPECT_FALSE(rsp.contains("parentSpanId")) << "a root span has none";
  EXPECT_FALSE(rsp.at("status").as_object().contains("code"));
}

TEST(TraceContext, TracestateIsPassedOnOnlyWhenWellFormed) {
  EXPECT_TRUE(valid_tracestate("vendor=abc"));
  EXPECT_TRUE(valid_tracestate("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE"));
  EXPECT_FALSE(valid_tracestate(""));
  EXPECT_FALSE(valid_tracestate(std::string(513, 'a')));
  EXPECT_FALSE(valid_tracestate("k=v\x80"));
  EXPECT_FALSE(valid_tracestate("k=\x01"));
  EXPECT_FALSE(valid_tracestate("novalue"));
  EXPECT_FALSE(valid_tracestate("=v"));
  EXPECT_FALSE(valid_tracestate("k="));
  std::string many;
  for (int i = 0; i < 33; ++i) many += (i ? "," : "") + std::string("k") + std::to_string(i) + "=v";
  EXPECT_FALSE(valid_tracestate(many)) << "more than 32 members";
}

}  // namespace
}  // namespace tollgate::telemetry
