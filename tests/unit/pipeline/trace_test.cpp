#include "pipeline/trace.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "pipeline/replay.hpp"

using namespace tollgate;
using pipeline::DecisionTrace;
using pipeline::TraceStep;

namespace {

DecisionTrace sample() {
  DecisionTrace t;
  t.budget.max_retries = 1;
  t.budget.max_fallbacks = 2;
  t.budget.deadline = std::chrono::milliseconds(4000);
  t.budget.max_request_cost = 500'000'000;  // $0.50
  t.ignored.push_back("x-tollgate-max-retries: 5 > 1");
  TraceStep a;
  a.kind = TraceStep::Kind::attempt;
  a.group = "main";
  a.deployment = "main-a";
  a.provider = "openai";
  a.circuit = "closed";
  a.status = 429;
  a.failure_class = "retryable_capacity";
  a.action = "retry_then_fallback";
  a.decision = "fallback";
  a.duration_ms = 12;
  a.reserved = 1000;
  t.steps.push_back(a);
  TraceStep skip;
  skip.kind = TraceStep::Kind::skip;
  skip.group = "claude";
  skip.reason = "budget_exceeded key";
  t.steps.push_back(skip);
  TraceStep ok;
  ok.kind = TraceStep::Kind::attempt;
  ok.group = "small";
  ok.deployment = "small-a";
  ok.provider = "openai";
  ok.circuit = "half_open";
  ok.status = 200;
  ok.decision = "served";
  ok.reserved = 500;
  ok.charged = 200;
  t.steps.push_back(ok);
  t.retries_used = 0;
  t.fallbacks_used = 1;
  t.elapsed_ms = 230;
  t.reserved_total = 1500;
  t.charged_total = 200;
  t.outcome = "served";
  t.served_by = "small/small-a";
  return t;
}

}  // namespace

TEST(DecisionTrace, CompactHeaderListsAttemptsSkipsAndBudgets) {
  EXPECT_EQ(sample().compact(),
            "main/main-a 429 retryable_capacity->fallback; skip claude (budget_exceeded key); small/small-a(probe) ok; "
            "retries=0/1 fallbacks=1/2 ms=230/4000 cost=$0.0000015/$0.5");
}

TEST(DecisionTrace, JsonCarriesEverythingAndExplainReadsIt) {
  const auto j = boost::json::parse(sample().to_json()).as_object();
  EXPECT_EQ(j.at("budget").at("max_request_cost"), "0.5");
  EXPECT_EQ(j.at("budget").at("ignored_overrides").as_array().size(), 1u);
  const auto& steps = j.at("steps").as_array();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].at("class"), "retryable_capacity");
  EXPECT_EQ(steps[0].at("decision"), "fallback");
  EXPECT_TRUE(steps[2].at("class").is_null());
  EXPECT_EQ(steps[2].at("circuit"), "half_open");
  EXPECT_EQ(j.at("consumed").at("fallbacks"), 1);
  EXPECT_EQ(j.at("served_by"), "small/small-a");

  // As `tollgate explain` reads it from the spend log.
  const auto text = pipeline::explain_text(j);
  EXPECT_NE(text.find("1. attempt main/main-a (provider openai, circuit closed): HTTP 429 -> class retryable_capacity, "
                      "action retry_then_fallback, then fallback"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("skipped claude: budget_exceeded key"), std::string::npos) << text;
  EXPECT_NE(text.find("2. attempt small/small-a (provider openai, circuit half_open): served"), std::string::npos) << text;
  EXPECT_NE(text.find("ignored (looser than configured): x-tollgate-max-retries: 5 > 1"), std::string::npos) << text;
  EXPECT_NE(text.find("outcome: served, served by small/small-a"), std::string::npos) << text;
}

TEST(DecisionTrace, NoCostCeilingIsNull) {
  DecisionTrace t;
  EXPECT_TRUE(boost::json::parse(t.to_json()).at("budget").at("max_request_cost").is_null());
  EXPECT_EQ(t.compact(), "retries=0/2 fallbacks=0/5 ms=0/600000 cost=$0");
}

