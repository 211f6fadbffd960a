#include "src/tools/bench/histogram.h"

#include <algorithm>
#include <cmath>

namespace basalt::bench {

int LatencyHistogram::BucketOf(uint64_t nanos) {
  constexpr uint64_t kExact = uint64_t{2} << kSubBits;  // 256: one bucket per nanosecond below
  if (nanos < kExact) return static_cast<int>(nanos);
  int top = 63 - __builtin_clzll(nanos);  // ≥ 8
  int shift = top - kSubBits;             // ≥ 1
  if (shift > kMaxShift) return kBuckets - 1;
  return (shift << kSubBits) + static_cast<int>(nanos >> shift);
}

uint64_t LatencyHistogram::BucketLow(int bucket) {
  if (bucket < (2 << kSubBits)) return static_cast<uint64_t>(bucket);
  int shift = (bucket >> kSubBits) - 1;
  uint64_t mantissa = static_cast<uint64_t>((bucket & ((1 << kSubBits) - 1)) | (1 << kSubBits));
  return mantissa << shift;
}

uint64_t LatencyHistogram::BucketWidth(int bucket) {
  if (bucket < (2 << kSubBits)) return 1;
  return uint64_t{1} << ((bucket >> kSubBits) - 1);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (int i = 0; i < kBuckets; ++i) Bump(&buckets_[i], other.buckets_[i].load(std::memory_order_relaxed));
  Bump(&count_, other.Count());
  Bump(&sum_, other.sum_.load(std::memory_order_relaxed));
  if (other.MaxNanos() > MaxNanos()) max_.store(other.MaxNanos(), std::memory_order_relaxed);
}

void LatencyHistogram::Clear() {
  for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
  count_.store(0, std::memory_order_relaxed);
  sum_.store(0, std::memory_order_relaxed);
  max_.store(0, std::memory_order_relaxed);
}

double LatencyHistogram::MeanNanos() const {
  uint64_t n = Count();
  return n == 0 ? 0 : static_cast<double>(sum_.load(std::memory_order_relaxed)) / n;
}

double LatencyHistogram::PercentileNanos(double q) const {
  // Sum the buckets rather than trusting count_: a reader racing the writer may see a bucket
  // bumped before the count, or after.
  uint64_t total = 0;
  for (const auto& b : buckets_) total += b.load(std::memory_order_relaxed);
  if (total == 0) return 0;
  uint64_t rank = static_cast<uint64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * total));
  rank = std::max<uint64_t>(rank, 1);
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += buckets_[i].load(std::memory_order_relaxed);
    if (seen >= rank) {
      double mid = BucketLow(i) + (BucketWidth(i) - 1) / 2.0;
      double max = static_cast<double>(MaxNanos());
      return max > 0 ? std::min(mid, max) : mid;
    }
  }
  return static_cast<double>(MaxNanos());
}

}  // namespace basalt::bench
