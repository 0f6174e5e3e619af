// Gemini / Vertex AI adapter: request translation, response and stream decoding, error mapping,
// and the RS256 signature of the service-account assertion (RFC 7515 Appendix A.2).
#include "policy/failure.hpp"
#include "providers/gemini/errors.hpp"
#include "providers/gemini/jws.hpp"
#include "providers/gemini/translate.hpp"
#include "providers/provider.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

using namespace tollgate;
using namespace tollgate::providers;
namespace json = boost::json;

namespace {

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

config::Deployment deployment(config::ProviderKind kind) {
  config::Deployment d;
  d.id = "g";
  d.provider = kind;
  d.upstream_model = "gemini-2.5-flash";
  return d;
}

// RFC 7515 Appendix A.2.1's RSA key (the JWK of the appendix, written as PKCS#8 PEM): the
// published example key, used only here.
constexpr std::string_view kRfc7515Key = R"(-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCh+BYK4uPJtGXO
jS1lYmM2K5J9vinh8CR3/BYlzJChNuOL2TSXxbbqY913EeZ8dCn5VrD7io8ImtxL
aYk8wTM/U+3QGbh3hCUv7JFP5IV3aVlL6kKA0ywPVb9ilE8TA5a8bpvfbr3SvaNn
juygxmj3AbONv/s4yDQs4v5tJ/reSlpIdJed1LnPmt7Ex1sFhSwsD174pcF1A5L5
ROjtZMEQxrZHYJqkeDrrnGya11UxMFBji4NmXG9veoKjlnAqH2QbgtPr8jkiGUkf
toaHLFcW9Qr4NY2ai50Xw0Byj3+H2JoY2PyrZ62EWQwuz3WTOTY8BwNNb2BvniHg
VFbK5emhAgMBAAECggEAEq5xpGnNCivDflJsRQBXHx1hdR1k6Ulwe2JZD50LpXyW
PEAeP88vLNO97IjlA7/GQ5sLKMgvfTeXZx9SE+7YwVol2NXOoAJe46sui395IW/G
O+pWJ1O0BkTGoVEn2bKVRUCgu+GjBVaYLU6f3l9kJfFNS3E0QbVdxzubSu3Mkqzj
kn439X0M/V51gfpRLI9JYanrC4D4qAdGcopV/0ZHHzQlBjudU2QvXt4ehNYTCBr6
XCLQUShb1juUO1ZdiYoFaFQT5Tw8bGUl/x/jTj3ccPDVZFD9pIuhLhBOneufuBiB
4cS98l2SR/RQyGWSeWjnczT0QU91p1DhOVRuOopznQKBgQDgHMQQ60imZV1URk0K
pLttoLhyt3SmqdEf/kgHePDdtzEafpAu+cS191R2JiuoF2yzWXnwFDcqGigp5BNr
0AHQfD8/Lk8l1Mk09jxxCfui5nYooNyac8YFjm3vItzVCVDnEd3BbVWG8qf6deqE
lMGAg+C2V0L4oNXnP7LZcPAZRwKBgQC5A8R+CZW2MvRTLLHzwZkUXV866cff7tx6
kqa0finGG0KgeqlaZPxgCZnFp7AeAcCMtiynVlJ7vMVgePsLq6XtON4tB5kP9jAP
rq3rbAOal78eUH5OcED6eNuCV8ixEu1eWcPNCS/l1OW1EnXUEoEHKl54Xrrz2uNw
kgMTP1FZ1wKBgAcCn1dwJKufzBWQxWQp1vsM5fggqPN1qGb5y0MAk3g7/Ls5bkUp
5u9SN0Ai3Ya6hNnvWJMb7sXQX6U/zyO2M/hTip7tUeh7CXgwo59dkpN75gJLVds2
9+DAncu3KXU4f2Fa+7bLNrur53k8KwPOq2bbuTG69QtV7Jr5MR0AHWKNAoGBAIf/
evpitUf+4JYbLpvNXWcY052Mpz22aR84mY3nh3F2LF2mjMJDpTg7FmuyPcVw6EcG
yoAe9fa65iNqCq+jdw6PVNGo2hxfjSiZ8IIzHdsPXI89//pMjZcQK9r+CCoRjaZj
OYiIDktVWZzmevJuv6WywUqd57LE3Zar3dLSIkx1AoGAIYd7DHOhrWvxkwPQsRM2
tOgrjbcrfvtQJipd+DlcxyVuuM9sQLdgjVk2oy26F0EmpScGLq2MowX7fhd/QJQ3
ydy5cY7YIBi87w93IKLEdfnbJtoOPLUW0ITrJReOgo1cq9SbsxYawBgfp/gh6A56
03k2+ZQwVK0JKSHuLFkuQ3U=
-----END PRIVATE KEY-----
)";

}  // namespace

