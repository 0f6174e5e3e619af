#include "telemetry/metrics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace tollgate::telemetry {

const char* to_string(MetricType type) noexcept {
  switch (type) {
    case MetricType::counter: return "counter";
    case MetricType::gauge: return "gauge";
    case MetricType::histogram: return "histogram";
    case MetricType::untyped: return "untyped";
  }
  return "untyped";
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::trunc(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  if (ec != std::errc()) return "NaN";
  return std::string(buf, end);
}

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string escape_help(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

bool is_alpha_(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

}  // namespace

bool valid_metric_name(std::string_view name) noexcept {
  if (name.empty() || !(is_alpha_(name[0]) || name[0] == ':')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return is_alpha_(c) || is_digit(c) || c == ':'; });
}

bool valid_label_name(std::string_view name) noexcept {
  if (name.empty() || !is_alpha_(name[0]) || name.starts_with("__")) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return is_alpha_(c) || is_digit(c); });
}

// --- Exposition ---------------------------------------------------------------------------

void Exposition::begin(std::string_view name, std::string_view help, MetricType type) {
  if (!valid_metric_name(name)) throw std::invalid_argument("invalid metric name: " + std::string(name));
  if (auto it = index_.find(name); it != index_.end()) {
    current_ = it->second;
    return;
  }
  current_ = families_.size();
  index_.emplace(std::string(name), current_);
  families_.push_back(Family{std::string(name), std::string(help), type, {}});
}

void Exposition::sample(std::string_view sample_name, const LabelPairs& labels, double value) {
  if (current_ >= families_.size()) throw std::logic_error("Exposition::sample before begin");
  if (!valid_metric_name(sample_name))
    throw std::invalid_argument("invalid metric name: " + std::string(sample_name));
  std::string& out = families_[current_].lines;
  out += sample_name;
  if (!labels.empty()) {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!valid_label_name(k)) throw std::invalid_argument("invalid label name: " + k);
      if (!first) out += ',';
      first = false;
      out += k;
      out += "=\"";
      out += escape_label_value(v);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  out += format_value(value);
  out += '\n';
}

void Exposition::gauge(std::string_view name, std::string_view help, const LabelPairs& labels, double value) {
  begin(name, help, MetricType::gauge);
  sample(name, labels, value);
}

std::string Exposition::str() const {
  std::string out;
  for (const auto& f : families_) {
    out += "# HELP ";
    out += f.name;
    out += ' ';
    out += escape_help(f.help);
    out += "\n# TYPE ";
    out += f.name;
    out += ' ';
    out += to_string(f.type);
    out += '\n';
    out += f.lines;
  }
  return out;
}

// --- values -------------------------------------------------------------------------------

void Counter::add(double n) noexcept {
  if (!(n > 0)) return;  // negative, zero or NaN
  v_.fetch_add(n, std::memory_order_relaxed);
}

