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

/// One stream relay's state and its steps between the coroutine's waits (relay_stream): the
/// coroutine's frame lives as long as the stream, and GCC keeps every local and temporary of a
/// coroutine in it, so the work is done here and the frame holds this object.
class StreamRelay {
 public:
  /// What the relay does after a step.
  enum class Flow { go_on, leave, fail };

  StreamRelay(RunState& st, Attempter& at, std::string group, std::size_t dep,
              std::unique_ptr<http::UpstreamExchange> exchange, core::SteadyTime started,
              core::SteadyTime first_byte_deadline, AttemptResult& r)
      : ex(std::move(exchange)),
        st_(st),
        at_(at),
        group_(std::move(group)),
        dep_(dep),
        d_(st.deployment(dep)),
        started_(started),
        first_byte_deadline_(first_byte_deadline),
        last_read_(started),
        r_(r) {}

  /// The decoder, the client stream's framing and the stream limits. False when the attempt
  /// ends here (`r` says why): no decoder for the API, or the upstream's answer is no event stream.
  bool open() {
    // A native attempt (see Attempter::attempt) relays the upstream's own events.
    const auto* native = at_.native_adapter(d_);
    native_ = native != nullptr;
    const auto* adapter = native ? native : providers::adapter_for(d_, st_.call.api);  // non-null: attempt() checked it
    decoder_ = adapter ? adapter->stream_decoder(d_, st_.call.include_usage) : nullptr;
    if (!decoder_) {  // an API that never streams (the API layer refuses stream: true for it)
      r_.failure = FailureClass::caller_fix_required;
      r_.error = core::Error::caller(400, "invalid_request_error",
                                     "'stream' is not supported for " + std::string(providers::api_name(st_.call.api)),
                                     "stream");
      ex->cancel();
      st_.exchange = nullptr;
      r_.evidence = budget::Evidence::unreadable;
      at_.record(group_, dep_, ex->status(), r_.failure, started_, 0, r_.evidence);
      return false;
    }
    const auto& provider = *adapter;
    // A continuation writes into the client's open stream: what the cut attempt noted stays.
    continuing_ = st_.client && st_.client->continuing();
    if (!continuing_) reset_response_facts(st_);
    if (!st_.client || !st_.client->open()) {
      // Until the client's stream opens, it takes the framing of the attempt that opens it.
      if (may_continue(st_, native_)) st_.client.emplace(native_);
      else st_.client.reset();
    }
    text_before_ = st_.client ? st_.client->text().size() : 0;
    events_before_ = st_.client ? st_.client->text_events() : 0;
    prefill_bytes_ = continuing_ ? static_cast<std::int64_t>(st_.client->prefill().size()) : 0;
    const auto framing = provider.stream_framing(d_);
    parser_ = http::make_frame_parser(framing);
    // Stream limits (issue 13 §2): the request's budget and the deployment's, the smaller; LiteLLM's
    // stream_timeout / timeout (per call) also bound each read, as httpx's read timeout does there.
    const auto& budget = st_.trace.budget;
    // The per-call timeout is also a first-token limit: LiteLLM's stream_timeout is "the maximum
    // time to wait for the first chunk (i.e. first token)"; an early empty chunk does not meet it.
    call_limit_ = st_.cfg.call_timeout_for(d_, true);
    own_first_ = policy::tighter_limit(budget.first_token_timeout, d_.first_token_timeout);
    first_token_ = policy::tighter_limit(own_first_, call_limit_);
    own_idle_ = policy::tighter_limit(budget.stream_idle_timeout, d_.stream_idle_timeout);
    idle_ = policy::tighter_limit(own_idle_, call_limit_);
    // Hold-back (issue 13 §4): output events held before the client sees any; then a failure
    // within them fails the attempt unseen. Bounded by the upstream body limit in bytes.
    holdback_ = budget.stream_holdback;
    hold_bytes_ = static_cast<std::size_t>(st_.cfg.tollgate_settings.max_upstream_body_bytes);
    // The response cache keeps a completed stream's answer, put back together from its chunks
    // (chat chunks only: a native stream is not cached).
    if (st_.cache_store && !native_) st_.stream_answer.emplace();
    else st_.stream_answer.reset();
    const auto ct = ex->header("content-type");
    if (!parser_ || !http::content_type_matches(framing, ct)) {
      fail(at_.classify_event(policy::TransportEvent::malformed_body, ex->status()),
           malformed_error(d_, "answered a stream request without an event stream (content-type '" + std::string(ct) +
                                   "', expected " + std::string(http::media_type(framing)) + ")"),
           false);
      return false;
    }
    return true;
  }

