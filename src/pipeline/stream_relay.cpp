#include "pipeline/stream_relay.hpp"

#include <algorithm>

#include "core/json_valid.hpp"
#include "http/sse.hpp"
#include "pipeline/cache_step.hpp"
#include "pipeline/response_facts.hpp"
#include "pipeline/response_headers.hpp"
#include "pipeline/upstream_errors.hpp"
#include "policy/request_budget.hpp"
#include "providers/native.hpp"
#include "providers/prefill.hpp"

namespace tollgate::pipeline {

using Usage = providers::Usage;

namespace {

/// Malformed events a committed stream may skip before it is ended as a cut: a stream that keeps
/// sending unreadable events is not one whose answer can be trusted.
constexpr int kMaxSkippedEvents = 8;

/// Whether an upstream event can be read: its data is JSON, or OpenAI's `[DONE]` sentinel.
bool readable_event(const http::SseEvent& ev) { return ev.data == "[DONE]" || core::is_json_text(ev.data); }

/// Preamble chunks (role, ids, empty deltas) held back before the first output at most; past
/// that the stream is relayed anyway.
constexpr std::size_t kMaxHeldChunks = 64;

/// Which limit the next read of the stream waits for.
enum class Limit { request, first_byte, first_token, idle };

/// The error a stream limit's timeout is reported with (504, type timeout); `setting` names the
/// configuration that set the limit.
core::Error limit_error(Limit which, milliseconds limit, const config::Deployment& d, std::string_view setting) {
  const std::string who = "upstream " + d.model_name + " (" + d.id + ")";
  const std::string why = " ms (" + std::string(setting) + ")";
  auto e = which == Limit::first_token
               ? core::Error::gateway(504, "timeout", who + " sent no content within " + std::to_string(limit.count()) + why,
                                      "first_token_timeout")
               : core::Error::gateway(504, "timeout", who + " stream was silent for " + std::to_string(limit.count()) + why,
                                      "stream_idle_timeout");
  e.origin = core::ErrorOrigin::upstream;
  return e;
}

/// Whether a cut of this stream may be continued elsewhere (issue 13 §3): a chat stream (or a
/// native Anthropic one) of one choice, and some deployment accepts an assistant prefill. A run
/// pinned to one deployment (a health check) has no other target: its cut is its answer.
bool may_continue(const RunState& st, bool native) {
  if (!st.call.stream || st.call.output.choices != 1 || st.call.pin) return false;
  if (native ? st.call.native_api != providers::CallApi::messages : st.call.api != providers::CallApi::chat) return false;
  return std::ranges::any_of(st.cfg.model_list, [](const config::Deployment& x) { return providers::accepts_prefill(x); });
}

/// Whether the delivered text continues the request's final message as a prefill would: always,
/// unless the caller's request ended with an assistant message and the deployment that opened the
/// stream does not read one as a prefill (it answered it as an earlier turn: joining the two would
/// be wrong, so the answer is not continued).
bool prefill_fits(const RunState& st) {
  if (st.client->prefill_in_body || !providers::final_assistant_text(st.call.body)) return true;
  return providers::accepts_prefill(st.deployment(st.client->opened_by()));
}

/// Classes a cut is never continued after: the answer itself is what failed (a content filter),
/// or the request is (the caller's to fix, too long).
bool continues_after(FailureClass c) {
  return c != FailureClass::content_policy && c != FailureClass::caller_fix_required &&
         c != FailureClass::context_overflow;
}

}  // namespace

net::awaitable<AttemptResult> relay_stream(RunState& st, Attempter& at, std::string group, std::size_t dep,
                                           std::unique_ptr<http::UpstreamExchange> ex, core::SteadyTime started,
                                           core::SteadyTime first_byte_deadline) {
  const auto& d = st.deployment(dep);
  // A native attempt (see Attempter::attempt) relays the upstream's own events.
  const auto* native = at.native_adapter(d);
  const auto* adapter = native ? native : providers::adapter_for(d, st.call.api);  // non-null: attempt() checked it
  AttemptResult r;
  auto decoder = adapter ? adapter->stream_decoder(d, st.call.include_usage) : nullptr;
  if (!decoder) {  // an API that never streams (the API layer refuses stream: true for it)
    r.failure = FailureClass::caller_fix_required;
    r.error = core::Error::caller(400, "invalid_request_error",
                                  "'stream' is not supported for " + std::string(providers::api_name(st.call.api)),
                                  "stream");
    ex->cancel();
    st.exchange = nullptr;
    r.evidence = budget::Evidence::unreadable;
    at.record(group, dep, ex->status(), r.failure, started, 0, r.evidence);
    co_return r;
  }
  const auto& provider = *adapter;
  // A continuation writes into the client's open stream: what the cut attempt noted stays.
  const bool continuing = st.client && st.client->continuing();
  if (!continuing) reset_response_facts(st);
  if (!st.client || !st.client->open()) {
    // Until the client's stream opens, it takes the framing of the attempt that opens it.
    if (may_continue(st, native != nullptr)) st.client.emplace(native != nullptr);
    else st.client.reset();
  }
  const std::size_t text_before = st.client ? st.client->text().size() : 0;
  const std::int64_t events_before = st.client ? st.client->text_events() : 0;
  const auto prefill_bytes = continuing ? static_cast<std::int64_t>(st.client->prefill().size()) : 0;
  const auto framing = provider.stream_framing(d);
  auto parser = http::make_frame_parser(framing);
  std::string raw;
  std::vector<std::string> chunks;
  bool committed = false;
  int skipped = 0;  // malformed events skipped after the stream reached the client
  std::optional<core::Error> stream_error;
  FailureClass cut_class = FailureClass::transient_provider_error;  // the class of stream_error's cut
  bool went_silent = false;  // the stream was cut by a time limit (it stalled): not asked again
  // Stream limits (issue 13 §2): the request's budget and the deployment's, the smaller; LiteLLM's
  // stream_timeout / timeout (per call) also bound each read, as httpx's read timeout does there.
  const auto& budget = st.trace.budget;
  // The per-call timeout is also a first-token limit: LiteLLM's stream_timeout is "the maximum
  // time to wait for the first chunk (i.e. first token)"; an early empty chunk does not meet it.
  const auto call_limit = st.cfg.call_timeout_for(d, true);
  const auto own_first = policy::tighter_limit(budget.first_token_timeout, d.first_token_timeout);
  const auto first_token = policy::tighter_limit(own_first, call_limit);
  const auto own_idle = policy::tighter_limit(budget.stream_idle_timeout, d.stream_idle_timeout);
  const auto idle = policy::tighter_limit(own_idle, call_limit);
  // Which setting a limit that fires came from (the error names it).
  auto setting_of = [&](Limit which) -> std::string_view {
    const auto& own = which == Limit::first_token ? own_first : own_idle;
    if (call_limit && (!own || *call_limit < *own)) return "the per-call timeout: stream_timeout / timeout";
    return which == Limit::first_token ? "first_token_timeout_ms" : "stream_idle_timeout_ms";
  };
  // Whether a limit that fired is the caller's own (key or request), not the group's or the
  // deployment's: then it does not count against the deployment's circuit (Attempter::record).
  auto callers = [&](Limit which) {
    if (which == Limit::first_token)
      return st.caller_tightened_first_token && budget.first_token_timeout && *budget.first_token_timeout <= *first_token;
    if (which == Limit::idle)
      return st.caller_tightened_idle && *budget.stream_idle_timeout <= *idle;
    return false;
  };
  // Hold-back (issue 13 §4): output events held before the client sees any; then a failure
  // within them fails the attempt unseen. Bounded by the upstream body limit in bytes.
  const std::int64_t holdback = budget.stream_holdback;
  const auto hold_bytes = static_cast<std::size_t>(st.cfg.tollgate_settings.max_upstream_body_bytes);
  std::int64_t held_output = 0;  // output events among the held chunks
  std::size_t held_bytes = 0;
  std::size_t held_seen = 0;     // held chunks counted so far
  bool any_read = false;            // any byte arrived (the first-byte limit is met)
  bool events_read = false;         // the last read delivered at least one event
  core::SteadyTime last_read = started;  // when the last event arrived (or the attempt started)
  auto next_limit = [&]() -> std::pair<core::SteadyTime, Limit> {
    std::pair<core::SteadyTime, Limit> best{st.deadline, Limit::request};
    auto consider = [&](core::SteadyTime t, Limit l) {
      if (t < best.first) best = {t, l};
    };
    if (!any_read) consider(first_byte_deadline, Limit::first_byte);
    if (!committed && held_output == 0 && first_token) consider(started + *first_token, Limit::first_token);
    if (any_read && idle) consider(last_read + *idle, Limit::idle);
    return best;
  };
  // The response cache keeps a completed stream's answer, put back together from its chunks
  // (chat chunks only: a native stream is not cached).
  if (st.cache_store && !native) st.stream_answer.emplace();
  else st.stream_answer.reset();

  const auto ct = ex->header("content-type");
  if (!parser || !http::content_type_matches(framing, ct)) {
    r.failure = at.classify_event(policy::TransportEvent::malformed_body, ex->status());
    r.error = malformed_error(d, "answered a stream request without an event stream (content-type '" +
                                     std::string(ct) + "', expected " + std::string(http::media_type(framing)) + ")");
    st.exchange = nullptr;
    r.evidence = budget::Evidence::unreadable;  // answered 2xx, but no usable stream
        at.record(group, dep, ex->status(), r.failure, started, 0, r.evidence);
    co_return r;
  }

  for (;;) {
    // The idle clock restarts once the last events were handled (relayed to the client): the
    // time a slow client takes to read is not the upstream's silence, nor are comment lines events.
    if (events_read) last_read = st.svc->clock->now();
    events_read = false;
    raw.clear();
    const auto [until, limit] = next_limit();
    auto got = co_await ex->read_some(raw, until);
    if (!got) {
      if (st.gone) break;
      const bool timed_out = got.error().kind == http::TransportError::Kind::timeout;
      const bool stream_limit = timed_out && (limit == Limit::first_token || limit == Limit::idle);
      const milliseconds limit_ms = limit == Limit::first_token ? *first_token : idle.value_or(milliseconds{0});
      if (stream_limit) st.attempt_cut_by_caller_limit = callers(limit);
      if (!committed) {
        policy::Outcome oc;
        oc.transport = transport_event(got.error());
        r.failure = st.table->classify(oc);
        r.error = stream_limit ? limit_error(limit, limit_ms, d, setting_of(limit)) : transport_error(got.error(), d);
        // Nothing of the answer came: the next attempt goes to another deployment (attempt_loop).
        r.silent = timed_out && limit != Limit::request;
        ex->cancel();
        st.exchange = nullptr;
        r.evidence = budget::Evidence::unreadable;  // answered 2xx, but no usable stream
        at.record(group, dep, ex->status(), r.failure, started, 0, r.evidence);
        co_return r;
      }
      {
        policy::Outcome oc;
        oc.transport = transport_event(got.error());
        cut_class = st.table->classify(oc);
      }
      if (st.cut) {
        stream_error = shutdown_error();
      } else if (stream_limit) {
        stream_error = limit_error(limit, limit_ms, d, setting_of(limit));
        went_silent = true;
      } else {
        stream_error = transport_error(got.error(), d);
        stream_error->message = "upstream stream broke: " + got.error().message;
      }
      break;
    }
    if (*got > 0) any_read = true;
    const bool at_end = *got == 0;
    int malformed = 0;  // unreadable events of this read, never relayed (issue 13 §1)
    const bool framed = parser->feed(raw, [&](const http::SseEvent& ev) {
      events_read = true;
      if (!readable_event(ev)) {
        ++malformed;
        return;
      }
      decoder->on_event(ev, chunks);
    });
    // A clean end before the terminal event: whole when the finish and the usage came (the
    // decoder then adds what the terminal event would have, e.g. a native message_stop).
    if (framed && at_end && !decoder->finished() && !decoder->error()) decoder->accept_end_without_terminator(chunks);
    if (framed && malformed > 0) {
      if (!committed) {
        // Nothing reached the client yet: the attempt failed, and another may answer unseen.
        r.failure = at.classify_event(policy::TransportEvent::malformed_body, ex->status());
        r.error = malformed_error(d, "sent an event that is not JSON");
        ex->cancel();
        st.exchange = nullptr;
        r.evidence = budget::Evidence::unreadable;
        at.record(group, dep, ex->status(), r.failure, started, 0, r.evidence);
        co_return r;
      }
      skipped += malformed;
      if (skipped > kMaxSkippedEvents) {
        stream_error = malformed_error(d, "sent " + std::to_string(skipped) + " events that are not JSON");
        cut_class = at.classify_event(policy::TransportEvent::malformed_body, ex->status());
        break;
      }
    }
    if (!framed) {
      // An event line beyond the parser's limit: garbage, not an LLM stream.
      if (!committed) {
        r.failure = at.classify_event(policy::TransportEvent::malformed_body, ex->status());
        r.error = malformed_error(d, "sent a malformed event stream");
        ex->cancel();
        st.exchange = nullptr;
        r.evidence = budget::Evidence::unreadable;  // answered 2xx, but no usable stream
        at.record(group, dep, ex->status(), r.failure, started, 0, r.evidence);
        co_return r;
      }
      stream_error = malformed_error(d, "sent a malformed event stream");
      cut_class = at.classify_event(policy::TransportEvent::malformed_body, ex->status());
      break;
    }
    if (auto err = decoder->error(); err && !committed) {
      r.failure = st.table->classify(*err);
      r.error.status = err->status;
      r.error.type = err->error_type.empty() ? "api_error" : err->error_type;
      r.error.code = err->error_code;
      r.error.message = err->message;
      r.error.origin = core::ErrorOrigin::upstream;
      if (err->status == 200) r.error.status = 400;  // a 2xx refusal (Gemini's blocked prompt): the caller's 400
      st.exchange = nullptr;
      // Answered 2xx, but no usable stream: charged the reservation, unless the decoder read a
      // final usage with the refusal (a blocked prompt's tokens): that is the bill.
      r.usage = decoder->usage();
      r.evidence = decoder->usage_final() ? budget::Evidence::answered : budget::Evidence::unreadable;
        at.record(group, dep, ex->status(), r.failure, started, 0, r.evidence);
      co_return r;
    }
    // Preamble chunks wait for the first output (or the stream's end): until then nothing has
    // reached the client, and a limit or failure can still move the request elsewhere unseen.
    if (!committed)
      for (; held_seen < chunks.size(); ++held_seen) {
        if (decoder->carries_output(chunks[held_seen])) ++held_output;
        held_bytes += chunks[held_seen].size();
      }
    const bool held_enough = holdback > 0 ? held_output >= holdback || held_bytes > hold_bytes
                                          : held_output > 0 || chunks.size() > kMaxHeldChunks;
    const bool release = !chunks.empty() && !committed &&
                         (decoder->finished() || held_enough);
    if (release) {
      if (!continuing) {
        auto headers = response_headers(st, dep);
        // What a continuation changes is known at the end: announced as trailers (issue 13 §3).
        if (st.client) headers.emplace_back("trailer", "x-tollgate-continued-by, x-tollgate-continuations");
        if (!co_await st.sink.begin_stream(headers)) {
          st.gone = true;  // the client cannot be written to: stop, do not retry elsewhere
          break;
        }
        st.first_byte_ms = wall_ms();
        if (st.client) st.client->set_open(dep);
      }
      committed = true;
    }
    if (committed && !chunks.empty()) {
      // Noted for a continuation (and, in one, rewritten into the client's stream).
      if (st.client) st.client->relay_all(chunks);
      for (const auto& c : chunks) {
        note_stream_chunk(st, c);
        if (st.stream_answer) st.stream_answer->add(c);
      }
      const auto usage_so_far = decoder->usage();
      if (!chunks.empty() && !co_await st.sink.stream_chunks(chunks, usage_so_far)) {
        st.gone = true;
        break;
      }
      chunks.clear();
    }
    if (auto err = decoder->error(); err && committed) {
      stream_error = core::Error::gateway(err->status ? err->status : 500, err->error_type.empty() ? "api_error" : err->error_type,
                                          err->message.empty() ? "upstream reported an error mid-stream" : err->message,
                                          err->error_code);
      cut_class = st.table->classify(*err);
      break;
    }
    if (decoder->finished() || at_end) {
      if (!decoder->finished()) {
        if (!committed) {
          r.failure = at.classify_event(policy::TransportEvent::malformed_body, ex->status());
          r.error = malformed_error(d, "ended its stream before any output");
          st.exchange = nullptr;
          r.evidence = budget::Evidence::unreadable;  // answered 2xx, but no usable stream
        at.record(group, dep, ex->status(), r.failure, started, 0, r.evidence);
          co_return r;
        }
        stream_error = core::Error::gateway(502, "api_error", "upstream stream ended before completion", "stream_truncated");
        cut_class = at.classify_event(policy::TransportEvent::reset_after_send, ex->status());
      }
      break;
    }
  }
  if (st.gone) {
    ex->cancel();
  } else {
    // Read to the end so the connection can be reused ([DONE] may precede the last chunk).
    if (!stream_error && !ex->done()) {
      std::string rest;
      auto more = co_await ex->read_some(rest, next_limit().first);
      (void)more;
    }
    ex->finish();
  }
  st.exchange = nullptr;
  auto u = decoder->usage();
  at.count_search_calls(dep, u);
  r.usage = u;
  // The usage is the bill only when the stream ran to its end; an interrupted stream is
  // settled conservatively (its partial usage undercounts what the provider bills).
  const bool complete = decoder->finished() && !stream_error && !st.gone && decoder->usage_final();
  r.evidence = complete ? budget::Evidence::answered : st.gone ? budget::Evidence::no_answer : budget::Evidence::unreadable;
  if (!committed) {
    // Nothing reached the client: the client left, or the stream failed before its first event.
    r.ok = false;
    r.failure = at.classify_event(policy::TransportEvent::reset_after_send, ex->status());
    r.error = malformed_error(d, "stream failed before its first event");
    r.evidence = budget::Evidence::unreadable;  // answered 2xx, but no usable stream
        at.record(group, dep, ex->status(), r.failure, started, 0, r.evidence);
    co_return r;
  }
  if (stream_error && !st.gone && !st.cut && st.client && st.client->continuable() && continues_after(cut_class) &&
      prefill_fits(st)) {
    // Cut after text reached the client (issue 13 §3): the stream stays open and the walk asks
    // the next target to continue the answer from that text. This attempt is settled by its
    // evidence (the cut left its bill unknown: its reservation, unless the upstream's partial
    // usage said more was generated).
    const auto added = static_cast<std::int64_t>(st.client->text().size() - text_before);
    st.client->delivered_tokens +=
        std::max({u.completion_tokens, st.client->text_events() - events_before, (added + 3) / 4});
    st.client->cut(*stream_error);
    st.stream_answer.reset();
    r.ok = false;
    r.cut = true;
    r.silent = went_silent;  // a stalled deployment is not asked to continue its own answer
    r.failure = cut_class;
    r.error = *stream_error;
    r.evidence = budget::Evidence::unreadable;
    at.record(group, dep, ex->status(), r.failure, started, 0, r.evidence);
    if (!st.trace.steps.empty()) {
      st.trace.steps.back().continuation = "cut";
      if (skipped > 0) st.trace.steps.back().skipped_events = skipped;
    }
    co_return r;
  }
  r.ok = true;  // once committed, the attempt is the answer, complete or not
  if (continuing) {
    st.client->served_by(d.id);
    st.trace.continued_by = d.id;
    st.trace.continuations = st.client->continued;
    st.sink.set_trailers({{"x-tollgate-continued-by", d.id}, {"x-tollgate-continuations", std::to_string(st.client->continued)}});
  }
  // A stream that skipped a malformed event may lack a piece of its answer: served, never cached;
  // nor is a continued one (its chunks are the continuation's only).
  if (complete && st.stream_answer && skipped == 0 && !continuing)
    if (auto whole = st.stream_answer->completion()) keep_for_cache(st, json::serialize(*whole));
  st.stream_answer.reset();
  at.record(group, dep, ex->status(), std::nullopt, started, u.prompt_tokens + u.billed_output_tokens(), r.evidence);
  if (skipped > 0 && !st.trace.steps.empty()) st.trace.steps.back().skipped_events = skipped;
  if (continuing && !st.trace.steps.empty()) {
    st.trace.steps.back().continuation = "continued";
    st.trace.steps.back().prefill_bytes = prefill_bytes;
  }
  if (stream_error) st.stream_status = decoder->error() ? "failure" : "unknown_outcome";
  else if (!complete) st.stream_status = "unknown_outcome";
  if (!st.gone) co_await st.sink.end_stream(stream_error);
  co_return r;
}

}  // namespace tollgate::pipeline