TEST(GeminiJws, Rfc7515AppendixA2Signature) {
  // A.2.1: the JWS Signing Input (protected header {"alg":"RS256"}, the appendix's payload).
  constexpr std::string_view input =
      "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ";
  // A.2.1's resulting signature, base64url.
  constexpr std::string_view expected =
      "cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr7t"
      "1dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn6_dO--xi12j"
      "zDwusC-eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_IoypGlUPQ"
      "Ge77Rw";
  auto sig = gemini::rs256_sign(kRfc7515Key, input);
  ASSERT_TRUE(sig) << sig.error();
  EXPECT_EQ(sig->size(), 256u);
  EXPECT_EQ(gemini::base64url(*sig), expected);
  // The payload's base64url encoding is the appendix's too (RFC 7515 §2: no padding).
  EXPECT_EQ(gemini::base64url("{\"iss\":\"joe\",\r\n \"exp\":1300819380,\r\n \"http://example.com/is_root\":true}"),
            input.substr(input.find('.') + 1));
  EXPECT_FALSE(gemini::rs256_sign("not a key", input));
}

TEST(GeminiJws, ServiceAccountAssertionHasGooglesClaims) {
  json::object key{{"type", "service_account"}, {"client_email", "sa@p.iam.gserviceaccount.com"},
                   {"private_key", kRfc7515Key}, {"private_key_id", "kid-1"}, {"token_uri", "http://127.0.0.1:1/token"}};
  auto sa = gemini::parse_service_account(json::serialize(key));
  ASSERT_TRUE(sa) << sa.error();
  auto jwt = gemini::service_account_assertion(*sa, "https://www.googleapis.com/auth/cloud-platform", 1700000000);
  ASSERT_TRUE(jwt) << jwt.error();
  const auto d1 = jwt->find('.'), d2 = jwt->rfind('.');
  EXPECT_EQ(jwt->substr(0, d1), gemini::base64url(R"({"alg":"RS256","typ":"JWT","kid":"kid-1"})"));
  EXPECT_EQ(jwt->substr(d1 + 1, d2 - d1 - 1),
            gemini::base64url(R"({"iss":"sa@p.iam.gserviceaccount.com","scope":"https://www.googleapis.com/auth/cloud-platform",)"
                              R"("aud":"http://127.0.0.1:1/token","iat":1700000000,"exp":1700003600})"));
  auto sig = gemini::rs256_sign(kRfc7515Key, jwt->substr(0, d2));
  ASSERT_TRUE(sig);
  EXPECT_EQ(jwt->substr(d2 + 1), gemini::base64url(*sig));
  EXPECT_FALSE(gemini::parse_service_account(R"({"type":"authorized_user","client_email":"a","private_key":"b"})"));
  EXPECT_FALSE(gemini::parse_service_account(R"({"type":"service_account"})"));
  EXPECT_FALSE(gemini::parse_service_account("not json"));
  EXPECT_EQ(gemini::parse_service_account(R"({"client_email":"a","private_key":"b"})")->token_uri,
            "https://oauth2.googleapis.com/token");
}

TEST(GeminiTranslate, MessagesToolsAndConfig) {
  auto chat = obj(R"({"model":"m","messages":[
      {"role":"system","content":"be brief"},
      {"role":"user","content":[{"type":"text","text":"what is in"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]},
      {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"q\":\"x\"}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"{\"answer\":42}"},
      {"role":"tool","tool_call_id":"call_1","content":"plain"},
      {"role":"user","content":"thanks"}],
    "tools":[{"type":"function","function":{"name":"lookup","description":"d","parameters":{"type":"object","additionalProperties":false,"properties":{"q":{"type":"string"}}}}}],
    "tool_choice":{"type":"function","function":{"name":"lookup"}},
    "max_tokens":77,"temperature":0.5,"top_p":0.9,"n":2,"stop":"END","seed":3,
    "response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{"type":"object","additionalProperties":false}}},
    "stream":true,"stream_options":{"include_usage":true},"user":"u"})");
  const auto g = gemini::chat_request_to_gemini(chat);
  EXPECT_EQ(json::serialize(g.at("systemInstruction")), R"({"parts":[{"text":"be brief"}]})");
  const auto& contents = g.at("contents").as_array();
  ASSERT_EQ(contents.size(), 3u);  // user, model, user (both results + "thanks" merged)
  EXPECT_EQ(json::serialize(contents[0]),
            R"({"role":"user","parts":[{"text":"what is in"},{"inlineData":{"mimeType":"image/png","data":"AAAA"}}]})");
  EXPECT_EQ(json::serialize(contents[1]), R"({"role":"model","parts":[{"functionCall":{"name":"lookup","args":{"q":"x"}}}]})");
  EXPECT_EQ(json::serialize(contents[2]),
            R"({"role":"user","parts":[{"functionResponse":{"name":"lookup","response":{"answer":42}}},)"
            R"({"functionResponse":{"name":"lookup","response":{"content":"plain"}}},{"text":"thanks"}]})");
  EXPECT_EQ(json::serialize(g.at("tools")),
            R"([{"functionDeclarations":[{"name":"lookup","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}]}])");
  EXPECT_EQ(json::serialize(g.at("toolConfig")),
            R"({"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["lookup"]}})");
  const auto& gc = g.at("generationConfig").as_object();
  EXPECT_EQ(gc.at("maxOutputTokens"), 77);
  EXPECT_EQ(gc.at("candidateCount"), 2);
  EXPECT_EQ(gc.at("topP"), 0.9);
  EXPECT_EQ(gc.at("seed"), 3);
  EXPECT_EQ(json::serialize(gc.at("stopSequences")), R"(["END"])");
  EXPECT_EQ(gc.at("responseMimeType"), "application/json");
  EXPECT_EQ(json::serialize(gc.at("responseSchema")), R"({"type":"object"})");
  EXPECT_FALSE(g.contains("stream"));
  EXPECT_FALSE(g.contains("user"));
}

