#include "pipeline/stream_relay.hpp"

#include "http/sse.hpp"
#include "pipeline/cache_step.hpp"
#include "pipeline/response_facts.hpp"
#include "pipeline/response_headers.hpp"
#include "pipeline/upstream_errors.hpp"
#include "providers/native.hpp"

namespace tollgate::pipeline {

using Usage = providers::Usage;

net::awaitable<AttemptResult> relay_stream(RunState& st, Attempter& at, std::string group, std::size_t dep,
                                           std::unique_ptr<http::UpstreamExchange> ex, core::SteadyTime started,
                                           core::SteadyTime first_byte_deadline) {
  const auto& d = st.deployment(dep);
  // A native attempt (see Attempter::attempt) relays the upstream's own events.
  const auto* native = st.call.native_body ? providers::native_adapter_for(d, st.call.native_api) : nullptr;
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
  reset_response_facts(st);
  const auto framing = provider.stream_framing(d);
  auto parser = http::make_frame_parser(framing);
  std::string raw;
  std::vector<std::string> chunks;
  bool committed = false;
  std::optional<core::Error> stream_error;
  auto dl = first_byte_deadline;
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
    raw.clear();
    auto got = co_await ex->read_some(raw, dl);
    if (!got) {
      if (st.gone) break;
      if (!committed) {
        policy::Outcome oc;
        oc.transport = transport_event(got.error());
        r.failure = st.table->classify(oc);
        r.error = transport_error(got.error(), d);
        st.exchange = nullptr;
        r.evidence = budget::Evidence::unreadable;  // answered 2xx, but no usable stream
        at.record(group, dep, ex->status(), r.failure, started, 0, r.evidence);
        co_return r;
      }
      if (st.cut) {
        stream_error = shutdown_error();
      } else {
        stream_error = transport_error(got.error(), d);
        stream_error->message = "upstream stream broke: " + got.error().message;
      }
      break;
    }
    const bool at_end = *got == 0;
    if (!parser->feed(raw, [&](const http::SseEvent& ev) { decoder->on_event(ev, chunks); })) {
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
    if (!chunks.empty() && !committed) {
      auto headers = response_headers(st, dep);
      if (!co_await st.sink.begin_stream(headers)) {
        st.gone = true;  // the client cannot be written to: stop, do not retry elsewhere
        break;
      }
      committed = true;
      st.first_byte_ms = wall_ms();
      dl = st.deadline;
    }
    if (committed && !chunks.empty()) {
      for (const auto& c : chunks) {
        note_stream_chunk(st, c);
        if (st.stream_answer) st.stream_answer->add(c);
      }
      const auto usage_so_far = decoder->usage();
      if (!co_await st.sink.stream_chunks(chunks, usage_so_far)) {
        st.gone = true;
        break;
      }
      chunks.clear();
    }
    if (auto err = decoder->error(); err && committed) {
      stream_error = core::Error::gateway(err->status ? err->status : 500, err->error_type.empty() ? "api_error" : err->error_type,
                                          err->message.empty() ? "upstream reported an error mid-stream" : err->message,
                                          err->error_code);
      break;
    }
    if (decoder->finished() || at_end) {
      if (!decoder->finished() && !decoder->accept_end_without_terminator()) {
        if (!committed) {
          r.failure = at.classify_event(policy::TransportEvent::malformed_body, ex->status());
          r.error = malformed_error(d, "ended its stream before sending any event");
          st.exchange = nullptr;
          r.evidence = budget::Evidence::unreadable;  // answered 2xx, but no usable stream
        at.record(group, dep, ex->status(), r.failure, started, 0, r.evidence);
          co_return r;
        }
        stream_error = core::Error::gateway(502, "api_error", "upstream stream ended before completion", "stream_truncated");
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
      auto more = co_await ex->read_some(rest, dl);
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
  r.ok = true;  // once committed, the attempt is the answer, complete or not
  if (complete && st.stream_answer)
    if (auto whole = st.stream_answer->completion()) keep_for_cache(st, json::serialize(*whole));
  st.stream_answer.reset();
  at.record(group, dep, ex->status(), std::nullopt, started, u.prompt_tokens + u.billed_output_tokens(), r.evidence);
  if (stream_error) st.stream_status = decoder->error() ? "failure" : "unknown_outcome";
  else if (!complete) st.stream_status = "unknown_outcome";
  if (!st.gone) co_await st.sink.end_stream(stream_error);
  co_return r;
}

}  // namespace tollgate::pipeline
