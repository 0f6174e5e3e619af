#pragma once
/// A small Prometheus metrics registry (DESIGN.md layout: "telemetry/ ... Prometheus metrics").
///
/// Families of counters, gauges and fixed-bucket histograms, each with a fixed list of label
/// names; a family's children (one per combination of label values) are created on first use.
/// Collectors (`Registry::on_collect`) write samples computed at scrape time — e.g. circuit
/// states owned by another component — so that component needs no push path.
///
/// `Registry::render()` produces the Prometheus text exposition format, version 0.0.4
/// (content type `text/plain; version=0.0.4; charset=utf-8`), as specified in the Prometheus
/// documentation, "Exposition formats" (https://prometheus.io/docs/instrumenting/exposition_formats/):
/// one `# HELP` and one `# TYPE` line per family, then its samples; label values escape `\`,
/// `"` and newline; HELP text escapes `\` and newline; histograms expose cumulative
/// `<name>_bucket{le="..."}` samples ending with `le="+Inf"`, then `<name>_sum` and `<name>_count`.
///
/// Thread safety: every member function of every class here is thread-safe. Updating a value is
/// one family mutex (child lookup) plus an atomic operation; a handle returned by `with()` is
/// stable for the registry's lifetime and updates without any lock (cache it on hot paths).
/// Families are never removed. render() may run concurrently with updates: each sample is read
/// atomically, but a histogram's buckets, sum and count are not one snapshot.
///
/// No Asio/Beast types: the HTTP layer serves render()'s string.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tollgate::telemetry {

/// Label values, in the order of the family's label names.
using LabelValues = std::vector<std::string>;
/// The same as views, for the hot paths: a child is found without copying its values (they are
/// copied once, when the child is made).
using LabelViews = std::span<const std::string_view>;

/// Orders label-value lists lexicographically, whether held as strings or as views.
struct LabelsLess {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                        [](std::string_view x, std::string_view y) { return x < y; });
  }
};
/// Hashes a label-value list, the same whether held as strings or as views. Each value counts by
/// its length and by up to 24 of its bytes (its first, middle and last 8): label values are short
/// names, codes and 64-digit key hashes, which differ there; values alike in those bytes only
/// share a bucket (children are told apart by LabelsEqual). Not noexcept on purpose: libstdc++
/// then keeps each child's hash, so a lookup compares hashes before values.
struct LabelsHash {
  using is_transparent = void;
  template <class A>
  std::size_t operator()(const A& a) const {
    std::uint64_t h = a.size();
    for (std::string_view v : a) {
      h = mix(h, v.size());
      if (v.size() >= 8) {
        h = mix(h, load8(v.data()));
        h = mix(h, load8(v.data() + v.size() / 2 - 4));
        h = mix(h, load8(v.data() + v.size() - 8));
      } else {
        std::uint64_t x = 0;
        for (const char c : v) x = (x << 8) | static_cast<unsigned char>(c);
        h = mix(h, x);
      }
    }
    return static_cast<std::size_t>(h ^ (h >> 29));
  }

 private:
  static std::uint64_t load8(const char* p) noexcept {
    std::uint64_t x;
    std::memcpy(&x, p, 8);
    return x;
  }
  static std::uint64_t mix(std::uint64_t h, std::uint64_t x) noexcept {
    return (h ^ (x * 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull;
  }
};
/// Equality of label-value lists, whether held as strings or as views.
struct LabelsEqual {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                      [](std::string_view x, std::string_view y) { return x == y; });
  }
};
/// (name, value) pairs of one sample, in output order.
using LabelPairs = std::vector<std::pair<std::string, std::string>>;

/// A family's `# TYPE`.
enum class MetricType { counter, gauge, histogram, untyped };

/// "counter", "gauge", "histogram", "untyped".
const char* to_string(MetricType type) noexcept;

/// Formats a sample value: integral values without exponent or fraction ("3", "1000000"),
/// others in the shortest round-trip form ("0.25", "1e-07"), and "+Inf", "-Inf", "NaN".
std::string format_value(double v);
/// Escapes a label value for the text format: `\` → `\\`, `"` → `\"`, newline → `\n`.
std::string escape_label_value(std::string_view v);
/// Escapes HELP text: `\` → `\\`, newline → `\n`.
std::string escape_help(std::string_view v);
/// Whether `name` is a valid metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`).
bool valid_metric_name(std::string_view name) noexcept;
/// Whether `name` is a valid label name (`[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__`).
bool valid_label_name(std::string_view name) noexcept;

/// Output of one scrape, written by the registry's families and by collectors. Samples are
/// grouped by family: `begin()` on a name already begun switches back to it (its HELP/TYPE are
/// kept from the first call), so two collectors may both contribute to one family. Families
/// appear in the order they were first begun. Not thread-safe: one Exposition per render().
class Exposition {
 public:
  /// Starts (or returns to) family `name`; the following samples belong to it.
  /// Throws std::invalid_argument on an invalid metric name.
  void begin(std::string_view name, std::string_view help, MetricType type = MetricType::gauge);
  /// Adds one sample line `sample_name{labels} value` to the current family. `sample_name` is
  /// usually the family name (or `<family>_bucket` / `_sum` / `_count` for histograms).
  /// Throws std::logic_error if no family was begun, std::invalid_argument on an invalid
  /// sample or label name.
  void sample(std::string_view sample_name, const LabelPairs& labels, double value);
  /// begin(name, help, gauge) followed by sample(name, labels, value): a one-line gauge.
  void gauge(std::string_view name, std::string_view help, const LabelPairs& labels, double value);
  /// The text exposition (every line ends with "\n"; empty when nothing was written).
  std::string str() const;