TEST(GeminiTranslate, ToolChoiceStrings) {
  for (auto [choice, mode] : {std::pair{"none", "NONE"}, {"auto", "AUTO"}, {"required", "ANY"}}) {
    json::object chat{{"messages", json::array{json::object{{"role", "user"}, {"content", "hi"}}}}, {"tool_choice", choice}};
    EXPECT_EQ(gemini::chat_request_to_gemini(chat).at("toolConfig").at("functionCallingConfig").at("mode"), mode);
  }
}

TEST(GeminiAdapter, OutputLimitIsTheOneWireField) {
  const auto& p = provider_for(config::ProviderKind::gemini);
  auto chat = obj(R"({"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":900})");
  p.set_output_limit(deployment(config::ProviderKind::gemini), chat, 120, OutputField::max_completion_tokens);
  auto d = deployment(config::ProviderKind::gemini);
  d.api_key = "k";
  auto req = p.build_request(d, chat, false);
  ASSERT_TRUE(req) << req.error();
  EXPECT_EQ(json::parse(req->body).at("generationConfig").at("maxOutputTokens"), 120);
  EXPECT_EQ(req->target.host, "generativelanguage.googleapis.com");
  EXPECT_EQ(req->target.path_and_query, "/v1beta/models/gemini-2.5-flash:generateContent");
  ASSERT_EQ(req->headers.size(), 1u);
  EXPECT_EQ(req->headers[0], (std::pair<std::string, std::string>{"x-goog-api-key", "k"}));
  EXPECT_EQ(p.authorizer(), nullptr);
  auto s = p.build_request(d, chat, true);
  EXPECT_EQ(s->target.path_and_query, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
}

TEST(GeminiAdapter, VertexUrlAndAuthorizer) {
  const auto& p = provider_for(config::ProviderKind::vertex_ai);
  auto d = deployment(config::ProviderKind::vertex_ai);
  d.cloud.vertex_project = "proj";
  d.cloud.vertex_location = "europe-west4";
  auto chat = obj(R"({"messages":[{"role":"user","content":"hi"}]})");
  auto req = p.build_request(d, chat, true);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->target.host, "europe-west4-aiplatform.googleapis.com");
  EXPECT_EQ(req->target.path_and_query,
            "/v1/projects/proj/locations/europe-west4/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
  EXPECT_TRUE(req->headers.empty());  // the bearer token is added by the authorizer
  EXPECT_NE(p.authorizer(), nullptr);
  d.cloud.vertex_location = "global";
  d.upstream_model = "a/../b?c";  // one path segment whatever the name
  req = p.build_request(d, chat, false);
  EXPECT_EQ(req->target.host, "aiplatform.googleapis.com");
  EXPECT_EQ(req->target.path_and_query, "/v1/projects/proj/locations/global/publishers/google/models/a%2F..%2Fb%3Fc:generateContent");
  d.api_base = "http://127.0.0.1:9";
  req = p.build_request(d, chat, false);
  EXPECT_EQ(req->target.port, "9");
  EXPECT_TRUE(req->target.path_and_query.starts_with("/v1/projects/proj/"));
}

// Audio parts claiming more than the prompt (and more than an int64 in all) are cut to what the
// cached tokens left of it, as the cost counts them.
TEST(GeminiResponse, AudioPartsBeyondThePromptAreCutAndTheirSumNeverOverflows) {
  std::string details;
  for (int i = 0; i < 10'000; ++i) details += std::string(i ? "," : "") + R"({"modality":"AUDIO","tokenCount":1000000000000000})";
  const auto huge = gemini::usage_from_gemini(json::parse(
      R"({"promptTokenCount":40,"cachedContentTokenCount":30,"candidatesTokenCount":2,"promptTokensDetails":[)" + details + "]}"));
  ASSERT_TRUE(huge.reported);
  EXPECT_EQ(huge.prompt_tokens, 40);
  EXPECT_EQ(huge.cached_tokens, 30);
  EXPECT_EQ(huge.audio_input_tokens, 10);
  const auto some = gemini::usage_from_gemini(json::parse(
      R"({"promptTokenCount":40,"candidatesTokenCount":2,"promptTokensDetails":[{"modality":"TEXT","tokenCount":30},{"modality":"AUDIO","tokenCount":10}]})"));
  EXPECT_EQ(some.audio_input_tokens, 10);
  EXPECT_EQ(some.prompt_split().text, 30);
}

// promptTokensDetails counts the cached content too (Gemini's UsageMetadata reference); its audio
// is in cacheTokensDetails and priced as cached, so only the rest is priced as audio input.
TEST(GeminiResponse, AudioReadFromTheCacheIsPricedAsCachedNotAsAudioInput) {
  const auto u = gemini::usage_from_gemini(json::parse(
      R"({"promptTokenCount":100,"cachedContentTokenCount":60,"candidatesTokenCount":2,)"
      R"("promptTokensDetails":[{"modality":"TEXT","tokenCount":40},{"modality":"AUDIO","tokenCount":60}],)"
      R"("cacheTokensDetails":[{"modality":"TEXT","tokenCount":20},{"modality":"AUDIO","tokenCount":40}]})"));
  ASSERT_TRUE(u.reported);
  EXPECT_EQ(u.cached_tokens, 60);
  EXPECT_EQ(u.audio_input_tokens, 20);
  const auto split = u.prompt_split();
  EXPECT_EQ(split.cached, 60);
  EXPECT_EQ(split.audio, 20);
  EXPECT_EQ(split.text, 20);
  // Cached audio beyond what is counted as cached, or beyond the prompt's audio, takes nothing more.
  const auto odd = gemini::usage_from_gemini(json::parse(
      R"({"promptTokenCount":100,"cachedContentTokenCount":10,)"
      R"("promptTokensDetails":[{"modality":"AUDIO","tokenCount":30}],)"
      R"("cacheTokensDetails":[{"modality":"AUDIO","tokenCount":50}]})"));
  EXPECT_EQ(odd.cached_tokens, 10);
  EXPECT_EQ(odd.audio_input_tokens, 20);
  const auto none = gemini::usage_from_gemini(json::parse(
      R"({"promptTokenCount":100,"promptTokensDetails":[{"modality":"AUDIO","tokenCount":30}],)"
      R"("cacheTokensDetails":[{"modality":"AUDIO","tokenCount":50}]})"));
  EXPECT_EQ(none.audio_input_tokens, 30);
  const auto more = gemini::usage_from_gemini(json::parse(
      R"({"promptTokenCount":100,"cachedContentTokenCount":90,)"
      R"("promptTokensDetails":[{"modality":"AUDIO","tokenCount":30}],)"
      R"("cacheTokensDetails":[{"modality":"AUDIO","tokenCount":50},"x",{"modality":"AUDIO","tokenCount":-5}]})"));
  EXPECT_EQ(more.audio_input_tokens, 0);
}

TEST(GeminiResponse, TextToolCallsFinishAndUsage) {
  const auto& p = provider_for(config::ProviderKind::gemini);
  auto parsed = p.parse_response(deployment(config::ProviderKind::gemini), R"({
    "candidates":[{"content":{"role":"model","parts":[{"text":"thinking...","thought":true},{"text":"Hello "},{"text":"world"}]},"finishReason":"STOP","index":0},
                  {"content":{"role":"model","parts":[{"functionCall":{"name":"lookup","args":{"q":"x"}}}]},"finishReason":"STOP","index":1},
                  {"content":{"role":"model","parts":[{"text":"cut"}]},"finishReason":"MAX_TOKENS","index":2},
                  {"content":{"parts":[]},"finishReason":"SAFETY","index":3}],
    "usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":20,"thoughtsTokenCount":30,"cachedContentTokenCount":60,"totalTokenCount":150},
    "modelVersion":"gemini-2.5-flash-001","responseId":"abc"})");
  ASSERT_TRUE(parsed) << parsed.error();
  const auto& c = parsed->completion;
  EXPECT_EQ(c.at("id"), "chatcmpl-abc");
  EXPECT_EQ(c.at("model"), "gemini-2.5-flash-001");
  const auto& ch = c.at("choices").as_array();
  ASSERT_EQ(ch.size(), 4u);
  EXPECT_EQ(ch[0].at("message").at("content"), "Hello world");
  EXPECT_EQ(ch[0].at("finish_reason"), "stop");
  EXPECT_TRUE(ch[1].at("message").at("content").is_null());
  EXPECT_EQ(ch[1].at("message").at("tool_calls").at(0).at("function").at("arguments"), R"({"q":"x"})");
  EXPECT_EQ(ch[1].at("finish_reason"), "tool_calls");
  EXPECT_EQ(ch[2].at("finish_reason"), "length");
  EXPECT_EQ(ch[3].at("finish_reason"), "content_filter");
  const auto& u = parsed->usage;
  EXPECT_TRUE(u.reported);
  EXPECT_EQ(u.prompt_tokens, 100);
  EXPECT_EQ(u.cached_tokens, 60);
  EXPECT_EQ(u.completion_tokens, 50);  // candidates + thoughts, both at the output price
  EXPECT_EQ(u.reasoning_tokens, 30);
  EXPECT_EQ(u.billed_output_tokens(), 50);
  EXPECT_EQ(c.at("usage").at("completion_tokens_details").at("reasoning_tokens"), 30);
  EXPECT_EQ(c.at("usage").at("prompt_tokens_details").at("cached_tokens"), 60);
}

