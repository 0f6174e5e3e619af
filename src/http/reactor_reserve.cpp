#include "http/reactor_reserve.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <vector>

#include <boost/asio/detail/reactor.hpp>

namespace tollgate::http {

std::size_t reserve_reactor_states(boost::asio::io_context& ioc, std::size_t count) noexcept {
#if defined(BOOST_ASIO_HAS_EPOLL) && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
  using Reactor = boost::asio::detail::epoll_reactor;
  try {
    auto& reactor = boost::asio::use_service<Reactor>(ioc);
    std::vector<Reactor::per_descriptor_data> states(count, nullptr);
    // A descriptor epoll refuses (EPERM): registering it allocates a state and adds nothing to
    // the epoll set; deregistering it puts the state on the reactor's free list (not as closed:
    // had epoll taken it after all, deregistering removes it again).
    const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct Close {
      int fd;
      ~Close() { ::close(fd); }
    } close_fd{fd};
    std::size_t reserved = 0;
    for (auto& s : states) {
      if (reactor.register_descriptor(fd, s) != 0) break;
      ++reserved;
    }
    for (auto& s : states) {
      if (s == nullptr) continue;
      reactor.deregister_descriptor(fd, s, false);
      reactor.cleanup_descriptor_data(s);
    }
    return reserved;
  } catch (...) {  // std::bad_alloc: what was reserved stays with the reactor
    return 0;
  }
#else
  (void)ioc;
  (void)count;
  return 0;
#endif
}

}  // namespace tollgate::http
