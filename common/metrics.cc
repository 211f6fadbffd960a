#include "common/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace basalt::metrics {
namespace {

bool ValidName(std::string_view n, bool label) {
  if (n.empty()) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!label && c == ':');
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return !(label && n.substr(0, 2) == "__");
}

// Help text escapes backslash and newline; a label value a double quote too.
std::string Escape(std::string_view v, bool quote) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

// `{a="x",b="y"}` (with `extra` last, e.g. le), or nothing for no labels.
std::string LabelText(const Labels& labels, const std::pair<std::string, std::string>* extra = nullptr) {
  if (labels.empty() && extra == nullptr) return "";
  std::string out = "{";
  bool first = true;
  auto add = [&](const std::pair<std::string, std::string>& l) {
    absl::StrAppend(&out, first ? "" : ",", l.first, "=\"", EscapeLabelValue(l.second), "\"");
    first = false;
  };
  for (const auto& l : labels) add(l);
  if (extra != nullptr) add(*extra);
  out += "}";
  return out;
}

}  // namespace

size_t ShardIndex() {
  static std::atomic<size_t> next{0};
  thread_local const size_t index = next.fetch_add(1, std::memory_order_relaxed) % kShards;
  return index;
}

uint64_t Counter::Value() const {
  uint64_t sum = 0;
  for (const Shard& s : shards_) sum += s.v.load(std::memory_order_relaxed);
  return sum;
}

Histogram::Histogram(std::vector<uint64_t> bounds, double divisor) : bounds_(std::move(bounds)), divisor_(divisor) {
  for (Shard& s : shards_) {
    s.buckets = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
    for (size_t i = 0; i <= bounds_.size(); ++i) s.buckets[i].store(0, std::memory_order_relaxed);
  }
}

void Histogram::Observe(uint64_t v) {
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  Shard& s = shards_[ShardIndex()];
  s.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  s.sum.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Snap() const {
  Snapshot snap;
  std::vector<uint64_t> per(bounds_.size() + 1, 0);
  for (const Shard& s : shards_) {
    for (size_t i = 0; i <= bounds_.size(); ++i) per[i] += s.buckets[i].load(std::memory_order_relaxed);
    snap.sum += s.sum.load(std::memory_order_relaxed);
  }
  uint64_t running = 0;
  for (uint64_t n : per) {
    running += n;
    snap.cumulative.push_back(running);
  }
  snap.count = running;
  return snap;
}

std::vector<uint64_t> LatencyBucketsMicros() {
  return {25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000,
          10000000};
}

double Quantile(const std::vector<uint64_t>& bounds, const std::vector<uint64_t>& cumulative, double q) {
  if (cumulative.size() != bounds.size() + 1 || cumulative.back() == 0 || bounds.empty()) return std::nan("");
  const double rank = q * static_cast<double>(cumulative.back());
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (static_cast<double>(cumulative[i]) < rank) continue;
    const double lower = i == 0 ? 0 : static_cast<double>(bounds[i - 1]);
    const double below = i == 0 ? 0 : static_cast<double>(cumulative[i - 1]);
    const double in = static_cast<double>(cumulative[i]) - below;
    return lower + (static_cast<double>(bounds[i]) - lower) * (in > 0 ? (rank - below) / in : 1);
  }
  return static_cast<double>(bounds.back());
}

std::string EscapeLabelValue(std::string_view v) { return Escape(v, /*quote=*/true); }

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  char buf[64];
  // The shortest that reads back, in %g style (as the Prometheus Go client writes: 0.0001, 2.5e-05).
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general);
  if (ec != std::errc()) return absl::StrCat(v);
  return std::string(buf, end);
}

absl::StatusOr<Registry::Family*> Registry::FamilyLocked(std::string_view name, std::string_view help, Type type,
                                                         const Labels& labels) {
  if (!ValidName(name, /*label=*/false)) return absl::InvalidArgumentError(absl::StrCat("metric name '", AV(name), "' is malformed"));
  for (const auto& [l, v] : labels) {
    if (!ValidName(l, /*label=*/true) || (type == Type::kHistogram && l == "le")) {
      return absl::InvalidArgumentError(absl::StrCat("metric ", AV(name), ": label name '", l, "' is malformed or reserved"));
    }
  }
  auto it = families_.find(name);
  if (it == families_.end()) {
    it = families_.emplace(std::string(name), Family{type, std::string(help), {}, {}, {}, {}}).first;
  } else if (it->second.type != type || it->second.help != help) {
    return absl::InvalidArgumentError(
        absl::StrCat("metric ", AV(name), " is registered already with another type or help"));
  }
  return &it->second;
}

