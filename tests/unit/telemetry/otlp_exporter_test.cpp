// The OTLP exporter against a local HTTP server: batches delivered, a refusing or silent
// collector never blocks submit(), retries honour 503 then succeed, 400 is not retried, and
// every span dropped is counted.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <atomic>
#include <thread>

#include "telemetry/metrics.hpp"
#include "telemetry/otlp_exporter.hpp"

namespace tollgate::telemetry {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using namespace std::chrono_literals;

/// Answers every POST with the next status of `statuses` (the last repeats), or never answers.
class Collector {
 public:
  explicit Collector(std::vector<int> statuses, bool hang = false) : statuses_(std::move(statuses)), hang_(hang) {
    acceptor_.open(net::ip::tcp::v4());
    acceptor_.set_option(net::socket_base::reuse_address(true));
    acceptor_.bind({net::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
    thread_ = std::thread([this] { serve(); });
  }
  ~Collector() {
    stop_ = true;
    net::io_context ioc;
    net::ip::tcp::socket s(ioc);
    boost::system::error_code ec;
    s.connect(acceptor_.local_endpoint(), ec);  // wakes accept()
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/v1/traces"; }
  std::atomic<int> posts{0};
  std::atomic<int> spans{0};

 private:
  void serve() {
    while (!stop_) {
      net::ip::tcp::socket s(ioc_);
      boost::system::error_code ec;
      acceptor_.accept(s, ec);
      if (ec || stop_) return;
      beast::flat_buffer buf;
      for (;;) {
        bhttp::request<bhttp::string_body> req;
        bhttp::read(s, buf, req, ec);
        if (ec) break;
        const int n = posts++;
        std::string body = req.body();
        for (std::size_t p = 0; (p = body.find("\"spanId\"", p)) != std::string::npos; ++p) ++spans;
        if (hang_) {
          std::this_thread::sleep_for(400ms);
          break;
        }
        const int status = statuses_[std::min<std::size_t>(n, statuses_.size() - 1)];
        bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status), 11};
        res.set(bhttp::field::content_type, "application/json");
        if (status == 503) res.set(bhttp::field::retry_after, "0");
        res.body() = "{}";
        res.prepare_payload();
        bhttp::write(s, res, ec);
        if (ec) break;
      }
    }
  }
  net::io_context ioc_;
  net::ip::tcp::acceptor acceptor_{ioc_};
  std::vector<int> statuses_;
  bool hang_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::vector<Span> spans(int n) {
  std::vector<Span> out;
  for (int i = 0; i < n; ++i) {
    Span s;
    s.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    s.span_id = "00f067aa0ba902b" + std::to_string(i % 10);
    s.name = "chat m";
    out.push_back(std::move(s));
  }
  return out;
}

OtlpOptions options(const std::string& url) {
  OtlpOptions o;
  o.traces_url = url;
  o.flush_interval = 20ms;
  o.timeout = 300ms;
  o.max_retry_wait = 50ms;
  return o;
}

TEST(OtlpExporter, DeliversEverySpanInBatches) {
  Collector c({200});
  auto o = options(c.url());
  o.max_batch = 4;
  OtlpExporter e(o);
  for (int i = 0; i < 5; ++i) e.submit(spans(2));
  ASSERT_TRUE(e.drain(5s));
  EXPECT_EQ(e.stats().exported, 10u);
  EXPECT_EQ(c.spans.load(), 10);
  EXPECT_GE(c.posts.load(), 3) << "at most 4 spans per request";
}

TEST(OtlpExporter, RetriesA503AndDropsA400AtOnce) {
  {
    Collector c({503, 503, 200});
    OtlpExporter e(options(c.url()));
    e.submit(spans(3));
    ASSERT_TRUE(e.drain(5s));
    EXPECT_EQ(e.stats().exported, 3u);
    EXPECT_EQ(c.posts.load(), 3);
  }
  {
    Collector c({400});
    OtlpExporter e(options(c.url()));
    e.submit(spans(3));
    ASSERT_TRUE(e.drain(5s));
    EXPECT_EQ(e.stats().dropped_refused, 3u);
    EXPECT_EQ(c.posts.load(), 1) << "a 400 is not retried";
  }
}

TEST(OtlpExporter, ASilentCollectorNeverBlocksSubmitAndEveryDropIsCounted) {
  Collector c({200}, true);
  auto o = options(c.url());
  o.queue_capacity = 8;
  o.max_attempts = 1;
  OtlpExporter e(o);
  Registry metrics;
  e.register_metrics(metrics);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) e.submit(spans(1));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 200ms) << "submit() never waits for the network";
  ASSERT_TRUE(e.drain(10s));
  const auto s = e.stats();
  EXPECT_EQ(s.exported, 0u);
  EXPECT_EQ(s.dropped_queue_full + s.dropped_refused, 100u) << "every span accounted for";
  EXPECT_GT(s.dropped_queue_full, 0u);
  const auto text = metrics.render();
  EXPECT_NE(text.find("tollgate_otel_spans_dropped_total{reason=\"queue_full\"}"), std::string::npos) << text;
}

TEST(OtlpExporter, ShutdownIsBoundedWhenTheCollectorHangs) {
  // A collector that reads and never answers, one span per request: the destructor may not
  // send batch after batch, each up to its timeout (it took 16 × 300 ms before the fix).
  Collector c({200}, true);
  auto o = options(c.url());
  o.max_batch = 1;
  o.timeout = 300ms;
  const auto t0 = std::chrono::steady_clock::now();
  {
    OtlpExporter e(o);
    e.submit(spans(16));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s) << "bounded by twice the timeout, plus one export in flight";
}

TEST(OtlpExporter, AnUnreachableCollectorDropsAndCounts) {
  auto o = options("http://127.0.0.1:1/v1/traces");
  o.max_attempts = 2;
  OtlpExporter e(o);
  e.submit(spans(2));
  ASSERT_TRUE(e.drain(5s));
  EXPECT_EQ(e.stats().dropped_refused, 2u);
  EXPECT_THROW(OtlpExporter(options("not a url")), std::invalid_argument);
}

}  // namespace
}  // namespace tollgate::telemetry
