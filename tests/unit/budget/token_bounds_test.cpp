#include "budget/token_bounds.hpp"

#include "budget/media_tokens.hpp"
#include "media_fixtures.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <limits>
#include <new>
#include <string>

// Counts the bytes allocated through operator new on this thread while `g_counting` is set: the
// model-aware bound must not allocate (its inline payloads are read in place).
namespace {
thread_local bool g_counting = false;
thread_local std::size_t g_allocated = 0;
}  // namespace

void* operator new(std::size_t n) {
  if (g_counting) g_allocated += n;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace tollgate::budget {
namespace {

using namespace test;

boost::json::object json(std::string_view text) { return boost::json::parse(text).as_object(); }

constexpr std::int64_t kMsg = kPerMessageTokenOverhead;  // per message / part / tool call
constexpr std::int64_t kReq = kPerRequestTokenOverhead;
constexpr std::int64_t kTool = kPerToolTokenOverhead;

// ------------------------------------------------------------------ the original signature (unchanged)

TEST(InputBound, CountsBytesPlusOverhead) {
  const auto req = json(R"({"model":"gpt-4o","messages":[
      {"role":"system","content":"You are terse."},
      {"role":"user","content":"Hello"}]})");
  // request + (message + "system" 6 + 14) + (message + "user" 4 + 5)
  EXPECT_EQ(input_token_upper_bound(req), kReq + (kMsg + 6 + 14) + (kMsg + 4 + 5));
  EXPECT_EQ(input_token_upper_bound(json(R"({"model":"x"})")), kPerRequestTokenOverhead);
}

TEST(InputBound, Utf8BytesNotCodePoints) {
  // "héllo 世界" is 13 bytes (é = 2, each CJK char = 3).
  const auto req = json(R"({"messages":[{"role":"user","content":"h\u00e9llo \u4e16\u754c"}]})");
  EXPECT_EQ(input_token_upper_bound(req), kReq + kMsg + 4 + 13);
}

TEST(InputBound, PartsImagesToolsAndSystem) {
  const auto req = json(R"({"messages":[
      {"role":"user","content":[
         {"type":"text","text":"What is this?"},
         {"type":"image_url","image_url":{"url":"data:image/png;base64,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}]},
      {"role":"assistant","content":null,"tool_calls":[
         {"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"42"}],
    "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]})");
  const std::int64_t msg1 = kMsg + 4 + (kMsg + 4 + 13) + (kMsg + kDefaultImageTokenBound);
  const std::int64_t msg2 = kMsg + 9 + (kMsg + 2 + 8 + 1 + 7);
  const std::int64_t msg3 = kMsg + 4 + 2 + 2;
  const std::int64_t tools = static_cast<std::int64_t>(
                                 std::string_view(R"([{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}])").size()) +
                             kTool;
  EXPECT_EQ(input_token_upper_bound(req), kReq + msg1 + msg2 + msg3 + tools);
  EXPECT_EQ(input_token_upper_bound(req, 40'000) - input_token_upper_bound(req), 38'000);

  const auto anthropic = json(R"({"system":"Be kind.","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","data":"AAAA"}}]}]})");
  // request + the string system as a message (overhead + "Be kind." 8) + the user message
  EXPECT_EQ(input_token_upper_bound(anthropic), kReq + (kMsg + 8) + (kMsg + 4 + kMsg + kDefaultImageTokenBound));
}

TEST(InputBound, IsAtLeastTheByteCount) {
  // Whatever the tokenizer, tokens <= bytes: the bound must never be below the text's size.
  std::string big(100'000, 'x');
  boost::json::object req;
  boost::json::array msgs;
  msgs.push_back(boost::json::object{{"role", "user"}, {"content", big}});
  req["messages"] = std::move(msgs);
  EXPECT_GE(input_token_upper_bound(req), 100'000);
}

TEST(InputBound, OldSignatureIgnoresMediaPayloads) {
  // The model-blind bound still charges tokens_per_image per image part whatever its data, and
  // counts other parts' strings as text.
  const std::string url = "data:image/png;base64," + base64(png(4000, 4000));
  boost::json::object req = json(R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":""}}]}]})");
  req["messages"].as_array()[0].as_object()["content"].as_array()[0].as_object()["image_url"].as_object()["url"] = url;
  EXPECT_EQ(input_token_upper_bound(req), kReq + kMsg + 4 + kMsg + kDefaultImageTokenBound);
  EXPECT_EQ(input_token_upper_bound(req, 7), kReq + kMsg + 4 + kMsg + 7);
}

// ------------------------------------------------------------------ text rules of the new bound

std::int64_t bound(const boost::json::object& req, std::string_view model, std::optional<std::int64_t> context = std::nullopt) {
  return input_token_upper_bound(req, InputBoundContext{model, context});
}

TEST(InputBoundCtx, TextMatchesTheOriginalRule) {
  const char* requests[] = {
      R"({"model":"gpt-4o","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Hello"}]})",
      R"({"messages":[{"role":"user","content":"h\u00e9llo \u4e16\u754c"}]})",
      R"({"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"}]},
          {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},
          {"role":"tool","tool_call_id":"c1","content":"42"}],
         "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],
         "response_format":{"type":"json_object"},"tool_choice":"auto"})",
      R"({"system":[{"type":"text","text":"Be kind."},{"type":"text","text":"Be brief."}],"messages":[]})",
      R"({"model":"x"})",
  };
  for (const char* r : requests) {
    const auto req = json(r);
    EXPECT_EQ(bound(req, "gpt-4o"), input_token_upper_bound(req)) << r;
  }
}

TEST(InputBoundCtx, ResponsesInstructionsAndInputItems) {
  const auto req = json(R"({"instructions":"Be terse.","input":[{"role":"user","content":[{"type":"input_text","text":"Hi"}]}]})");
  // request + "Be terse." as a message (overhead + 9) + input item (overhead + content part
  // (overhead + "input_text" 10 + "Hi" 2) + "user" 4)
  EXPECT_EQ(bound(req, "gpt-4o"), kReq + kMsg + 9 + kMsg + 4 + kMsg + 10 + 2);
}

TEST(InputBoundCtx, ToolPromptAndProviderDefinedTools) {
  const auto plain = json(R"({"messages":[{"role":"user","content":"hi"}]})");
  auto with_tools = plain;
  with_tools["tools"] = boost::json::parse(R"([{"name":"get_weather","input_schema":{"type":"object"}}])");
  const auto tools_bytes = static_cast<std::int64_t>(boost::json::serialize(with_tools["tools"]).size());
  // Claude: + its hidden tool-use system prompt (≤ 530 tokens); OpenAI: none.
  EXPECT_EQ(bound(with_tools, "claude-sonnet-4") - bound(plain, "claude-sonnet-4"), tools_bytes + kTool + 530);
  EXPECT_EQ(bound(with_tools, "gpt-4o") - bound(plain, "gpt-4o"), tools_bytes + kTool);
  auto builtin = plain;
  builtin["tools"] = boost::json::parse(R"([{"type":"computer_20250124","name":"computer","display_width_px":1024,"display_height_px":768},
                                            {"type":"bash_20250124","name":"bash"}])");
  const auto builtin_bytes = static_cast<std::int64_t>(boost::json::serialize(builtin["tools"]).size());
  EXPECT_EQ(bound(builtin, "claude-sonnet-4") - bound(plain, "claude-sonnet-4"),
            builtin_bytes + 2 * kTool + 530 + 2 * kBuiltinToolTokens);
  auto empty = plain;
  empty["tools"] = boost::json::array{};
  EXPECT_EQ(bound(empty, "claude-sonnet-4") - bound(plain, "claude-sonnet-4"), 2);  // "[]", no tool prompt
}

TEST(InputBoundCtx, ToolUseInputCountsAsJson) {
  // Anthropic tool_use blocks carry their arguments as a JSON object: numbers and keys are text too.
  const auto req = json(R"({"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"sum",
      "input":{"values":[1,2,3,4,5,6,7,8,9,10,11,12]}}]}]})");
  const std::int64_t input_json = static_cast<std::int64_t>(std::string_view(R"({"values":[1,2,3,4,5,6,7,8,9,10,11,12]})").size());
  // 16 + 8 + "assistant" 9 + part 8 + "tool_use" 8 + "t1" 2 + "sum" 3 + the JSON.
  EXPECT_EQ(bound(req, "claude-sonnet-4"), kReq + kMsg + 9 + kMsg + 8 + 2 + 3 + input_json);
}

// ------------------------------------------------------------------ images

// {"messages":[{"role":"user","content":[<part>]}]} with `part` given as JSON text.
boost::json::object one_part(const boost::json::value& part) {
  boost::json::object req;
  boost::json::array content;
  content.push_back(part);
  boost::json::array msgs;
  msgs.push_back(boost::json::object{{"role", "user"}, {"content", std::move(content)}});
  req["messages"] = std::move(msgs);
  return req;
}

// Tokens of one part in a one-message request: bound − request, message and part overhead − "user".
std::int64_t part_tokens(const boost::json::value& part, std::string_view model, std::optional<std::int64_t> context = std::nullopt) {
  return bound(one_part(part), model, context) - (kReq + kMsg + 4 + kMsg);
}

boost::json::value openai_image(const std::string& url, std::string_view detail = {}) {
  boost::json::object iu{{"url", url}};
  if (!detail.empty()) iu["detail"] = detail;
  return boost::json::object{{"type", "image_url"}, {"image_url", std::move(iu)}};
}

boost::json::value anthropic_image(const std::string& b64, std::string_view media_type = "image/png") {
  return boost::json::object{
      {"type", "image"}, {"source", boost::json::object{{"type", "base64"}, {"media_type", media_type}, {"data", b64}}}};
}

std::string data_url(std::string_view mt, const Bytes& b) { return "data:" + std::string(mt) + ";base64," + base64(b); }

constexpr std::int64_t kImageUrlType = 9;  // the "image_url" type string counts as text
constexpr std::int64_t kImageType = 5;     // "image"

TEST(InputBoundCtx, OpenAiImagesByFamilyAndDetail) {
  const std::string png1024 = data_url("image/png", png(1024, 1024));
  EXPECT_EQ(part_tokens(openai_image(png1024, "high"), "gpt-4o"), kImageUrlType + 765);  // detail is no text
  EXPECT_EQ(part_tokens(openai_image(png1024, "low"), "gpt-4o"), kImageUrlType + 85);
  EXPECT_EQ(part_tokens(openai_image(png1024, "auto"), "gpt-4o"), kImageUrlType + 765);
  EXPECT_EQ(part_tokens(openai_image(png1024), "gpt-4o"), kImageUrlType + 765);
  EXPECT_EQ(part_tokens(openai_image(png1024), "gpt-4o-mini-2024-07-18"), kImageUrlType + 2'833 + 4 * 5'667);
  EXPECT_EQ(part_tokens(openai_image(png1024), "gpt-4.1-mini"), kImageUrlType + 1'659);
  EXPECT_EQ(part_tokens(openai_image(png1024), "gpt-5"), kImageUrlType + 70 + 4 * 140);
  // Every format, same dimensions, same tokens.
  for (const std::string& url : {data_url("image/jpeg", jpeg(2048, 4096)), data_url("image/gif", gif(2048, 4096)),
                                 data_url("image/webp", webp_vp8(2048, 4096)), data_url("image/webp", webp_vp8l(2048, 4096)),
                                 data_url("image/webp", webp_vp8x(2048, 4096)), data_url("image/png", png(2048, 4096))}) {
    EXPECT_EQ(part_tokens(openai_image(url, "high"), "gpt-4o"), kImageUrlType + 1'105) << url.substr(0, 30);
  }
  // A mislabelled payload is sized by its bytes.
  EXPECT_EQ(part_tokens(openai_image(data_url("image/png", jpeg(512, 512))), "gpt-4o"), kImageUrlType + 255);
  // Responses API input_image: "image_url" is the string itself.
  const boost::json::value responses = boost::json::object{{"type", "input_image"}, {"image_url", png1024}, {"detail", "low"}};
  EXPECT_EQ(part_tokens(responses, "gpt-4o"), 11 + 3 + 85);
}

TEST(InputBoundCtx, UnknownDimensionsUseTheFamilyMaximum) {
  for (const std::string& url : {std::string("https://example.com/cat.png"), std::string("data:image/png;base64,!!!!"),
                                 data_url("image/png", bytes("definitely not an image")), std::string("data:image/png,raw")}) {
    EXPECT_EQ(part_tokens(openai_image(url), "gpt-4o"), kImageUrlType + 1'445) << url;
    EXPECT_EQ(part_tokens(openai_image(url), "gpt-4o-mini"), kImageUrlType + 48'169) << url;
    EXPECT_EQ(part_tokens(openai_image(url), "claude-sonnet-4"), kImageUrlType + 1'600) << url;
    EXPECT_EQ(part_tokens(openai_image(url), "claude-opus-4-7"), kImageUrlType + 4'784) << url;
    EXPECT_EQ(part_tokens(openai_image(url), "gemini-3-pro-preview"), kImageUrlType + 2'240) << url;
    // Unknown model: the largest per-image maximum of every family (conservative).
    EXPECT_EQ(part_tokens(openai_image(url), "my-local-llava"), kImageUrlType + largest_image_token_bound()) << url;
    // Gemini 1.x/2.x tiling has no documented maximum: the context limit.
    EXPECT_EQ(part_tokens(openai_image(url), "gemini-2.0-flash", 1'048'576), kImageUrlType + 1'048'576) << url;
    EXPECT_EQ(part_tokens(openai_image(url), "gemini-2.0-flash"), kImageUrlType + kUnknownMediaTokenBound) << url;
  }
  // The family maximum is capped by the context limit.
  EXPECT_EQ(part_tokens(openai_image("https://x/y.png"), "gpt-4o-mini", 10'000), kImageUrlType + 10'000);
}

TEST(InputBoundCtx, AnthropicImages) {
  EXPECT_EQ(part_tokens(anthropic_image(base64(png(1000, 1000))), "claude-sonnet-4"), kImageType + 1'334);
  EXPECT_EQ(part_tokens(anthropic_image(base64(jpeg(1000, 1000)), "image/jpeg"), "claude-opus-4-7"), kImageType + 1'296);
  EXPECT_EQ(part_tokens(anthropic_image(base64(webp_vp8(8000, 8000)), "image/webp"), "claude-3-5-sonnet-20241022"), kImageType + 1'600);
  EXPECT_EQ(part_tokens(anthropic_image(base64(gif(300, 300)), "image/gif"), "gemini-2.0-flash"), kImageType + 258);
  const boost::json::value url_image = boost::json::object{
      {"type", "image"}, {"source", boost::json::object{{"type", "url"}, {"url", "https://example.com/a.jpg"}}}};
  EXPECT_EQ(part_tokens(url_image, "claude-sonnet-4"), kImageType + 1'600);
  const boost::json::value file_image = boost::json::object{
      {"type", "image"}, {"source", boost::json::object{{"type", "file"}, {"file_id", "file_011"}}}};
  EXPECT_EQ(part_tokens(file_image, "claude-sonnet-4"), kImageType + 1'600);
}

TEST(InputBoundCtx, ImagesNestedInToolResults) {
  // Anthropic tool_result content blocks: text counts as text, images as images.
  const auto req = json(R"({"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[
      {"type":"text","text":"done"},
      {"type":"image","source":{"type":"url","url":"https://example.com/shot.png"}}]}]}]})");
  // 16 + msg 8 + "user" 4 + part 8 + "tool_result" 11 + "t1" 2 + (8 + "text" 4 + "done" 4) + (8 + "image" 5 + 1600)
  EXPECT_EQ(bound(req, "claude-sonnet-4"), kReq + kMsg + 4 + kMsg + 11 + 2 + (kMsg + 4 + 4) + (kMsg + kImageType + 1'600));
}

// ------------------------------------------------------------------ documents

boost::json::value openai_file(const std::string& file_data) {
  return boost::json::object{
      {"type", "file"}, {"file", boost::json::object{{"filename", "a.pdf"}, {"file_data", file_data}}}};
}

boost::json::value anthropic_document(const boost::json::object& source) {
  return boost::json::object{{"type", "document"}, {"source", source}};
}

constexpr std::int64_t kFileMeta = 4 + 5;  // "file" + "a.pdf"
constexpr std::int64_t kDocType = 8;       // "document"

TEST(InputBoundCtx, PdfPagesTimesThePageBound) {
  const auto page = pdf_page_token_bound(media_family_for("gpt-4o"));
  const std::string with_count = "data:application/pdf;base64," + base64(bytes(pdf(3, 3)));
  EXPECT_EQ(part_tokens(openai_file(with_count), "gpt-4o"), kFileMeta + 3 * page);
  const std::string only_pages = "data:application/pdf;base64," + base64(bytes(pdf(-1, 4)));
  EXPECT_EQ(part_tokens(openai_file(only_pages), "gpt-4o"), kFileMeta + 4 * page);
  // Bare base64 (no data: prefix) is sniffed too.
  EXPECT_EQ(part_tokens(openai_file(base64(bytes(pdf(2, 0)))), "gpt-4o"), kFileMeta + 2 * page);
  // Anthropic document block.
  const auto claude_page = pdf_page_token_bound(media_family_for("claude-sonnet-4"));
  EXPECT_EQ(claude_page, 4'600);
  const boost::json::object src{{"type", "base64"}, {"media_type", "application/pdf"}, {"data", base64(bytes(pdf(5, 5)))}};
  EXPECT_EQ(part_tokens(anthropic_document(src), "claude-sonnet-4"), kDocType + 5 * 4'600);
}

TEST(InputBoundCtx, UnreadablePdfsUseTheContextLimit) {
  const std::string neither = "data:application/pdf;base64," + base64(bytes(pdf(-1, 0)));
  EXPECT_EQ(part_tokens(openai_file(neither), "gpt-4o", 128'000), kFileMeta + 128'000);
  EXPECT_EQ(part_tokens(openai_file(neither), "gpt-4o"), kFileMeta + kUnknownMediaTokenBound);
  const std::string objstm = "data:application/pdf;base64," +
      base64(bytes(pdf(-1, 1, "9 0 obj\n<< /Type /ObjStm /N 3 /First 20 /Length 4 >>\nstream\nxxxx\nendstream\nendobj\n")));
  EXPECT_EQ(part_tokens(openai_file(objstm), "gpt-4o", 128'000), kFileMeta + 128'000);
  // Not inline: file ids and URLs.
  const boost::json::value by_id = boost::json::object{{"type", "file"}, {"file", boost::json::object{{"file_id", "file-abc"}}}};
  EXPECT_EQ(part_tokens(by_id, "gpt-4o", 128'000), 4 + 8 + 128'000);  // "file" + "file-abc"
  const boost::json::object url_src{{"type", "url"}, {"url", "https://example.com/paper.pdf"}};
  EXPECT_EQ(part_tokens(anthropic_document(url_src), "claude-sonnet-4", 200'000), kDocType + 200'000);
  const boost::json::object file_src{{"type", "file"}, {"file_id", "file_01"}};
  EXPECT_EQ(part_tokens(anthropic_document(file_src), "claude-sonnet-4", 200'000), kDocType + 200'000);
  // Garbage in a PDF slot: unknown.
  EXPECT_EQ(part_tokens(openai_file("data:application/pdf;base64,@@@@"), "gpt-4o", 1'000), kFileMeta + 1'000);
}

TEST(InputBoundCtx, PdfCappedByTheContextLimit) {
  const std::string many = "data:application/pdf;base64," + base64(bytes(pdf(500, 0)));
  EXPECT_EQ(part_tokens(openai_file(many), "claude-sonnet-4", 200'000), kFileMeta + 200'000);
  EXPECT_EQ(part_tokens(openai_file(many), "claude-sonnet-4"), kFileMeta + 500 * 4'600);
}

TEST(InputBoundCtx, PlainTextDocumentsCountAsText) {
  const boost::json::object text_src{{"type", "text"}, {"media_type", "text/plain"}, {"data", "The grass is green."}};
  EXPECT_EQ(part_tokens(anthropic_document(text_src), "claude-sonnet-4"), kDocType + 19);
  const boost::json::object b64_text{{"type", "base64"}, {"media_type", "text/plain"}, {"data", base64(bytes("hello world!"))}};
  EXPECT_EQ(part_tokens(anthropic_document(b64_text), "claude-sonnet-4"), kDocType + 12);
  EXPECT_EQ(part_tokens(openai_file("data:text/plain;base64," + base64(bytes("abc"))), "gpt-4o"), kFileMeta + 3);
  // Custom content documents: their blocks count as parts.
  const auto content_src = boost::json::parse(R"({"type":"content","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]})").as_object();
  EXPECT_EQ(part_tokens(anthropic_document(content_src), "claude-sonnet-4"), kDocType + 2 * (kMsg + 4 + 3));
  // Title and context are text.
  boost::json::object titled = anthropic_document(text_src).as_object();
  titled["title"] = "Notes";
  titled["context"] = "from the wiki";
  EXPECT_EQ(part_tokens(titled, "claude-sonnet-4"), kDocType + 19 + 5 + 13);
  // An unknown binary type (e.g. a .docx) cannot be sized.
  EXPECT_EQ(part_tokens(openai_file("data:application/msword;base64," + base64(bytes("PK\x03\x04zzzz"))), "gpt-4o", 5'000),
            kFileMeta + 5'000);
}

// ------------------------------------------------------------------ audio

boost::json::value input_audio(const std::string& b64, std::string_view format) {
  return boost::json::object{
      {"type", "input_audio"}, {"input_audio", boost::json::object{{"data", b64}, {"format", format}}}};
}

constexpr std::int64_t kAudioType = 11;  // "input_audio"

TEST(InputBoundCtx, AudioByDuration) {
  // 2 s of 16 kHz mono 16-bit PCM: 2 × 32 tokens.
  EXPECT_EQ(part_tokens(input_audio(base64(wav(16'000, 1, 16, 64'000)), "wav"), "gpt-4o-audio-preview"), kAudioType + 64);
  // 2.5 s: rounded up.
  EXPECT_EQ(part_tokens(input_audio(base64(wav(16'000, 1, 16, 80'000)), "wav"), "gpt-4o"), kAudioType + 80);
  // MP3: bytes at 8 kbit/s → 10,000 bytes = 10 s → 320 tokens.
  Bytes mp3 = bytes("ID3");
  mp3.resize(10'000, 0);
  EXPECT_EQ(part_tokens(input_audio(base64(mp3), "mp3"), "gpt-4o"), kAudioType + 320);
  // Unreadable → the context limit.
  EXPECT_EQ(part_tokens(input_audio("!!!!", "wav"), "gpt-4o", 128'000), kAudioType + 128'000);
  EXPECT_EQ(part_tokens(input_audio(base64(Bytes(64, 7)), "ogg"), "gpt-4o", 128'000), kAudioType + 128'000);
  const boost::json::value no_data = boost::json::object{{"type", "input_audio"}, {"input_audio", boost::json::object{}}};
  EXPECT_EQ(part_tokens(no_data, "gpt-4o", 128'000), kAudioType + 128'000);
  // Capped by the context limit.
  EXPECT_EQ(part_tokens(input_audio(base64(mp3), "mp3"), "gpt-4o", 100), kAudioType + 100);
}

TEST(InputBoundCtx, AssistantAudioReferenceIsUnknown) {
  const auto req = json(R"({"messages":[{"role":"assistant","audio":{"id":"audio_abc"}}]})");
  // 16 + 8 + "assistant" 9 + the context limit.
  EXPECT_EQ(bound(req, "gpt-4o", 128'000), kReq + kMsg + 9 + 128'000);
}

// ------------------------------------------------------------------ robustness

TEST(InputBoundCtx, MalformedShapesAreLenient) {
  for (const char* r : {R"({"messages":"just a string"})", R"({"messages":[1,2,null,true,"x",[["y"]]]})",
                        R"({"messages":[{"role":"user","content":{"type":"image_url"}}]})",
                        R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":42}]}]})",
                        R"({"messages":[{"role":"user","content":[{"type":"file","file":"nope"}]}]})",
                        R"({"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64"}}]}]})",
                        R"({"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":7}}]}]})",
                        R"({"system":7,"tools":"x","input":{"a":["b"]}})"}) {
    const auto req = json(r);
    const std::int64_t b = bound(req, "gpt-4o", 1'000);
    EXPECT_GE(b, kReq) << r;
    EXPECT_GE(b, input_token_upper_bound(req, 0)) << r;  // never below the model-blind text count
  }
}

TEST(InputBoundCtx, Saturates) {
  boost::json::array content;
  for (int i = 0; i < 4; ++i) {
    content.push_back(boost::json::object{{"type", "file"}, {"file", boost::json::object{{"file_id", "f"}}}});
  }
  boost::json::object req;
  boost::json::array msgs;
  msgs.push_back(boost::json::object{{"role", "user"}, {"content", std::move(content)}});
  req["messages"] = std::move(msgs);
  EXPECT_EQ(bound(req, "gpt-4o", std::numeric_limits<std::int64_t>::max()), std::numeric_limits<std::int64_t>::max());
}

TEST(InputBoundCtx, NeverBelowTheTextBytes) {
  std::string big(100'000, 'x');
  boost::json::object req;
  boost::json::array msgs;
  msgs.push_back(boost::json::object{{"role", "user"}, {"content", big}});
  req["messages"] = std::move(msgs);
  EXPECT_GE(bound(req, "claude-sonnet-4"), 100'000);
}

TEST(InputBoundCtx, LargePayloadsAreReadInPlaceWithoutAllocating) {
  // A 40 MB base64 image (a real PNG header followed by filler) and a PDF: sized without copying
  // or allocating, the image from its first bytes only.
  Bytes huge = png(3000, 2000);
  huge.resize(30'000'000, 0x41);
  const std::string image_url = data_url("image/png", huge);
  ASSERT_GT(image_url.size(), 40'000'000u);
  const std::string pdf_url = "data:application/pdf;base64," + base64(bytes(pdf(7, 7)));
  boost::json::array content;
  content.push_back(openai_image(image_url, "high"));
  content.push_back(openai_file(pdf_url));
  content.push_back(input_audio(base64(wav(8'000, 1, 16, 16'000)), "wav"));
  content.push_back(anthropic_image(base64(jpeg(640, 480, 20'000))));
  boost::json::object req;
  boost::json::array msgs;
  msgs.push_back(boost::json::object{{"role", "user"}, {"content", std::move(content)}});
  req["messages"] = std::move(msgs);

  g_allocated = 0;
  g_counting = true;
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t b = bound(req, "gpt-4o", 128'000);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  g_counting = false;
  EXPECT_EQ(g_allocated, 0u);
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count(), 50);
  // 3000 × 2000 high: 2048 × 1366 → 1152 × 768 → 3 × 2 tiles.
  const std::int64_t image = kImageUrlType + 85 + 6 * 170;
  const std::int64_t file = kFileMeta + 7 * pdf_page_token_bound(media_family_for("gpt-4o"));
  const std::int64_t audio = kAudioType + 32;  // 1 s
  const std::int64_t jpeg_part = kImageType + 85 + 2 * 170;  // 640 × 480: 2 × 1 tiles
  EXPECT_EQ(b, kReq + kMsg + 4 + 4 * kMsg + image + file + audio + jpeg_part);
}

}  // namespace
}  // namespace tollgate::budget