absl::StatusOr<Counter*> Registry::AddCounter(std::string_view name, std::string_view help, Labels labels) {
  absl::MutexLock l(&mu_);
  absl::StatusOr<Family*> f = FamilyLocked(name, help, Type::kCounter, labels);
  if (!f.ok()) return f.status();
  std::unique_ptr<Counter>& c = (*f)->counters[labels];
  if (c == nullptr) c = std::make_unique<Counter>();
  return c.get();
}

absl::StatusOr<Histogram*> Registry::AddHistogram(std::string_view name, std::string_view help, Labels labels,
                                                  std::vector<uint64_t> bounds, double divisor) {
  if (!std::is_sorted(bounds.begin(), bounds.end()) ||
      std::adjacent_find(bounds.begin(), bounds.end()) != bounds.end()) {
    return absl::InvalidArgumentError(absl::StrCat("histogram ", AV(name), ": bucket bounds must ascend"));
  }
  absl::MutexLock l(&mu_);
  absl::StatusOr<Family*> f = FamilyLocked(name, help, Type::kHistogram, labels);
  if (!f.ok()) return f.status();
  std::unique_ptr<Histogram>& h = (*f)->histograms[labels];
  if (h == nullptr) h = std::make_unique<Histogram>(std::move(bounds), divisor);
  return h.get();
}

absl::Status Registry::AddGauge(std::string_view name, std::string_view help, Labels labels,
                                std::function<double()> read) {
  return AddRead(name, help, Type::kGauge, std::move(labels), std::move(read));
}

absl::Status Registry::AddCounterFunction(std::string_view name, std::string_view help, Labels labels,
                                          std::function<double()> read) {
  return AddRead(name, help, Type::kCounter, std::move(labels), std::move(read));
}

absl::Status Registry::AddRead(std::string_view name, std::string_view help, Type type, Labels labels,
                               std::function<double()> read) {
  absl::MutexLock l(&mu_);
  absl::StatusOr<Family*> f = FamilyLocked(name, help, type, labels);
  if (!f.ok()) return f.status();
  (*f)->reads[std::move(labels)] = std::move(read);
  return absl::OkStatus();
}

absl::Status Registry::AddGaugeFamily(std::string_view name, std::string_view help,
                                      std::function<std::vector<std::pair<Labels, double>>()> read) {
  return AddFamily(name, help, Type::kGauge, std::move(read));
}

absl::Status Registry::AddCounterFamily(std::string_view name, std::string_view help,
                                        std::function<std::vector<std::pair<Labels, double>>()> read) {
  return AddFamily(name, help, Type::kCounter, std::move(read));
}

absl::Status Registry::AddFamily(std::string_view name, std::string_view help, Type type,
                                 std::function<std::vector<std::pair<Labels, double>>()> read) {
  absl::MutexLock l(&mu_);
  absl::StatusOr<Family*> f = FamilyLocked(name, help, type, {});
  if (!f.ok()) return f.status();
  (*f)->family_reads.push_back(std::move(read));
  return absl::OkStatus();
}

std::string Registry::Render() const {
  absl::MutexLock l(&mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    const char* type = f.type == Type::kCounter ? "counter" : f.type == Type::kGauge ? "gauge" : "histogram";
    absl::StrAppend(&out, "# HELP ", name, " ", Escape(f.help, /*quote=*/false), "\n# TYPE ", name, " ", type, "\n");
    // Samples sorted by labels, whichever way they were registered.
    std::map<Labels, double> values;
    for (const auto& [labels, c] : f.counters) values[labels] = static_cast<double>(c->Value());
    for (const auto& [labels, read] : f.reads) values[labels] = read();
    for (const auto& read : f.family_reads) {
      for (auto& [labels, v] : read()) values[std::move(labels)] = v;
    }
    for (const auto& [labels, v] : values) absl::StrAppend(&out, name, LabelText(labels), " ", FormatValue(v), "\n");
    for (const auto& [labels, h] : f.histograms) {
      const Histogram::Snapshot snap = h->Snap();
      for (size_t i = 0; i <= h->bounds().size(); ++i) {
        const std::pair<std::string, std::string> le{
            "le", i < h->bounds().size() ? FormatValue(static_cast<double>(h->bounds()[i]) / h->divisor()) : "+Inf"};
        absl::StrAppend(&out, name, "_bucket", LabelText(labels, &le), " ", snap.cumulative[i], "\n");
      }
      absl::StrAppend(&out, name, "_sum", LabelText(labels), " ",
                      FormatValue(static_cast<double>(snap.sum) / h->divisor()), "\n");
      absl::StrAppend(&out, name, "_count", LabelText(labels), " ", snap.count, "\n");
    }
  }
  return out;
}

}  // namespace basalt::metrics
