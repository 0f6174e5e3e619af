#pragma once
/// One model group's deployments tried in turn, with their retries (the attempt loop's
/// try_group, pipeline/attempt_loop.cpp): selection and backoff (Retry-After), the circuits,
/// the request's routing boundaries and cost ceiling, admission right before each send, the
/// attempt (attempt.hpp), its settlement by its evidence, and the decision its failure's class
/// makes: the next attempt, or the walk leaves the group. Internal to pipeline/.

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/accounting.hpp"
#include "pipeline/attempt.hpp"
#include "pipeline/output_bound.hpp"
#include "pipeline/run_state.hpp"

namespace tollgate::pipeline {

/// One run's group attempts: holds references to the run's state and units (not owned); lives
/// as long as the run. Not thread-safe: a run lives on one executor.
// try_group's frame lives as long as a stream it serves: the coroutine keeps only what crosses
// its waits, and the decisions between them are the plain functions below.
class GroupTry {
 public:
  GroupTry(RunState& st, Accounting& acct, Attempter& attempter) : st_(st), acct_(acct), attempter_(attempter) {}
  GroupTry(const GroupTry&) = delete;
  GroupTry& operator=(const GroupTry&) = delete;

  /// Tries `group`'s deployments (retries within the request's retry budget); the group's
  /// result is written to `out`. `is_fallback`: admitted as a fallback target
  /// (enforce_fallback_budget); `counts_as_fallback`: spends the fallback budget (a degradation
  /// target does not).
  net::awaitable<void> try_group(std::string group, bool is_fallback, bool counts_as_fallback, GroupResult& out);

 private:
  /// A group whose deployments are blocked because their provider answered a commercial limit
  /// (the provider circuit is open for that reason): the request stops as the limit itself
  /// would have (stop_and_alert), so that while the limit lasts a second provider does not
  /// silently take over every request. nullopt when the group is blocked for another reason.
  std::optional<core::Error> commercial_block(const std::string& group) const;

  /// One group's walk (try_group): what it keeps between its attempts.
  struct GroupWalk {
    explicit GroupWalk(GroupResult& result) : out(result) {}
    std::string group;
    bool is_fallback = false;        ///< admitted as a fallback target (enforce_fallback_budget)
    bool counts_as_fallback = true;  ///< spends the fallback budget (a degradation target does not)
    bool counted_fallback = false;
    int n = 0;  ///< attempts sent (retries are the ones after the first)
    const policy::GroupPolicy* gpol = nullptr;
    /// The deployments this request may still send to (shrinks when one has had its
    /// litellm_params.max_retries); those tried, refused at admission, and denied by a circuit.
    std::vector<std::size_t> candidates, tried, refused, denied;
    std::map<std::size_t, int> attempts_on;
    std::optional<milliseconds> hint;  ///< the last failure's Retry-After
    GroupResult& out;                  ///< the group's result
  };

  /// The group walk's next attempt, decided between its waits.
  struct NextAttempt {
    enum class Go { stop, skip, unsupported, admit };
    Go go = Go::stop;
    std::size_t dep = 0;
    milliseconds wait{0};  ///< backoff before it
    policy::Permit permit = policy::Permit::closed;
    AttemptPlan plan;
    std::optional<std::int64_t> max_tokens;  ///< the output limit it is sent with (caller's or the deployment's default)
    bool counted_retry = false;
    std::size_t retry_class = 0;  ///< the class of the failure it retries
    bool continuation = false;    ///< it continues the client's cut stream
  };

  /// How an attempt ended the group's walk, or not.
  enum class After { served, again, stop };

  /// The group's policy and the deployments the request may send to. False when none is left:
  /// `g.out` says why (a routing boundary, an API no deployment serves, no continuation).
  bool open_group(GroupWalk& g);

  /// The next deployment and the wait before it (a retry's backoff), or stop: the retry budget,
  /// the retry policy, a Retry-After or backoff longer than the time left, nothing left to select.
  NextAttempt pick_next(GroupWalk& g);

  /// After the wait: the time left, the deployment's circuit, whether it can be called at all,
  /// its input limit and the request's cost ceiling; the attempt's plan. `next.go` says what is
  /// next: stop, skip it, send it unadmitted (an unsupported provider), or admit it.
  void prepare_next(GroupWalk& g, NextAttempt& next);

  /// A deployment refused before its send (admission, its input limit, the cost ceiling): its
  /// circuit permit goes back, and the walk goes on without it.
  void note_refused(GroupWalk& g, const NextAttempt& next, Refusal refusal);

  /// Admitted: counts the retry or fallback and records the attempt's reservation and output
  /// bound. False when it is not sent after all (the client left, shutdown, deadline): its hold
  /// settles at 0.
  bool begin_attempt(GroupWalk& g, NextAttempt& next, Accounting::Held& held);

  /// An unsupported provider's attempt: no reservation, no output bound.
  void begin_unsupported(const NextAttempt& next);

  /// Settles the attempt by its evidence and decides: served, the next attempt, or the walk
  /// leaves the group (the failure's action).
  After after_attempt(GroupWalk& g, const NextAttempt& next, Accounting::Held& held, AttemptResult r);

  /// The group is left unserved: why, when nothing was tried (the deadline, open circuits, a
  /// commercial limit, nothing available); a retry decided but not started becomes "fallback".
  void close_group(GroupWalk& g);

  /// Whether deployment `i` may continue the client's cut stream: it accepts an assistant prefill
  /// and, for a native Anthropic stream, is called natively (its events extend the stream).
  bool continues_on(std::size_t i) const;

  /// Ends the call's body (and its native body) with the text the client has as a final
  /// assistant message, replacing an earlier continuation's: what the next target continues.
  void put_prefill();

  /// Removes from `candidates` the deployments that cannot serve the call's API (allocates only
  /// when one cannot). The 400 to answer when none is left, naming the first one refused.
  std::optional<core::Error> refuse_unserved(std::vector<std::size_t>& candidates) const;

  /// An embeddings input of token ids longer than the model's max_input_tokens (its length is
  /// exact: no tokenizer needed): OpenAI's 400 context_length_exceeded. Text inputs are sent,
  /// and the provider's own 400 is classified as a context overflow.
  std::optional<core::Error> token_input_overflow(std::size_t dep) const;

  /// Waits `d` (a retry's backoff) on a timer the run cancels when the client leaves or the
  /// drain cuts it (RunState::cancel_in_flight); in the simulator, advances its virtual clock.
  net::awaitable<void> sleep(milliseconds d);

  RunState& st_;
  Accounting& acct_;
  Attempter& attempter_;
};

}  // namespace tollgate::pipeline