TEST(GeminiResponse, BlockedPromptAndMalformed) {
  const auto& p = provider_for(config::ProviderKind::gemini);
  const auto d = deployment(config::ProviderKind::gemini);
  auto blocked = p.parse_response(d, R"({"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9}})");
  ASSERT_TRUE(blocked);
  EXPECT_EQ(blocked->completion.at("choices").at(0).at("finish_reason"), "content_filter");
  EXPECT_EQ(blocked->usage.prompt_tokens, 9);
  EXPECT_EQ(blocked->usage.completion_tokens, 0);
  // The blocked prompt is the attempt's content_policy failure (fallback), billed by its usage.
  ASSERT_TRUE(blocked->failure);
  EXPECT_EQ(policy::classify(*blocked->failure), policy::FailureClass::content_policy);
  EXPECT_EQ(blocked->failure->error_code, "content_policy_violation");
  EXPECT_NE(blocked->failure->message.find("SAFETY"), std::string::npos);
  EXPECT_TRUE(blocked->usage.reported);
  auto empty = p.parse_response(d, R"({"candidates":[],"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"}})");
  ASSERT_TRUE(empty && empty->failure);
  EXPECT_FALSE(empty->usage.reported);  // no usageMetadata: the reservation is charged
  // Candidates (even one stopped by SAFETY, a filtered output) are served, not failures.
  auto served = p.parse_response(d, R"({"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"SAFETY"}],"promptFeedback":{"safetyRatings":[]}})");
  ASSERT_TRUE(served);
  EXPECT_FALSE(served->failure);
  EXPECT_FALSE(p.parse_response(d, R"({"id":"x"})"));
  EXPECT_FALSE(p.parse_response(d, "nope"));
  auto no_usage = p.parse_response(d, R"({"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"STOP"}]})");
  ASSERT_TRUE(no_usage);
  EXPECT_FALSE(no_usage->usage.reported);  // unknown, not zero
}