// The text written without a document keeps the shape and member order the spend log always had.
TEST(DecisionTrace, JsonTextIsTheSpendLogsShape) {
  EXPECT_EQ(sample().to_json(),
            R"({"budget":{"max_retries":1,"max_fallbacks":2,"deadline_ms":4000,"min_time_left_ms":0,"max_request_cost":"0.5",)"
            R"("ignored_overrides":["x-tollgate-max-retries: 5 > 1"]},"steps":[{"step":"attempt","group":"main",)"
            R"("deployment":"main-a","provider":"openai","circuit":"closed","status":429,"class":"retryable_capacity",)"
            R"("action":"retry_then_fallback","duration_ms":12,"reserved":"0.000001","charged":"0","decision":"fallback"},)"
            R"({"step":"skip","group":"claude","reason":"budget_exceeded key"},{"step":"attempt","group":"small",)"
            R"("deployment":"small-a","provider":"openai","circuit":"half_open","status":200,"class":null,"duration_ms":0,)"
            R"("reserved":"0.0000005","charged":"0.0000002","decision":"served"}],"consumed":{"retries":0,"fallbacks":1,)"
            R"("elapsed_ms":230,"reserved":"0.0000015","charged":"0.0000002"},"degradation":null,"outcome":"served",)"
            R"("served_by":"small/small-a"})");
  EXPECT_EQ(DecisionTrace{}.to_json(),
            R"({"budget":{"max_retries":2,"max_fallbacks":5,"deadline_ms":600000,"min_time_left_ms":0,"max_request_cost":null,)"
            R"("ignored_overrides":[]},"steps":[],"consumed":{"retries":0,"fallbacks":0,"elapsed_ms":0,"reserved":"0",)"
            R"("charged":"0"},"degradation":null,"outcome":"","served_by":null})");
  DecisionTrace odd = sample();
  odd.steps[0].reason = "quote \" and \n newline";
  odd.continued_by = "d2";
  odd.continuations = 2;
  const auto j = boost::json::parse(odd.to_json()).as_object();
  EXPECT_EQ(j.at("steps").as_array()[0].at("reason"), "quote \" and \n newline");
  EXPECT_EQ(j.at("continued_by"), "d2");
  EXPECT_EQ(j.at("continuations"), 2);
}

TEST(Replay, CompletionBecomesRoleContentFinishAndUsageChunks) {
  const auto c = boost::json::parse(R"({"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m",
    "choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],
    "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})").as_object();
  auto chunks = pipeline::completion_to_chunks(c, true);
  ASSERT_EQ(chunks.size(), 3u);
  auto first = boost::json::parse(chunks[0]).as_object();
  EXPECT_EQ(first.at("object"), "chat.completion.chunk");
  EXPECT_EQ(first.at("id"), "chatcmpl-1");
  EXPECT_EQ(first.at("choices").as_array()[0].at("delta").at("content"), "hello there");
  EXPECT_EQ(first.at("choices").as_array()[0].at("delta").at("role"), "assistant");
  auto second = boost::json::parse(chunks[1]).as_object();
  EXPECT_EQ(second.at("choices").as_array()[0].at("finish_reason"), "stop");
  auto third = boost::json::parse(chunks[2]).as_object();
  EXPECT_TRUE(third.at("choices").as_array().empty());
  EXPECT_EQ(third.at("usage").at("total_tokens"), 5);
  EXPECT_EQ(pipeline::completion_to_chunks(c, false).size(), 2u);
}

TEST(DecisionTrace, CompactWhileRunningAddsTheServingStepAndElapsedSoFar) {
  DecisionTrace t;
  TraceStep serving;
  serving.kind = TraceStep::Kind::attempt;
  serving.group = "g";
  serving.deployment = "g-1";
  EXPECT_EQ(t.compact(42, &serving), "g/g-1 ok; retries=0/2 fallbacks=0/5 ms=42/600000 cost=$0");
  EXPECT_TRUE(t.steps.empty()) << "the trace itself is not changed";
}