  /// Before a read: the idle clock restarts once the last events were handled (relayed to the
  /// client): the time a slow client takes to read is not the upstream's silence, nor are comment
  /// lines events. Returns when the read must end.
  core::SteadyTime next_read() {
    if (events_read_) last_read_ = st_.svc->clock->now();
    events_read_ = false;
    raw.clear();
    const auto [until, limit] = next_limit();
    limit_ = limit;
    return until;
  }

  /// A read's outcome: a failure or a cut, then the events decoded into `chunks`, and whether
  /// they are released to the client now (release()).
  Flow on_read(const std::expected<std::size_t, http::TransportError>& got) {
    release_ = false;
    if (!got) return on_read_error(got.error());
    if (*got > 0) any_read_ = true;
    at_end_ = *got == 0;
    int malformed = 0;  // unreadable events of this read, never relayed (issue 13 §1)
    const bool framed = parser_->feed(raw, [&](const http::SseEvent& ev) {
      events_read_ = true;
      if (!readable_event(ev)) {
        ++malformed;
        return;
      }
      decoder_->on_event(ev, chunks);
    });
    // A clean end before the terminal event: whole when the finish and the usage came (the
    // decoder then adds what the terminal event would have, e.g. a native message_stop).
    if (framed && at_end_ && !decoder_->finished() && !decoder_->error()) decoder_->accept_end_without_terminator(chunks);
    if (framed && malformed > 0) {
      if (!committed_) {
        // Nothing reached the client yet: the attempt failed, and another may answer unseen.
        fail(at_.classify_event(policy::TransportEvent::malformed_body, ex->status()),
             malformed_error(d_, "sent an event that is not JSON"), true);
        return Flow::fail;
      }
      skipped_ += malformed;
      if (skipped_ > kMaxSkippedEvents) {
        stream_error = malformed_error(d_, "sent " + std::to_string(skipped_) + " events that are not JSON");
        cut_class_ = at_.classify_event(policy::TransportEvent::malformed_body, ex->status());
        return Flow::leave;
      }
    }
    if (!framed) {
      // An event line beyond the parser's limit: garbage, not an LLM stream.
      if (!committed_) {
        fail(at_.classify_event(policy::TransportEvent::malformed_body, ex->status()),
             malformed_error(d_, "sent a malformed event stream"), true);
        return Flow::fail;
      }
      stream_error = malformed_error(d_, "sent a malformed event stream");
      cut_class_ = at_.classify_event(policy::TransportEvent::malformed_body, ex->status());
      return Flow::leave;
    }
    if (auto err = decoder_->error(); err && !committed_) {
      r_.failure = st_.table->classify(*err);
      r_.error.status = err->status;
      r_.error.type = err->error_type.empty() ? "api_error" : err->error_type;
      r_.error.code = err->error_code;
      r_.error.message = err->message;
      r_.error.origin = core::ErrorOrigin::upstream;
      if (err->status == 200) r_.error.status = 400;  // a 2xx refusal (Gemini's blocked prompt): the caller's 400
      st_.exchange = nullptr;
      // Answered 2xx, but no usable stream: charged the reservation, unless the decoder read a
      // final usage with the refusal (a blocked prompt's tokens): that is the bill.
      r_.usage = decoder_->usage();
      r_.evidence = decoder_->usage_final() ? budget::Evidence::answered : budget::Evidence::unreadable;
      at_.record(group_, dep_, ex->status(), r_.failure, started_, 0, r_.evidence);
      return Flow::fail;
    }
    // Preamble chunks wait for the first output (or the stream's end): until then nothing has
    // reached the client, and a limit or failure can still move the request elsewhere unseen.
    if (!committed_)
      for (; held_seen_ < chunks.size(); ++held_seen_) {
        if (decoder_->carries_output(chunks[held_seen_])) ++held_output_;
        held_bytes_ += chunks[held_seen_].size();
      }
    const bool held_enough = holdback_ > 0 ? held_output_ >= holdback_ || held_bytes_ > hold_bytes_
                                           : held_output_ > 0 || chunks.size() > kMaxHeldChunks;
    release_ = !chunks.empty() && !committed_ && (decoder_->finished() || held_enough);
    return Flow::go_on;
  }

  /// The held chunks go to the client now (the stream opens first, unless it is continued).
  bool release() const { return release_; }
  bool continuing() const { return continuing_; }