TEST(GeminiStream, ChunksToolCallsAndFinalUsage) {
  const auto& p = provider_for(config::ProviderKind::gemini);
  auto dec = p.stream_decoder(deployment(config::ProviderKind::gemini), true);
  std::vector<std::string> out;
  auto feed = [&](std::string data) { dec->on_event(http::SseEvent{"", std::move(data), "", std::nullopt}, out); };
  feed(R"({"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]},"index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":1,"totalTokenCount":11}})");
  EXPECT_FALSE(dec->finished());
  EXPECT_FALSE(dec->usage_final());
  feed(R"({"candidates":[{"content":{"role":"model","parts":[{"text":"lo"},{"functionCall":{"name":"f","args":{"a":1}}}]},"finishReason":"STOP","index":0}],)"
       R"("usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":4,"thoughtsTokenCount":5,"cachedContentTokenCount":2,"totalTokenCount":19}})");
  EXPECT_TRUE(dec->finished());
  EXPECT_TRUE(dec->usage_final());
  ASSERT_EQ(out.size(), 6u);  // role, "Hel", "lo", tool call, finish, usage
  EXPECT_EQ(json::parse(out[0]).at("choices").at(0).at("delta").at("role"), "assistant");
  EXPECT_EQ(json::parse(out[1]).at("choices").at(0).at("delta").at("content"), "Hel");
  EXPECT_EQ(json::parse(out[3]).at("choices").at(0).at("delta").at("tool_calls").at(0).at("function").at("arguments"), R"({"a":1})");
  EXPECT_EQ(json::parse(out[4]).at("choices").at(0).at("finish_reason"), "tool_calls");
  const auto last = json::parse(out[5]);
  EXPECT_TRUE(last.at("choices").as_array().empty());
  EXPECT_EQ(last.at("usage").at("completion_tokens"), 9);
  const auto u = dec->usage();
  EXPECT_EQ(u.prompt_tokens, 10);
  EXPECT_EQ(u.cached_tokens, 2);
  EXPECT_EQ(u.completion_tokens, 9);
  EXPECT_EQ(u.reasoning_tokens, 5);
}

