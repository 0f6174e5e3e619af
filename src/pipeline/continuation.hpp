#pragma once
/// Mid-stream failover with continuation (issue 13 §3; docs/streaming.md "Continuation"): the
/// client's stream across the attempts that write into it. It notes what each relayed chunk
/// delivered — the first choice's text, whether a tool call or a second choice started, the
/// stream's id — so that when the stream is cut after text reached the client another target
/// can be asked to continue it from that text (an assistant prefill, providers/prefill.hpp), and
/// it rewrites that continuation's chunks so they extend the same stream: the same id, the
/// same content block, no second preamble. Chunks are OpenAI `chat.completion.chunk` JSON text,
/// or for a native Anthropic stream its event JSON (Messages API streaming: message_start,
/// content_block_start/delta/stop, message_delta, message_stop). Internal to pipeline/.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <utility>

#include <boost/json/fwd.hpp>

#include "core/error.hpp"

namespace tollgate::pipeline {

/// One client stream (one run). Not thread-safe.
class ClientStream {
 public:
  /// `native`: the chunks are native Anthropic events, else OpenAI chat chunks.
  explicit ClientStream(bool native) : native_(native) {}

  /// Takes one chunk about to be relayed: noted and, during a continuation, rewritten in place
  /// (id, indices, the repeated preamble dropped, the leading whitespace the prefill lost put
  /// right). False: drop it, nothing of it is relayed. A chunk that is not JSON is relayed as is.
  /// A chunk may need another written before it (a native continuation that does not go on in
  /// the client's open text block closes it first): relay_all() writes those, relay() keeps
  /// them for take_inserted().
  bool relay(std::string& chunk);

  /// relay() over a read's chunks, in order: the dropped ones removed, the inserted ones put
  /// before the chunk that needed them.
  void relay_all(std::vector<std::string>& chunks);

  /// Chunks the last relay() needs written before its chunk (taken: cleared by the call).
  std::vector<std::string> take_inserted() { return std::exchange(inserted_, {}); }

  /// Whether the answer so far can be continued by a prefill: text was delivered (not only
  /// whitespace), on one choice, no tool call, tool-use or thinking block started (a cut inside a
  /// tool call is not continued), and the answer's finish was not relayed yet.
  bool continuable() const {
    return !prefill().empty() && !other_output_ && !multi_choice_ && !finished_;
  }

  /// Whether the client was sent the answer's finish (a chat finish_reason on choice 0, a
  /// native message_delta with a stop_reason, or message_stop): a break after it is not
  /// continued (the text is whole; what it lost is the usage, and the client is told so).
  bool finished() const { return finished_; }

  /// Text deltas relayed so far (a lower bound on the output tokens delivered: a delta carries
  /// at least one token).
  std::int64_t text_events() const { return text_events_; }

  /// Starts a continuation after a cut that ended with `cut` (the error event the client gets
  /// if nothing continues it): the next attempt's chunks are rewritten into this stream.
  void cut(core::Error cut);

  /// A continuation (by deployment `id`) ran to the end of its stream: the cut is answered.
  void served_by(std::string id) {
    continuing_ = false;
    ++continued;
    continued_by = std::move(id);
  }

  /// Whether the client's stream has begun (its head and first chunks were written).
  bool open() const { return open_; }
  /// The stream opened with an attempt on deployment `dep` (Config::model_list index).
  void set_open(std::size_t dep) {
    open_ = true;
    opened_by_ = dep;
  }
  /// The deployment whose attempt opened the stream (valid once open()).
  std::size_t opened_by() const { return opened_by_; }
  bool native() const { return native_; }
  /// A cut is waiting for a continuation (cut() ran, no continuation served since).
  bool continuing() const { return continuing_; }
  /// The cut's error event (valid after cut()).
  const core::Error& cut_error() const { return cut_error_; }
  /// The text delivered so far, in order.
  const std::string& text() const { return text_; }
  /// What the next target is sent as the final assistant message (text() without its trailing
  /// whitespace; providers::prefill_text).
  std::string_view prefill() const;
  /// Whether the call's body already ends with the assistant message the prefill goes in (an
  /// earlier continuation's, or the caller's own final assistant message, merged into).
  bool prefill_in_body = false;
  /// The caller's own final assistant message's text (the caller prefilled the answer): the
  /// delivered text continues it, so the prefill is this followed by prefill().
  std::string caller_prefill;
  /// Output tokens delivered before the cut(s): per cut attempt the most of the upstream's count,
  /// its text deltas, and its text's bytes / 4 (a partial count, like Anthropic's message_start
  /// output_tokens, undercounts): what the continuation's output bound is lowered by.
  std::int64_t delivered_tokens = 0;
  /// Continuations that served (part of) the answer, and the deployment id of the last.
  int continued = 0;
  std::string continued_by;

 private:
  bool relay_chat(std::string& chunk);
  bool relay_native(std::string& chunk);
  /// Removes from a continuation's first text (a JSON string) the whitespace the prefill lost
  /// and the client already has, as far as the text repeats it. True when it changed.
  bool strip_lead(boost::json::value& text);
  /// Text appended to the client's answer: noted, and counted as one text delta if not empty.
  void add_text(std::string_view t);
  /// Queues a content_block_stop for the client's open native text block (take_inserted()).
  void close_open_block();

  bool native_;
  bool open_ = false;
  std::size_t opened_by_ = 0;
  bool continuing_ = false;
  std::string text_;
  bool other_output_ = false;
  bool multi_choice_ = false;
  bool finished_ = false;
  std::int64_t text_events_ = 0;
  std::vector<std::string> inserted_;
  core::Error cut_error_;
  // The client stream's identity (chat): the first chunk's id and created.
  std::optional<std::string> id_;
  std::optional<std::int64_t> created_;
  // Native blocks in the client's index space: the open text block (-1 none), the next free index.
  std::int64_t open_text_block_ = -1;
  std::int64_t next_block_ = 0;
  // The continuation in flight: the index its blocks start at and whether its block 0 is the
  // client's open text block, and the trailing whitespace the prefill dropped that the
  // continuation's first text may repeat (stripped from it as far as it does).
  std::int64_t block_base_ = 0;
  bool joins_open_block_ = false;
  std::string lead_;
};

}  // namespace tollgate::pipeline