  /// The client stream's response headers: what a continuation changes is known at the end,
  /// announced as trailers (issue 13 §3).
  Headers stream_headers() const {
    auto headers = response_headers(st_, dep_);
    if (st_.client) headers.emplace_back("trailer", "x-tollgate-continued-by, x-tollgate-continuations");
    return headers;
  }

  /// The client's stream opened.
  void opened() {
    st_.first_byte_ms = wall_ms();
    if (st_.client) st_.client->set_open(dep_);
  }

  void commit() { committed_ = true; }

  /// Committed chunks to send: noted for a continuation (and, in one, rewritten into the
  /// client's stream: it may drop them all), the response facts and the cached answer. False
  /// when none is left to send.
  bool take_chunks() {
    if (!committed_ || chunks.empty()) return false;
    if (st_.client) st_.client->relay_all(chunks);
    for (const auto& c : chunks) {
      note_stream_chunk(st_, c);
      if (st_.stream_answer) st_.stream_answer->add(c);
    }
    return !chunks.empty();
  }
  Usage usage_so_far() const { return decoder_->usage(); }

  /// After the chunks were sent: an error the upstream reported mid-stream, the stream's end.
  Flow after_send() {
    if (auto err = decoder_->error(); err && committed_) {
      stream_error = core::Error::gateway(err->status ? err->status : 500, err->error_type.empty() ? "api_error" : err->error_type,
                                          err->message.empty() ? "upstream reported an error mid-stream" : err->message,
                                          err->error_code);
      cut_class_ = st_.table->classify(*err);
      return Flow::leave;
    }
    if (decoder_->finished() || at_end_) {
      if (!decoder_->finished()) {
        if (!committed_) {
          fail(at_.classify_event(policy::TransportEvent::malformed_body, ex->status()),
               malformed_error(d_, "ended its stream before any output"), false);
          return Flow::fail;
        }
        stream_error = core::Error::gateway(502, "api_error", "upstream stream ended before completion", "stream_truncated");
        cut_class_ = at_.classify_event(policy::TransportEvent::reset_after_send, ex->status());
      }
      return Flow::leave;
    }
    return Flow::go_on;
  }

  /// The read of what follows the last event ([DONE] may precede the last chunk), so that the
  /// connection can be reused: when the stream ended whole and the upstream has more.
  bool wants_rest() const { return !stream_error && !ex->done(); }
  core::SteadyTime rest_deadline() { return next_limit().first; }

  /// The attempt's result once the stream ended: its usage and evidence, a cut left open for the
  /// walk to continue, or the answer. True when the client's stream is to be ended now
  /// (end_stream); false when `r` is the attempt's failure or a cut.
  bool settle() {
    st_.exchange = nullptr;
    auto u = decoder_->usage();
    at_.count_search_calls(dep_, u);
    r_.usage = u;
    // The usage is the bill only when the stream ran to its end; an interrupted stream is
    // settled conservatively (its partial usage undercounts what the provider bills).
    const bool complete = decoder_->finished() && !stream_error && !st_.gone && decoder_->usage_final();
    r_.evidence = complete ? budget::Evidence::answered : st_.gone ? budget::Evidence::no_answer : budget::Evidence::unreadable;
    if (!committed_) {
      // Nothing reached the client: the client left, or the stream failed before its first event.
      r_.ok = false;
      fail(at_.classify_event(policy::TransportEvent::reset_after_send, ex->status()),
           malformed_error(d_, "stream failed before its first event"), false);
      return false;
    }
    if (stream_error && !st_.gone && !st_.cut && st_.client && st_.client->continuable() && continues_after(cut_class_) &&
        prefill_fits(st_)) {
      leave_cut(u);
      return false;
    }
    r_.ok = true;  // once committed, the attempt is the answer, complete or not
    if (continuing_) {
      st_.client->served_by(d_.id);
      st_.trace.continued_by = d_.id;
      st_.trace.continuations = st_.client->continued;
      st_.sink.set_trailers({{"x-tollgate-continued-by", d_.id}, {"x-tollgate-continuations", std::to_string(st_.client->continued)}});
    }
    // A stream that skipped a malformed event may lack a piece of its answer: served, never cached;
    // nor is a continued one (its chunks are the continuation's only).
    if (complete && st_.stream_answer && skipped_ == 0 && !continuing_)
      if (auto whole = st_.stream_answer->completion()) keep_for_cache(st_, json::serialize(*whole));
    st_.stream_answer.reset();
    at_.record(group_, dep_, ex->status(), std::nullopt, started_, u.prompt_tokens + u.billed_output_tokens(), r_.evidence);
    if (skipped_ > 0 && !st_.trace.steps.empty()) st_.trace.steps.back().skipped_events = skipped_;
    if (continuing_ && !st_.trace.steps.empty()) {
      st_.trace.steps.back().continuation = "continued";
      st_.trace.steps.back().prefill_bytes = prefill_bytes_;
    }
    if (stream_error) st_.stream_status = decoder_->error() ? "failure" : "unknown_outcome";
    else if (!complete) st_.stream_status = "unknown_outcome";
    return true;
  }

