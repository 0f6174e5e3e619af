#pragma once
/// The gateway's HTTP surface: routes requests to the OpenAI, Anthropic, model-list and health
/// endpoints, authenticates, decodes, and hands every model call to the one attempt loop.

#include <memory>

#include "http/server.hpp"
#include "pipeline/attempt_loop.hpp"

namespace tollgate::api {

class Gateway {
 public:
  explicit Gateway(std::shared_ptr<pipeline::Services> services);
  /// The http::Handler: answers one request.
  boost::asio::awaitable<void> handle(http::Request& req, http::ResponseWriter& w);
  /// Body of errors the HTTP layer answers itself (OpenAI error format).
  static std::string protocol_error_body(int status, std::string_view message);

 private:
  boost::asio::awaitable<void> chat_completions(http::Request& req, http::ResponseWriter& w);
  boost::asio::awaitable<void> messages(http::Request& req, http::ResponseWriter& w);
  std::shared_ptr<pipeline::Services> services_;
};

}  // namespace tollgate::api
