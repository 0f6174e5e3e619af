#pragma once
/// The stream relay of one attempt: an upstream 2xx event stream decoded by the provider's
/// stream decoder and relayed to the client as OpenAI chunks. Until the first chunk is ready
/// nothing is sent, so a stream that breaks before its first event is a failed attempt (the walk
/// goes on); once committed, the attempt is the answer, complete or not. Internal to pipeline/.

#include <memory>
#include <string>

#include "pipeline/attempt.hpp"

namespace tollgate::pipeline {

/// Relays `ex` (answered 2xx to a stream request on deployment `dep` of `group`) to the client;
/// records the attempt through `at`. `first_byte_deadline`: the attempt's deadline until the
/// first chunk, then the request's. The attempt's result is written to `r`.
net::awaitable<void> relay_stream(RunState& st, Attempter& at, std::string group, std::size_t dep,
                                  std::unique_ptr<http::UpstreamExchange> ex, core::SteadyTime started,
                                  core::SteadyTime first_byte_deadline, AttemptResult& r);

}  // namespace tollgate::pipeline