  // Read and written by the coroutine's waits.
  std::unique_ptr<http::UpstreamExchange> ex;
  std::string raw;                   ///< the last read's bytes
  std::vector<std::string> chunks;   ///< decoded chunks not yet sent to the client
  std::optional<core::Error> stream_error;  ///< why a committed stream ended early

 private:
  /// The attempt failed before the client saw anything; `cancel`: the upstream is cancelled.
  void fail(FailureClass c, core::Error e, bool cancel) {
    r_.failure = c;
    r_.error = std::move(e);
    if (cancel) ex->cancel();
    st_.exchange = nullptr;
    r_.evidence = budget::Evidence::unreadable;  // answered 2xx, but no usable stream
    at_.record(group_, dep_, ex->status(), r_.failure, started_, 0, r_.evidence);
  }

  /// A read that failed: before the client saw anything the attempt failed (a silent upstream is
  /// not asked again); after, the stream was cut (a limit, a break, shutdown).
  Flow on_read_error(const http::TransportError& e) {
    if (st_.gone) return Flow::leave;
    const bool timed_out = e.kind == http::TransportError::Kind::timeout;
    const bool stream_limit = timed_out && (limit_ == Limit::first_token || limit_ == Limit::idle);
    const milliseconds limit_ms = limit_ == Limit::first_token ? *first_token_ : idle_.value_or(milliseconds{0});
    if (stream_limit) st_.attempt_cut_by_caller_limit = callers(limit_);
    policy::Outcome oc;
    oc.transport = transport_event(e);
    if (!committed_) {
      // Nothing of the answer came: the next attempt goes to another deployment (attempt_loop).
      r_.silent = timed_out && limit_ != Limit::request;
      fail(st_.table->classify(oc), stream_limit ? limit_error(limit_, limit_ms, d_, setting_of(limit_)) : transport_error(e, d_),
           true);
      return Flow::fail;
    }
    cut_class_ = st_.table->classify(oc);
    if (st_.cut) {
      stream_error = shutdown_error();
    } else if (stream_limit) {
      stream_error = limit_error(limit_, limit_ms, d_, setting_of(limit_));
      went_silent_ = true;
    } else {
      stream_error = transport_error(e, d_);
      stream_error->message = "upstream stream broke: " + e.message;
    }
    return Flow::leave;
  }

  /// Cut after text reached the client (issue 13 §3): the stream stays open and the walk asks
  /// the next target to continue the answer from that text. This attempt is settled by its
  /// evidence (the cut left its bill unknown: its reservation, unless the upstream's partial
  /// usage said more was generated).
  void leave_cut(const Usage& u) {
    const auto added = static_cast<std::int64_t>(st_.client->text().size() - text_before_);
    st_.client->delivered_tokens +=
        std::max({u.completion_tokens, st_.client->text_events() - events_before_, (added + 3) / 4});
    st_.client->cut(*stream_error);
    st_.stream_answer.reset();
    r_.ok = false;
    r_.cut = true;
    r_.silent = went_silent_;  // a stalled deployment is not asked to continue its own answer
    r_.failure = cut_class_;
    r_.error = *stream_error;
    r_.evidence = budget::Evidence::unreadable;
    at_.record(group_, dep_, ex->status(), r_.failure, started_, 0, r_.evidence);
    if (!st_.trace.steps.empty()) {
      st_.trace.steps.back().continuation = "cut";
      if (skipped_ > 0) st_.trace.steps.back().skipped_events = skipped_;
    }
  }

  /// The limit the next read waits for: the request's deadline, the first byte's, the first
  /// token's, the idle limit's; the earliest.
  std::pair<core::SteadyTime, Limit> next_limit() const {
    std::pair<core::SteadyTime, Limit> best{st_.deadline, Limit::request};
    auto consider = [&](core::SteadyTime t, Limit l) {
      if (t < best.first) best = {t, l};
    };
    if (!any_read_) consider(first_byte_deadline_, Limit::first_byte);
    if (!committed_ && held_output_ == 0 && first_token_) consider(started_ + *first_token_, Limit::first_token);
    if (any_read_ && idle_) consider(last_read_ + *idle_, Limit::idle);
    return best;
  }