 private:
  struct Family {
    std::string name, help;
    MetricType type = MetricType::untyped;
    std::string lines;
  };
  std::vector<Family> families_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::size_t current_ = static_cast<std::size_t>(-1);  // index into families_
};

/// A monotonic counter value (a child of a CounterFamily). Lock-free.
class Counter {
 public:
  /// Adds n; negative or NaN n is ignored (a counter never goes down).
  void add(double n) noexcept;
  void inc() noexcept { add(1); }
  double value() const noexcept { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> v_{0};
};

/// A gauge value (a child of a GaugeFamily). Lock-free.
class Gauge {
 public:
  void set(double v) noexcept { v_.store(v, std::memory_order_relaxed); }
  void add(double n) noexcept { v_.fetch_add(n, std::memory_order_relaxed); }
  void inc() noexcept { add(1); }
  void dec() noexcept { add(-1); }
  double value() const noexcept { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> v_{0};
};

/// One histogram child: counts per bucket (bounds are upper bounds, inclusive: `le`), the sum
/// and the count of observations. Lock-free.
class Histogram {
 public:
  /// `bounds` must outlive the histogram (the family owns them).
  explicit Histogram(const std::vector<double>* bounds);
  /// Records one observation (in the family's unit, e.g. milliseconds). NaN is ignored.
  void observe(double v) noexcept;
  /// Cumulative count of observations ≤ bounds[i] (i == bounds.size(): every observation).
  std::uint64_t cumulative(std::size_t i) const noexcept;
  std::uint64_t count() const noexcept { return cumulative(bounds_->size()); }
  double sum() const noexcept { return sum_.load(std::memory_order_relaxed); }

 private:
  const std::vector<double>* bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;  // per bucket, non-cumulative; last = +Inf
  std::atomic<double> sum_{0};
};

/// Common part of the families: the name, help, label names and the children by label values.
/// `with(values)` throws std::invalid_argument when the number of values differs from the
/// number of label names (a programming error, caught by the first test that touches it).
template <class Child>
class Family {
 public:
  Family(std::string name, std::string help, std::vector<std::string> label_names)
      : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {}
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;
  virtual ~Family() = default;

  const std::string& name() const noexcept { return name_; }
  const std::string& help() const noexcept { return help_; }
  const std::vector<std::string>& label_names() const noexcept { return label_names_; }
  /// The number of children created so far.
  std::size_t size() const {
    std::lock_guard lk(mu_);
    return children_.size();
  }

 protected:
  Child& child(const LabelValues& values);
  /// The same, found without copying `values` (copied only when the child is made).
  Child& child(LabelViews values);
  virtual std::unique_ptr<Child> make_child() const = 0;
  LabelPairs pairs(const LabelValues& values) const;
  /// Calls fn(values, child) for every child, in label-value order, under the family mutex.
  template <class F>
  void for_each(F&& fn) const {
    std::lock_guard lk(mu_);
    std::vector<const typename Children::value_type*> order;
    order.reserve(children_.size());
    for (const auto& kv : children_) order.push_back(&kv);
    std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return LabelsLess{}(a->first, b->first); });
    for (const auto* kv : order) fn(kv->first, *kv->second);
  }

 private:
  /// The child for `values` (strings or views), made on first use; invalid_argument on a wrong count.
  template <class Values>
  Child& find_or_make(const Values& values);

  std::string name_, help_;
  std::vector<std::string> label_names_;
  mutable std::mutex mu_;
  /// Found by hash (a request looks up a few dozen children); ordered only when written out.
  using Children = std::unordered_map<LabelValues, std::unique_ptr<Child>, LabelsHash, LabelsEqual>;
  Children children_;
};

/// Base of every registered family, for rendering.
class FamilyBase {
 public:
  virtual ~FamilyBase() = default;
  virtual MetricType type() const noexcept = 0;
  virtual const std::vector<std::string>& labels() const noexcept = 0;
  virtual void write(Exposition& out) const = 0;
};

/// Counters by label values: `requests.inc({"gpt-4o", "200"})`, `spend.add({"team-a"}, 0.25)`.
class CounterFamily final : public Family<Counter>, public FamilyBase {
 public:
  using Family::Family;
  /// The child for these label values (created at 0 on first use); the reference is stable.
  Counter& with(const LabelValues& values) { return child(values); }
  void add(const LabelValues& values, double n) { child(values).add(n); }
  void inc(const LabelValues& values = {}) { child(values).inc(); }
  /// The same, for label values held as views (the hot paths): nothing is copied to find the child.
  template <std::size_t N>
  void add(const std::array<std::string_view, N>& values, double n) { child(LabelViews(values)).add(n); }
  template <std::size_t N>
  void inc(const std::array<std::string_view, N>& values) { child(LabelViews(values)).inc(); }
  /// The current value; 0 when the child does not exist (and does not create it).
  double value(const LabelValues& values = {}) const;
  MetricType type() const noexcept override { return MetricType::counter; }
  const std::vector<std::string>& labels() const noexcept override { return label_names(); }
  void write(Exposition& out) const override;

