#include "pipeline/trace.hpp"

#include <charconv>

#include <boost/json.hpp>

#include "core/json_out.hpp"

namespace tollgate::pipeline {
namespace json = boost::json;

namespace {

std::string_view kind_name(TraceStep::Kind k) {
  switch (k) {
    case TraceStep::Kind::attempt: return "attempt";
    case TraceStep::Kind::skip: return "skip";
    case TraceStep::Kind::fallback: return "fallback";
    case TraceStep::Kind::degrade: return "degrade";
    case TraceStep::Kind::stop: return "stop";
  }
  return "attempt";
}

std::string str(const json::object& o, std::string_view k) {
  if (auto* v = o.if_contains(k); v && v->is_string()) return std::string(v->as_string());
  return {};
}

std::int64_t num(const json::object& o, std::string_view k) {
  if (auto* v = o.if_contains(k); v && v->is_int64()) return v->as_int64();
  if (auto* v = o.if_contains(k); v && v->is_uint64()) return static_cast<std::int64_t>(v->as_uint64());
  return 0;
}

std::string money_text(const json::object& o, std::string_view k) {
  if (auto* v = o.if_contains(k); v && v->is_string()) return "$" + std::string(v->as_string());
  return "none";
}

}  // namespace

std::string DecisionTrace::to_json() const {
  std::string out;
  out.reserve(512 + 256 * steps.size());
  core::JsonOut j(out);
  auto text_or_null = [&j](const std::string& s) -> core::JsonOut& { return s.empty() ? j.null() : j.value(s); };
  j.begin_object().key("budget").begin_object();
  j.key("max_retries").value(budget.max_retries).key("max_fallbacks").value(budget.max_fallbacks);
  j.key("deadline_ms").value(static_cast<std::int64_t>(budget.deadline.count()));
  j.key("min_time_left_ms").value(static_cast<std::int64_t>(budget.min_time_left.count()));
  j.key("max_request_cost");
  if (budget.max_request_cost >= budget::kMaxNanos) j.null();
  else j.value(budget::format_dollars(budget.max_request_cost));
  j.key("ignored_overrides").begin_array();
  for (const auto& i : ignored) j.value(i);
  j.end_array().end_object();

  j.key("steps").begin_array();
  for (const auto& s : steps) {
    j.begin_object().key("step").value(kind_name(s.kind));
    if (!s.group.empty()) j.key("group").value(s.group);
    if (s.kind == TraceStep::Kind::attempt) {
      j.key("deployment").value(s.deployment).key("provider").value(s.provider).key("circuit").value(s.circuit);
      j.key("status").value(s.status).key("class");
      text_or_null(s.failure_class);
      if (!s.action.empty()) j.key("action").value(s.action);
      j.key("duration_ms").value(static_cast<std::int64_t>(s.duration_ms));
      j.key("reserved").value(budget::format_dollars(s.reserved));
      j.key("charged").value(budget::format_dollars(s.charged));
      if (!s.evidence.empty()) j.key("evidence").value(s.evidence);
      if (s.output_bound > 0) j.key("max_tokens").value(static_cast<std::int64_t>(s.output_bound));
      if (!s.output_capped_by.empty()) j.key("output_capped_by").value(s.output_capped_by);
      if (s.skipped_events > 0) j.key("skipped_events").value(static_cast<std::int64_t>(s.skipped_events));
      if (!s.continuation.empty()) j.key("continuation").value(s.continuation);
      if (s.prefill_bytes > 0) j.key("prefill_bytes").value(static_cast<std::int64_t>(s.prefill_bytes));
    }
    if (!s.decision.empty()) j.key("decision").value(s.decision);
    if (!s.reason.empty()) j.key("reason").value(s.reason);
    j.end_object();
  }
  j.end_array();
  j.key("consumed").begin_object().key("retries").value(retries_used).key("fallbacks").value(fallbacks_used);
  j.key("elapsed_ms").value(static_cast<std::int64_t>(elapsed_ms));
  j.key("reserved").value(budget::format_dollars(reserved_total));
  j.key("charged").value(budget::format_dollars(charged_total)).end_object();
  j.key("degradation");
  text_or_null(degradation);
  j.key("outcome").value(outcome).key("served_by");
  text_or_null(served_by);
  if (!continued_by.empty()) j.key("continued_by").value(continued_by).key("continuations").value(continuations);
  j.end_object();
  return out;
}

std::string DecisionTrace::compact(std::int64_t elapsed, const TraceStep* serving) const {
  std::string out;
  out.reserve(160 + 64 * steps.size());
  auto sep = [&out] {
    if (!out.empty()) out += "; ";
  };
  auto number = [&out](std::int64_t n) {
    char buf[24];
    out.append(buf, std::to_chars(buf, buf + sizeof buf, n).ptr);
  };
  auto add = [&](const TraceStep& s) {
    switch (s.kind) {
      case TraceStep::Kind::attempt:
        sep();
        out.append(s.group).append("/").append(s.deployment);
        if (s.circuit == "half_open") out += "(probe)";
        if (s.failure_class.empty()) {
          out += " ok";
        } else {
          out += ' ';
          if (s.status) number(s.status);
          else out += '-';
          out.append(" ").append(s.failure_class).append("->").append(s.decision);
        }
        break;
      case TraceStep::Kind::skip:
        sep();
        out.append("skip ").append(s.group).append(" (").append(s.reason).append(")");
        break;
      case TraceStep::Kind::degrade:
        sep();
        out.append("degrade ").append(s.reason);
        break;
      case TraceStep::Kind::stop:
        sep();
        out.append("stop (").append(s.reason).append(")");
        break;
      case TraceStep::Kind::fallback: break;  // visible from the next attempt's group
    }
  };
  for (const auto& s : steps) add(s);
  if (serving) add(*serving);
  sep();
  out += "retries=";
  number(retries_used);
  out += '/';
  number(budget.max_retries);
  out += " fallbacks=";
  number(fallbacks_used);
  out += '/';
  number(budget.max_fallbacks);
  out += " ms=";
  number(elapsed);
  out += '/';
  number(budget.deadline.count());
  out.append(" cost=$").append(budget::format_dollars(reserved_total));
  if (budget.max_request_cost < budget::kMaxNanos) out.append("/$").append(budget::format_dollars(budget.max_request_cost));
  return out;
}

std::string explain_text(const json::object& t) {
  std::string out;
  const json::object empty;
  const auto* bv = t.if_contains("budget");
  const json::object& b = bv && bv->is_object() ? bv->as_object() : empty;
  out += "budgets: retries " + std::to_string(num(b, "max_retries")) + ", fallbacks " +
         std::to_string(num(b, "max_fallbacks")) + ", deadline " + std::to_string(num(b, "deadline_ms")) +
         " ms (attempts need " + std::to_string(num(b, "min_time_left_ms")) + " ms left), cost ceiling " +
         money_text(b, "max_request_cost") + "\n";
  if (auto* ig = b.if_contains("ignored_overrides"); ig && ig->is_array())
    for (const auto& i : ig->as_array())
      if (i.is_string()) out += "  ignored (looser than configured): " + std::string(i.as_string()) + "\n";
  int n = 0;
  if (auto* sv = t.if_contains("steps"); sv && sv->is_array()) {
    for (const auto& v : sv->as_array()) {
      if (!v.is_object()) continue;
      const auto& s = v.as_object();
      const auto kind = str(s, "step");
      if (kind == "attempt") {
        ++n;
        out += std::to_string(n) + ". attempt " + str(s, "group") + "/" + str(s, "deployment") + " (provider " +
               str(s, "provider") + ", circuit " + str(s, "circuit") + ")";
        const auto cls = str(s, "class");
        if (cls.empty()) {
          out += ": served";
        } else {
          const auto status = num(s, "status");
          out += ": " + (status ? "HTTP " + std::to_string(status) : std::string("no response")) + " -> class " + cls +
                 ", action " + str(s, "action") + ", then " + str(s, "decision");
        }
        if (str(s, "continuation") == "cut") out += " (stream cut after text reached the client: continued elsewhere if a target accepts a prefill)";
        if (str(s, "continuation") == "continued")
          out += " (continued the cut answer from " + std::to_string(num(s, "prefill_bytes")) + " bytes of prefill)";
        out += " [" + std::to_string(num(s, "duration_ms")) + " ms, reserved $" + str(s, "reserved") + ", charged $" +
               str(s, "charged") + "]\n";
      } else if (kind == "skip") {
        out += "   skipped " + str(s, "group") + ": " + str(s, "reason") + "\n";
      } else if (kind == "fallback") {
        out += "   fallback to " + str(s, "group") + (str(s, "reason").empty() ? "" : " (" + str(s, "reason") + ")") + "\n";
      } else if (kind == "degrade") {
        out += "   degraded: " + str(s, "reason") + "\n";
      } else if (kind == "stop") {
        out += "   stopped: " + str(s, "reason") + "\n";
      }
    }
  }
  const auto* cv = t.if_contains("consumed");
  const json::object& c = cv && cv->is_object() ? cv->as_object() : empty;
  out += "consumed: " + std::to_string(num(c, "retries")) + " retries, " + std::to_string(num(c, "fallbacks")) +
         " fallbacks, " + std::to_string(num(c, "elapsed_ms")) + " ms, reserved $" + str(c, "reserved") +
         ", charged $" + str(c, "charged") + "\n";
  out += "outcome: " + str(t, "outcome");
  if (auto d = str(t, "degradation"); !d.empty()) out += " (degradation: " + d + ")";
  if (auto s = str(t, "served_by"); !s.empty()) out += ", served by " + s;
  if (auto s = str(t, "continued_by"); !s.empty()) out += ", answer continued by " + s;
  out += "\n";
  return out;
}

}  // namespace tollgate::pipeline
