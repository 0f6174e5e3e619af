// tollgate-mock entry point: CLI, one io_context + SO_REUSEPORT acceptor per thread, signals.
#include "server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <sys/socket.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using reuse_port = asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;

namespace {

void usage(std::ostream& os) {
  os << "usage: tollgate-mock [--host 127.0.0.1] [--port 0] [--threads 1] [--latency-ms 0]\n";
}

bool parse_int(const char* s, long long lo, long long hi, long long& out) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s, &end, 10);
  if (errno || !end || *end || end == s || v < lo || v > hi) return false;
  out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  long long port = 0, threads = 1, latency = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      usage(std::cout);
      return 0;
    }
    std::string value;
    if (auto eq = a.find('='); eq != std::string::npos && a.starts_with("--")) {
      value = a.substr(eq + 1);
      a.resize(eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      std::cerr << "tollgate-mock: missing value for " << a << "\n";
      usage(std::cerr);
      return 2;
    }
    bool ok = true;
    if (a == "--host") {
      host = value;
    } else if (a == "--port") {
      ok = parse_int(value.c_str(), 0, 65535, port);
    } else if (a == "--threads") {
      ok = parse_int(value.c_str(), 1, 256, threads);
    } else if (a == "--latency-ms") {
      ok = parse_int(value.c_str(), 0, 3'600'000, latency);
    } else {
      std::cerr << "tollgate-mock: unknown option " << a << "\n";
      usage(std::cerr);
      return 2;
    }
    if (!ok) {
      std::cerr << "tollgate-mock: bad value for " << a << ": " << value << "\n";
      return 2;
    }
  }
  std::signal(SIGPIPE, SIG_IGN);

  tollgate::mock::ServerConfig cfg;
  cfg.default_latency_ms = latency;

  std::vector<std::unique_ptr<asio::io_context>> contexts;
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
  try {
    auto address = asio::ip::make_address(host);
    tcp::endpoint ep(address, static_cast<unsigned short>(port));
    if (port != 0) {
      // SO_REUSEPORT would let a second process share the port silently: a plain bind first
      // makes a port in use an error.
      asio::io_context probe_ctx;
      tcp::acceptor probe(probe_ctx);
      probe.open(ep.protocol());
      probe.set_option(asio::socket_base::reuse_address(true));
      probe.bind(ep);
      probe.close();
    }
    for (long long t = 0; t < threads; ++t) {
      contexts.push_back(std::make_unique<asio::io_context>(1));
      auto acc = std::make_unique<tcp::acceptor>(*contexts.back());
      acc->open(ep.protocol());
      acc->set_option(asio::socket_base::reuse_address(true));
      acc->set_option(reuse_port(true));
      acc->bind(ep);
      acc->listen(asio::socket_base::max_listen_connections);
      if (t == 0) ep = acc->local_endpoint();  // the real port when 0 was asked for
      acceptors.push_back(std::move(acc));
    }
    std::string shown = ep.address().is_v6() ? "[" + ep.address().to_string() + "]"
                                             : ep.address().to_string();
    std::cout << "listening on http://" << shown << ":" << ep.port() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "tollgate-mock: cannot listen on " << host << ":" << port << ": " << e.what()
              << "\n";
    return 1;
  }

  for (std::size_t t = 0; t < contexts.size(); ++t) {
    asio::co_spawn(*contexts[t], tollgate::mock::accept_loop(*acceptors[t], cfg),
                   [](std::exception_ptr) {});
  }
  asio::signal_set signals(*contexts[0], SIGINT, SIGTERM);
  signals.async_wait([&contexts](const boost::system::error_code&, int) {
    for (auto& c : contexts) c->stop();
  });

  std::vector<std::thread> workers;
  for (std::size_t t = 1; t < contexts.size(); ++t) {
    workers.emplace_back([&contexts, t] { contexts[t]->run(); });
  }
  contexts[0]->run();
  for (auto& c : contexts) c->stop();
  for (auto& w : workers) w.join();
  std::fflush(stdout);
  // Pending sessions (e.g. hung ones) are abandoned on purpose: the process is ending.
  std::_Exit(0);
}