  /// Which setting a limit that fires came from (the error names it).
  std::string_view setting_of(Limit which) const {
    const auto& own = which == Limit::first_token ? own_first_ : own_idle_;
    if (call_limit_ && (!own || *call_limit_ < *own)) return "the per-call timeout: stream_timeout / timeout";
    return which == Limit::first_token ? "first_token_timeout_ms" : "stream_idle_timeout_ms";
  }

  /// Whether a limit that fired is the caller's own (key or request), not the group's or the
  /// deployment's: then it does not count against the deployment's circuit (Attempter::record).
  bool callers(Limit which) const {
    const auto& budget = st_.trace.budget;
    if (which == Limit::first_token)
      return st_.caller_tightened_first_token && budget.first_token_timeout && *budget.first_token_timeout <= *first_token_;
    if (which == Limit::idle) return st_.caller_tightened_idle && *budget.stream_idle_timeout <= *idle_;
    return false;
  }

  RunState& st_;
  Attempter& at_;
  std::string group_;
  std::size_t dep_;
  const config::Deployment& d_;
  core::SteadyTime started_;
  core::SteadyTime first_byte_deadline_;
  core::SteadyTime last_read_;  ///< when the last event arrived (or the attempt started)
  AttemptResult& r_;
  bool native_ = false;
  bool continuing_ = false;
  std::unique_ptr<providers::StreamDecoder> decoder_;
  std::unique_ptr<http::FrameParser> parser_;
  std::size_t text_before_ = 0;
  std::int64_t events_before_ = 0;
  std::int64_t prefill_bytes_ = 0;
  std::optional<milliseconds> call_limit_, own_first_, first_token_, own_idle_, idle_;
  std::int64_t holdback_ = 0;
  std::size_t hold_bytes_ = 0;
  std::int64_t held_output_ = 0;  ///< output events among the held chunks
  std::size_t held_bytes_ = 0;
  std::size_t held_seen_ = 0;  ///< held chunks counted so far
  bool committed_ = false;
  bool release_ = false;
  bool at_end_ = false;
  bool any_read_ = false;     ///< any byte arrived (the first-byte limit is met)
  bool events_read_ = false;  ///< the last read delivered at least one event
  bool went_silent_ = false;  ///< the stream was cut by a time limit (it stalled): not asked again
  int skipped_ = 0;           ///< malformed events skipped after the stream reached the client
  Limit limit_ = Limit::request;  ///< the limit the read in flight waits for
  FailureClass cut_class_ = FailureClass::transient_provider_error;  ///< the class of stream_error's cut
};

}  // namespace

net::awaitable<void> relay_stream(RunState& st, Attempter& at, std::string group, std::size_t dep,
                                  std::unique_ptr<http::UpstreamExchange> ex, core::SteadyTime started,
                                  core::SteadyTime first_byte_deadline, AttemptResult& r) {
  StreamRelay s(st, at, std::move(group), dep, std::move(ex), started, first_byte_deadline, r);
  if (!s.open()) co_return;
  for (;;) {
    const auto until = s.next_read();
    auto flow = s.on_read(co_await s.ex->read_some(s.raw, until));
    if (flow == StreamRelay::Flow::fail) co_return;
    if (flow == StreamRelay::Flow::leave) break;
    if (s.release()) {
      if (!s.continuing()) {
        if (!co_await st.sink.begin_stream(s.stream_headers())) {
          st.gone = true;  // the client cannot be written to: stop, do not retry elsewhere
          break;
        }
        s.opened();
      }
      s.commit();
    }
    if (s.take_chunks()) {
      if (!co_await st.sink.stream_chunks(s.chunks, s.usage_so_far())) {
        st.gone = true;
        break;
      }
      s.chunks.clear();
    }
    flow = s.after_send();
    if (flow == StreamRelay::Flow::fail) co_return;
    if (flow == StreamRelay::Flow::leave) break;
  }
  if (st.gone) {
    s.ex->cancel();
  } else {
    if (s.wants_rest()) {
      std::string rest;
      (void)co_await s.ex->read_some(rest, s.rest_deadline());
    }
    s.ex->finish();
  }
  if (s.settle() && !st.gone) co_await st.sink.end_stream(s.stream_error);
}

}  // namespace tollgate::pipeline
