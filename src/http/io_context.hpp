#pragma once
/// An io_context whose pending work can be destroyed on purpose, on the thread that owns it.

#include <boost/asio/io_context.hpp>

namespace tollgate::http {

/// boost::asio::io_context with abandon_pending(): destroys every handler and coroutine frame
/// still queued or waiting in the context (what ~io_context does first), while the objects
/// those frames refer to are still alive. Call it after run() has returned, from the thread
/// that ran it, with no other thread using the context; the context may be destroyed later.
/// Shutting down twice is harmless: ~io_context finds nothing left to destroy.
class IoContext : public boost::asio::io_context {
 public:
  using boost::asio::io_context::io_context;
  void abandon_pending() { shutdown(); }
};

}  // namespace tollgate::http
