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
  bool relay(std::string& chunk);

  /// Whether the answer so far can be continued by a prefill: text was delivered, on one
  /// choice, and no tool call, tool-use or thinking block started (a cut inside a tool call is
  /// not continued).
  bool continuable() const { return !text_.empty() && !other_output_ && !multi_choice_; }

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
  void set_open() { open_ = true; }
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
  /// Whether the call's body already ends with a prefill of an earlier continuation.
  bool prefill_in_body = false;
  /// Output tokens delivered before the cut(s), as the upstream counted them, else estimated
  /// from the text (4 bytes a token): what the continuation's output bound is lowered by.
  std::int64_t delivered_tokens = 0;
  /// Continuations that served (part of) the answer, and the deployment id of the last.
  int continued = 0;
  std::string continued_by;

 private:
  bool relay_chat(std::string& chunk);
  bool relay_native(std::string& chunk);
  /// Removes the leading whitespace of a continuation's first text once, if the prefill lost
  /// trailing whitespace the client already has. Returns the text left.
  void strip_lead(std::string& text);

  bool native_;
  bool open_ = false;
  bool continuing_ = false;
  std::string text_;
  bool other_output_ = false;
  bool multi_choice_ = false;
  core::Error cut_error_;
  // The client stream's identity (chat): the first chunk's id and created.
  std::optional<std::string> id_;
  std::optional<std::int64_t> created_;
  // Native blocks in the client's index space: the open text block (-1 none), the next free index.
  std::int64_t open_text_block_ = -1;
  std::int64_t next_block_ = 0;
  // The continuation in flight: the index its blocks start at and whether its block 0 is the
  // client's open text block, whether its first text was seen (leading whitespace stripped).
  std::int64_t block_base_ = 0;
  bool joins_open_block_ = false;
  bool lead_pending_ = false;
};

}  // namespace tollgate::pipeline
