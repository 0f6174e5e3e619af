#pragma once
/// Asio's per-socket reactor states, reserved together when a worker starts.
///
/// Asio allocates one state (`epoll_reactor::descriptor_state`, 168 bytes) for every socket it
/// opens and, when the socket closes, keeps it on a free list for the next socket: it never
/// frees one. States allocated during a burst of connections (a client socket and an upstream
/// socket per request) sit between the burst's other blocks; once the burst is over they keep
/// the pages around them resident, and malloc_trim cannot give those back (after 10,000
/// concurrent streams, about 75 MB above idle: bench/RESULTS.md, issue 16). States reserved when
/// the worker starts sit together in a few pages of its arena, and the burst's sockets take
/// them first.

#include <cstddef>

#include <boost/asio/io_context.hpp>

namespace tollgate::http {

/// The most states reserved by the whole process, shared out between its worker threads (about
/// 3.4 MB at 176 bytes each, resident from the start).
inline constexpr std::size_t kMaxReservedReactorStates = 20000;

/// Allocates `count` reactor states on `ioc`'s reactor now, on the calling thread (so in its
/// malloc arena: call it from the thread that runs `ioc`, before it runs), and leaves them on
/// the reactor's free list. Returns how many were reserved: 0 where the reactor is not epoll's
/// (non-Linux builds) or /dev/null cannot be opened. Never throws.
std::size_t reserve_reactor_states(boost::asio::io_context& ioc, std::size_t count) noexcept;

}  // namespace tollgate::http
