// Metrics for the Prometheus text format (docs/DESIGN.md §11): counters and histograms that many threads
// add to without sharing a cache line, gauges and counters read by a callback at scrape time,
// and a registry that renders them all as Prometheus text (exposition format 0.0.4).
//
// Why not prometheus-cpp: Debian 12 does not package it (the issue asks for Debian's packages);
// the text format is small and documented, and what matters on the data path is the counting,
// which is ours either way.
//
// Cost on the data path: Counter::Add is one relaxed fetch_add on the calling thread's shard
// (kShards cache-line-padded atomics, a thread's shard fixed at its first use), and
// Histogram::Observe one bucket search over a short array plus two such adds. Reading (a
// scrape) sums the shards: a value read while threads add is a moment's, not a snapshot.
//
// Thread-safety: adding and observing from any thread; registering and rendering too (the
// registry's lock is taken by those only, never by Add or Observe).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace basalt::metrics {

inline constexpr size_t kShards = 16;

// The calling thread's shard, in [0, kShards).
size_t ShardIndex();

class Counter {
 public:
  void Add(uint64_t n = 1) { shards_[ShardIndex()].v.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Value() const;

 private:
  struct alignas(64) Shard {
    std::atomic<uint64_t> v{0};
  };
  std::array<Shard, kShards> shards_;
};

// Observations of an integer quantity (e.g. microseconds) into buckets with fixed upper bounds,
// in the same unit; the exposition divides bounds and sum by `divisor` (e.g. 1e6: seconds, as
// Prometheus wants; a division, so that 25 µs reads 2.5e-05, not 2.4999999999999998e-05).
class Histogram {
 public:
  // `bounds`: ascending upper bounds (an observation v lands in the first bucket with v <= bound;
  // above the last, in +Inf).
  explicit Histogram(std::vector<uint64_t> bounds, double divisor = 1);
  void Observe(uint64_t v);

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (== count)
    uint64_t count = 0;
    uint64_t sum = 0;  // in the observations' unit
  };
  Snapshot Snap() const;
  const std::vector<uint64_t>& bounds() const { return bounds_; }
  double divisor() const { return divisor_; }

 private:
  struct alignas(64) Shard {
    std::unique_ptr<std::atomic<uint64_t>[]> buckets;  // bounds + 1
    std::atomic<uint64_t> sum{0};
  };
  const std::vector<uint64_t> bounds_;
  const double divisor_;
  std::array<Shard, kShards> shards_;
};

// Latency buckets in microseconds, from 25 µs to 10 s (exposed in seconds with divisor 1e6).
std::vector<uint64_t> LatencyBucketsMicros();

// The q-quantile (0 < q < 1) of the observations whose cumulative bucket counts are
// `cumulative` (one per bound, then +Inf), estimated as Prometheus' histogram_quantile does:
// linearly within the bucket it falls in (from 0 in the first); in +Inf, the last bound. NaN
// when there is no observation or the sizes disagree.
double Quantile(const std::vector<uint64_t>& bounds, const std::vector<uint64_t>& cumulative, double q);

using Labels = std::vector<std::pair<std::string, std::string>>;

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The counter of family `name` (which should end in "_total") with these labels, made on first
  // use; the same one for the same name and labels. InvalidArgument for a malformed name or
  // label name, or a name registered as another type (or with another help).
  absl::StatusOr<Counter*> AddCounter(std::string_view name, std::string_view help, Labels labels = {});
  absl::StatusOr<Histogram*> AddHistogram(std::string_view name, std::string_view help, Labels labels,
                                          std::vector<uint64_t> bounds, double divisor = 1);
  // Values read at each scrape (on the scraping thread): a gauge, or a counter kept elsewhere
  // (e.g. the storage engine's statistics). `read` must stay callable as long as the registry.
  absl::Status AddGauge(std::string_view name, std::string_view help, Labels labels, std::function<double()> read);
  absl::Status AddCounterFunction(std::string_view name, std::string_view help, Labels labels,
                                  std::function<double()> read);
  // A family whose samples are all read at once at each scrape (e.g. one per table): `read`
  // returns each sample's labels and value.
  absl::Status AddGaugeFamily(std::string_view name, std::string_view help,
                              std::function<std::vector<std::pair<Labels, double>>()> read);
  absl::Status AddCounterFamily(std::string_view name, std::string_view help,
                                std::function<std::vector<std::pair<Labels, double>>()> read);

  // Every family, sorted by name, in the Prometheus text format 0.0.4.
  std::string Render() const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Family {
    Type type;
    std::string help;
    std::map<Labels, std::unique_ptr<Counter>> counters;
    std::map<Labels, std::unique_ptr<Histogram>> histograms;
    std::map<Labels, std::function<double()>> reads;
    std::vector<std::function<std::vector<std::pair<Labels, double>>()>> family_reads;
  };
  absl::Status AddRead(std::string_view name, std::string_view help, Type type, Labels labels,
                       std::function<double()> read);
  absl::Status AddFamily(std::string_view name, std::string_view help, Type type,
                         std::function<std::vector<std::pair<Labels, double>>()> read);
  absl::StatusOr<Family*> FamilyLocked(std::string_view name, std::string_view help, Type type, const Labels& labels)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, Family, std::less<>> families_ ABSL_GUARDED_BY(mu_);
};

// A label value or help text escaped as the text format wants (backslash, double quote in label
// values, newline).
std::string EscapeLabelValue(std::string_view v);
// A sample value as the text format writes it (integers without a fraction, +Inf, NaN).
std::string FormatValue(double v);

}  // namespace basalt::metrics
