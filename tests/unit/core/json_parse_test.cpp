#include "core/json_parse.hpp"

#include <boost/json/error.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <string>

using tollgate::core::has_non_finite;
using tollgate::core::parse_json;

TEST(JsonParse, ParsesLikeBoost) {
  boost::system::error_code ec;
  const auto v = parse_json(R"({"a":[1,2.5,-1e308,{"b":null}],"c":"x"})", ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(boost::json::serialize(v), R"({"a":[1,2.5E0,-1E308,{"b":null}],"c":"x"})");
  EXPECT_FALSE(has_non_finite(v));
  parse_json("{not json", ec);
  EXPECT_TRUE(ec);
}

// Boost.JSON 1.81 reads these as ±infinity and would write them back as `Infinity`, which is not
// JSON (docs/fuzzing.md): refused wherever they are nested.
TEST(JsonParse, RefusesNumbersBeyondADoublesRange) {
  for (const char* text : {"1e400", "-1e400", R"({"n":1e4001})", R"([0,[1,{"x":[-9e999]}]])",
                           R"({"choices":[{"delta":{"content":"hi"},"logprobs":{"p":1E+400}}]})"}) {
    boost::system::error_code ec;
    const auto v = parse_json(text, ec);
    EXPECT_EQ(ec, boost::json::error::exponent_overflow) << text;
    EXPECT_TRUE(v.is_null()) << text;
  }
}

TEST(JsonParse, KeepsTheParseOptions) {
  boost::json::parse_options shallow;
  shallow.max_depth = 2;
  boost::system::error_code ec;
  parse_json("[[[1]]]", ec, shallow);
  EXPECT_TRUE(ec);
  parse_json("[[1]]", ec, shallow);
  EXPECT_FALSE(ec);
}

// A document parsed into its arena reads like one parsed with the default storage; its storage
// frees nothing element by element (so destroying it walks nothing).
TEST(JsonParse, ADocumentArenaHoldsTheSameDocument) {
  const std::string text =
      R"({"id":"chatcmpl-1","choices":[{"index":0,"message":{"role":"assistant","content":"a long enough answer text"}}],)"
      R"("usage":{"prompt_tokens":5,"completion_tokens":16,"prompt_tokens_details":{"cached_tokens":0}}})";
  boost::system::error_code ec;
  const auto plain = parse_json(text, ec);
  ASSERT_FALSE(ec);
  const auto arena = parse_json(text, ec, {}, tollgate::core::document_arena(text));
  ASSERT_FALSE(ec);
  EXPECT_EQ(arena, plain);
  EXPECT_TRUE(arena.storage().is_deallocate_trivial());
  EXPECT_FALSE(plain.storage().is_deallocate_trivial());
  // A document larger than its first block grows the arena by blocks.
  std::string many = R"({"data":[)";
  for (int i = 0; i < 2000; ++i) many += (i ? "," : "") + std::string(R"({"k":"value number )") + std::to_string(i) + "\"}";
  many += "]}";
  ASSERT_LE(many.size(), tollgate::core::kMaxArenaText);
  const auto grown = parse_json(many, ec, {}, tollgate::core::document_arena(many));
  ASSERT_FALSE(ec);
  EXPECT_TRUE(grown.storage().is_deallocate_trivial());
  EXPECT_EQ(grown.at("data").as_array().size(), 2000u);
  EXPECT_EQ(grown.at("data").as_array().back().at("k").as_string(), "value number 1999");
  // A larger text gets the default storage: a copy or an edit of it is freed as it goes.
  const std::string big = R"({"text":")" + std::string(tollgate::core::kMaxArenaText, 'x') + R"("})";
  const auto large = parse_json(big, ec, {}, tollgate::core::document_arena(big));
  ASSERT_FALSE(ec);
  EXPECT_FALSE(large.storage().is_deallocate_trivial());
  EXPECT_EQ(large.at("text").as_string().size(), tollgate::core::kMaxArenaText);
}

// adopt() moves an object with its storage: its elements are the same memory, not copies (which
// is what Boost.JSON's move assignment makes when the storages differ).
TEST(JsonParse, AdoptKeepsTheObjectsStorageAndElements) {
  const std::string text = R"({"content":"a string longer than any small-string buffer","n":1})";
  boost::system::error_code ec;
  auto v = parse_json(text, ec, {}, tollgate::core::document_arena(text));
  ASSERT_FALSE(ec);
  auto& from = v.as_object();
  const char* chars = from.at("content").as_string().data();
  const auto* resource = from.storage().get();

  // What adopt() avoids: a move assignment into an object of another storage copies the elements.
  boost::json::object copied;
  boost::json::object source_copy(from, from.storage());
  const char* source_chars = source_copy.at("content").as_string().data();
  copied = std::move(source_copy);
  EXPECT_NE(copied.at("content").as_string().data(), source_chars);

  boost::json::object to;
  tollgate::core::adopt(to, std::move(from));
  EXPECT_EQ(to.storage().get(), resource);
  EXPECT_EQ(to.at("content").as_string().data(), chars);
  EXPECT_EQ(to.at("n").as_int64(), 1);
}