 private:
  std::unique_ptr<Counter> make_child() const override { return std::make_unique<Counter>(); }
};

/// Gauges by label values: `open_connections.set({}, 12)`.
class GaugeFamily final : public Family<Gauge>, public FamilyBase {
 public:
  using Family::Family;
  Gauge& with(const LabelValues& values) { return child(values); }
  void set(const LabelValues& values, double v) { child(values).set(v); }
  template <std::size_t N>
  void set(const std::array<std::string_view, N>& values, double v) { child(LabelViews(values)).set(v); }
  void add(const LabelValues& values, double n) { child(values).add(n); }
  void inc(const LabelValues& values = {}) { child(values).inc(); }
  void dec(const LabelValues& values = {}) { child(values).dec(); }
  double value(const LabelValues& values = {}) const;
  MetricType type() const noexcept override { return MetricType::gauge; }
  const std::vector<std::string>& labels() const noexcept override { return label_names(); }
  void write(Exposition& out) const override;

 private:
  std::unique_ptr<Gauge> make_child() const override { return std::make_unique<Gauge>(); }
};

/// Histograms by label values with one fixed, ascending list of bucket upper bounds
/// (milliseconds for latencies): `latency.observe({"gpt-4o"}, 123.0)`.
class HistogramFamily final : public Family<Histogram>, public FamilyBase {
 public:
  HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                  std::vector<double> bounds);
  Histogram& with(const LabelValues& values) { return child(values); }
  void observe(const LabelValues& values, double v) { child(values).observe(v); }
  template <std::size_t N>
  void observe(const std::array<std::string_view, N>& values, double v) { child(LabelViews(values)).observe(v); }
  const std::vector<double>& bounds() const noexcept { return bounds_; }
  /// Observation count of a child; 0 when absent.
  std::uint64_t count(const LabelValues& values = {}) const;
  MetricType type() const noexcept override { return MetricType::histogram; }
  const std::vector<std::string>& labels() const noexcept override { return label_names(); }
  void write(Exposition& out) const override;

 private:
  std::unique_ptr<Histogram> make_child() const override { return std::make_unique<Histogram>(&bounds_); }
  std::vector<double> bounds_;
};

/// Bucket upper bounds for request/attempt latencies in milliseconds:
/// 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000.
const std::vector<double>& default_latency_buckets_ms();

/// The registry: owns families (never removed) and collectors; renders a scrape.
class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  /// The counter family `name` (by convention ending in `_total`), created on first call.
  /// Calling again with the same name and label names returns the same family (help is kept
  /// from the first call). Throws std::invalid_argument on an invalid metric or label name, or
  /// when `name` is already registered with another type or other label names.
  CounterFamily& counter(const std::string& name, const std::string& help,
                         const std::vector<std::string>& label_names = {});
  /// The gauge family `name`; same contract as counter().
  GaugeFamily& gauge(const std::string& name, const std::string& help,
                     const std::vector<std::string>& label_names = {});
  /// The histogram family `name` with these bucket upper bounds (finite, strictly ascending,
  /// non-empty; +Inf is implicit). Same contract as counter(); a label named `le` and different
  /// bounds on a second call are invalid_argument too.
  HistogramFamily& histogram(const std::string& name, const std::string& help,
                             const std::vector<std::string>& label_names,
                             const std::vector<double>& bounds = default_latency_buckets_ms());

  /// Registers a callback run at every render(), after the registered families, in
  /// registration order; it writes its samples through the Exposition (typically gauges read
  /// from another component, such as circuit states). It runs on the scraping thread without
  /// the registry's lock held, so it may call into the registry; it must be thread-safe with
  /// respect to the component it reads, and everything it captures must outlive the registry's
  /// last render(). An exception from a collector is swallowed (its partial samples are kept).
  void on_collect(std::function<void(Exposition&)> collector);

  /// The Prometheus text exposition (format 0.0.4) of every family and collector: families in
  /// registration order, children in label-value order. A family without children renders
  /// its HELP and TYPE lines only; an unlabeled counter or gauge exists (at 0) from registration.
  std::string render() const;

  /// The content type to serve render() with.
  static constexpr std::string_view content_type = "text/plain; version=0.0.4; charset=utf-8";

 private:
  template <class F>
  F& get_or_add(const std::string& name, const std::vector<std::string>& label_names,
                MetricType type, const std::function<std::unique_ptr<F>()>& make);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<FamilyBase>> families_;
  std::map<std::string, FamilyBase*, std::less<>> by_name_;
  std::vector<std::shared_ptr<const std::function<void(Exposition&)>>> collectors_;
};

}  // namespace tollgate::telemetry
