// Latency histogram for basalt-bench: log-linear buckets over nanoseconds, ≤ 0.4 % error.
//
// Values below 256 ns have a bucket each; above, every power of two [2^e, 2^(e+1)) is split
// into 128 equal buckets (HdrHistogram's layout with 8 significant bits). A bucket spans at
// most 1/128 of its lower bound and reports its midpoint, so a percentile is off by at most
// 1/256 (0.4 %). 4,480 buckets (35 KiB) cover up to 2^41 ns (36 minutes); larger values land
// in the last bucket.
//
// Thread-safety: one thread records (Record); any thread may read (Count, Percentile, Merge
// from) at the same time and sees a slightly stale but never torn picture — counters are
// relaxed atomics written with plain load+store, no locked instruction per sample. Merge into
// a histogram nobody is recording into.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace basalt::bench {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 7;                       // 128 buckets per power of two
  static constexpr int kMaxShift = 33;                          // top bucket below 2^(33+8) ns
  static constexpr int kBuckets = (kMaxShift + 2) << kSubBits;  // 4,480

  LatencyHistogram() = default;
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;

  // One sample in nanoseconds. Single writer.
  void Record(uint64_t nanos) {
    Bump(&buckets_[BucketOf(nanos)], 1);
    Bump(&count_, 1);
    Bump(&sum_, nanos);
    if (nanos > max_.load(std::memory_order_relaxed)) max_.store(nanos, std::memory_order_relaxed);
  }

  // Adds other's samples to this one.
  void Merge(const LatencyHistogram& other);
  void Clear();

  uint64_t Count() const { return count_.load(std::memory_order_relaxed); }
  uint64_t MaxNanos() const { return max_.load(std::memory_order_relaxed); }
  double MeanNanos() const;
  // The q-quantile (0 < q ≤ 1) in nanoseconds: the midpoint of the bucket holding the sample of
  // rank ceil(q·count), capped by the largest sample. 0 when empty.
  double PercentileNanos(double q) const;
  double PercentileMicros(double q) const { return PercentileNanos(q) / 1e3; }

  // Bucket layout (exposed for tests).
  static int BucketOf(uint64_t nanos);
  static uint64_t BucketLow(int bucket);
  static uint64_t BucketWidth(int bucket);

 private:
  static void Bump(std::atomic<uint64_t>* c, uint64_t by) {
    c->store(c->load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }

  std::array<std::atomic<uint64_t>, kBuckets> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_{0};
  std::atomic<uint64_t> max_{0};
};

}  // namespace basalt::bench