Histogram::Histogram(const std::vector<double>* bounds)
    : bounds_(bounds), counts_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds->size() + 1)) {
  for (std::size_t i = 0; i <= bounds_->size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::observe(double v) noexcept {
  if (std::isnan(v)) return;
  const auto it = std::lower_bound(bounds_->begin(), bounds_->end(), v);  // first bound >= v
  counts_[static_cast<std::size_t>(it - bounds_->begin())].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

std::uint64_t Histogram::cumulative(std::size_t i) const noexcept {
  i = std::min(i, bounds_->size());
  std::uint64_t n = 0;
  for (std::size_t k = 0; k <= i; ++k) n += counts_[k].load(std::memory_order_relaxed);
  return n;
}

// --- families -----------------------------------------------------------------------------

template <class Child>
template <class Values>
Child& Family<Child>::find_or_make(const Values& values) {
  if (values.size() != label_names_.size())
    throw std::invalid_argument("metric " + name_ + " takes " + std::to_string(label_names_.size()) +
                                " label value(s), got " + std::to_string(values.size()));
  std::lock_guard lk(mu_);
  auto it = children_.find(values);
  if (it == children_.end())
    it = children_.emplace(LabelValues(values.begin(), values.end()), make_child()).first;
  return *it->second;
}

template <class Child>
Child& Family<Child>::child(const LabelValues& values) {
  return find_or_make(values);
}

template <class Child>
Child& Family<Child>::child(LabelViews values) {
  return find_or_make(values);
}

template <class Child>
LabelPairs Family<Child>::pairs(const LabelValues& values) const {
  LabelPairs out;
  out.reserve(values.size() + 1);
  for (std::size_t i = 0; i < values.size(); ++i) out.emplace_back(label_names_[i], values[i]);
  return out;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

double CounterFamily::value(const LabelValues& values) const {
  double v = 0;
  for_each([&](const LabelValues& k, const Counter& c) {
    if (k == values) v = c.value();
  });
  return v;
}

void CounterFamily::write(Exposition& out) const {
  out.begin(name(), help(), MetricType::counter);
  for_each([&](const LabelValues& k, const Counter& c) { out.sample(name(), pairs(k), c.value()); });
}

double GaugeFamily::value(const LabelValues& values) const {
  double v = 0;
  for_each([&](const LabelValues& k, const Gauge& g) {
    if (k == values) v = g.value();
  });
  return v;
}

void GaugeFamily::write(Exposition& out) const {
  out.begin(name(), help(), MetricType::gauge);
  for_each([&](const LabelValues& k, const Gauge& g) { out.sample(name(), pairs(k), g.value()); });
}

HistogramFamily::HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                                 std::vector<double> bounds)
    : Family(std::move(name), std::move(help), std::move(label_names)), bounds_(std::move(bounds)) {}

std::uint64_t HistogramFamily::count(const LabelValues& values) const {
  std::uint64_t n = 0;
  for_each([&](const LabelValues& k, const Histogram& h) {
    if (k == values) n = h.count();
  });
  return n;
}

void HistogramFamily::write(Exposition& out) const {
  out.begin(name(), help(), MetricType::histogram);
  const std::string bucket = name() + "_bucket", sum = name() + "_sum", count = name() + "_count";
  for_each([&](const LabelValues& k, const Histogram& h) {
    LabelPairs labels = pairs(k);
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i <= bounds_.size(); ++i) {
      cumulative = h.cumulative(i);
      labels.emplace_back("le", i < bounds_.size() ? format_value(bounds_[i]) : "+Inf");
      out.sample(bucket, labels, static_cast<double>(cumulative));
      labels.pop_back();
    }
    out.sample(sum, labels, h.sum());
    out.sample(count, labels, static_cast<double>(cumulative));
  });
}

const std::vector<double>& default_latency_buckets_ms() {
  static const std::vector<double> b = {5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000};
  return b;
}

// --- registry -----------------------------------------------------------------------------

template <class F>
F& Registry::get_or_add(const std::string& name, const std::vector<std::string>& label_names, MetricType type,
                        const std::function<std::unique_ptr<F>()>& make) {
  if (!valid_metric_name(name)) throw std::invalid_argument("invalid metric name: " + name);
  for (const auto& l : label_names) {
    if (!valid_label_name(l)) throw std::invalid_argument("metric " + name + ": invalid label name: " + l);
    if (type == MetricType::histogram && l == "le")
      throw std::invalid_argument("metric " + name + ": a histogram cannot have a label named le");
  }
  std::lock_guard lk(mu_);
  if (auto it = by_name_.find(name); it != by_name_.end()) {
    if (it->second->type() != type || it->second->labels() != label_names)
      throw std::invalid_argument("metric " + name + " is already registered with another type or labels");
    return dynamic_cast<F&>(*it->second);
  }
  auto f = make();
  F& ref = *f;
  by_name_.emplace(name, f.get());
  families_.push_back(std::move(f));
  return ref;
}

CounterFamily& Registry::counter(const std::string& name, const std::string& help,
                                 const std::vector<std::string>& label_names) {
  auto& f = get_or_add<CounterFamily>(name, label_names, MetricType::counter, [&] {
    return std::make_unique<CounterFamily>(name, help, label_names);
  });
  if (label_names.empty()) f.with({});
  return f;
}

GaugeFamily& Registry::gauge(const std::string& name, const std::string& help,
                             const std::vector<std::string>& label_names) {
  auto& f = get_or_add<GaugeFamily>(name, label_names, MetricType::gauge, [&] {
    return std::make_unique<GaugeFamily>(name, help, label_names);
  });
  if (label_names.empty()) f.with({});
  return f;
}

HistogramFamily& Registry::histogram(const std::string& name, const std::string& help,
                                     const std::vector<std::string>& label_names,
                                     const std::vector<double>& bounds) {
  if (bounds.empty()) throw std::invalid_argument("histogram " + name + ": no buckets");
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]))
      throw std::invalid_argument("histogram " + name + ": bucket bounds must be finite (+Inf is implicit)");
    if (i > 0 && !(bounds[i - 1] < bounds[i]))
      throw std::invalid_argument("histogram " + name + ": bucket bounds must be strictly ascending");
  }
  auto& f = get_or_add<HistogramFamily>(name, label_names, MetricType::histogram, [&] {
    return std::make_unique<HistogramFamily>(name, help, label_names, bounds);
  });
  if (f.bounds() != bounds)
    throw std::invalid_argument("histogram " + name + " is already registered with other buckets");
  return f;
}

void Registry::on_collect(std::function<void(Exposition&)> collector) {
  if (!collector) return;
  std::lock_guard lk(mu_);
  collectors_.push_back(std::make_shared<const std::function<void(Exposition&)>>(std::move(collector)));
}

std::string Registry::render() const {
  std::vector<const FamilyBase*> families;
  std::vector<std::shared_ptr<const std::function<void(Exposition&)>>> collectors;
  {
    std::lock_guard lk(mu_);
    families.reserve(families_.size());
    for (const auto& f : families_) families.push_back(f.get());
    collectors = collectors_;
  }
  Exposition out;
  for (const auto* f : families) f->write(out);
  for (const auto& c : collectors) {
    try {
      (*c)(out);
    } catch (...) {
      // A broken collector must not take the metrics endpoint down.
    }
  }
  return out.str();
}

}  // namespace tollgate::telemetry