TEST(GeminiStream, CutStreamIsNotFinalAndErrorsAreClassified) {
  const auto& p = provider_for(config::ProviderKind::gemini);
  auto dec = p.stream_decoder(deployment(config::ProviderKind::gemini), false);
  std::vector<std::string> out;
  dec->on_event(http::SseEvent{"", R"({"candidates":[{"content":{"parts":[{"text":"a"}]},"index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1}})", "", std::nullopt}, out);
  EXPECT_FALSE(dec->finished());
  EXPECT_FALSE(dec->usage_final());  // no finish reason yet: the partial usage undercounts
  dec->on_event(http::SseEvent{"", R"({"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}})", "", std::nullopt}, out);
  ASSERT_TRUE(dec->error());
  EXPECT_EQ(dec->error()->status, 503);
  EXPECT_EQ(dec->error()->error_type, "UNAVAILABLE");
}

TEST(GeminiErrors, GoogleStatusesInTheClassifiersTerms) {
  const auto& p = provider_for(config::ProviderKind::gemini);
  auto rate = p.parse_error(429, R"({"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}})");
  EXPECT_TRUE(rate.error_body);
  EXPECT_EQ(rate.error_code, "rate_limit_exceeded");
  EXPECT_EQ(rate.error_type, "RESOURCE_EXHAUSTED");
  auto ctx = p.parse_error(400, R"({"error":{"code":400,"message":"The input token count (2000000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}})");
  EXPECT_EQ(ctx.error_code, "context_length_exceeded");
  EXPECT_EQ(ctx.status, 400);
  auto key = p.parse_error(400, R"({"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"reason":"API_KEY_INVALID"}]}})");
  EXPECT_EQ(key.status, 401);  // the deployment's credential, not the caller's request
  auto unauth = p.parse_error(401, R"([{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}])");
  EXPECT_TRUE(unauth.error_body);
  EXPECT_EQ(unauth.status, 401);
  EXPECT_EQ(unauth.error_type, "UNAUTHENTICATED");
  auto plain = p.parse_error(400, R"({"error":{"code":400,"message":"Invalid value at 'contents'","status":"INVALID_ARGUMENT"}})");
  EXPECT_EQ(plain.error_code, "INVALID_ARGUMENT");
  EXPECT_FALSE(p.parse_error(502, "<html>bad gateway</html>").error_body);
  EXPECT_FALSE(p.parse_error(500, R"({"message":"x"})").error_body);
}
