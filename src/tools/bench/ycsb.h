// YCSB's key space and request distribution, for `basalt-bench server ycsb` (docs/DESIGN.md, §2).
// Written from YCSB's documented behaviour (CoreWorkload, ScrambledZipfianGenerator) and the
// algorithm it cites — Gray et al., "Quickly Generating Billion-Record Synthetic Databases",
// SIGMOD 1994 — so that the rows and the popularity skew match what YCSB would produce:
//
//   - row key of record i: "user" + decimal(FNV-1a-64(i)), FNV over the 8 little-endian bytes
//     of i, made non-negative as Java's Math.abs (YCSB's default hashed insert order);
//   - request distribution "zipfian": a Zipfian draw with theta 0.99 over a fixed space of 10^10
//     items, then FNV-hashed into [0, records) (ScrambledZipfian), so popular keys are spread
//     over the key space instead of clustering at its start;
//   - request distribution "latest" (workload D): the newest records most popular, a Zipfian
//     draw counted back from the newest acknowledged insert (SkewedLatestGenerator);
//   - inserts take the next ordinal; "latest" only chooses among inserts already acknowledged,
//     all below them acknowledged too (AcknowledgedCounterGenerator); "zipfian" among the
//     records there when the run started.
//
// Thread-safety: the functions are pure; a generator is used by one thread (each thread keeps
// its own, seeded differently).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace basalt::bench {

inline constexpr double kYcsbZipfianTheta = 0.99;
// ScrambledZipfian draws from this many items before hashing into the record range.
inline constexpr uint64_t kYcsbScrambledItems = 10'000'000'000ull;

// YCSB's fnvhash64: FNV-1a over the 8 bytes of v (least significant first), then |h| as a
// signed 64-bit value.
uint64_t YcsbFnvHash64(uint64_t v);

// "user" + decimal(YcsbFnvHash64(ordinal)).
std::string YcsbKey(uint64_t ordinal);

// zeta(n, theta) = sum_{i=1..n} i^-theta: exact up to 10^6 terms, Euler–Maclaurin for the rest
// (relative error far below 1e-9 for n up to 10^10 at theta 0.99).
double Zeta(uint64_t n, double theta);

// A uniform double in [0, 1) from 53 random bits.
inline double UnitDouble(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// Zipfian over [0, items): item 0 the most popular, P(i) ∝ (i+1)^-theta (Gray et al.'s
// closed-form inverse, as YCSB's ZipfianGenerator).
class ZipfianGenerator {
 public:
  ZipfianGenerator(uint64_t items, double theta, double zetan);
  // u uniform in [0, 1).
  uint64_t Next(double u) const;
  uint64_t items() const { return items_; }

 private:
  uint64_t items_;
  double theta_, zetan_, alpha_, eta_, half_pow_theta_;
};

// YCSB's ScrambledZipfianGenerator over [0, records).
class ScrambledZipfianGenerator {
 public:
  explicit ScrambledZipfianGenerator(uint64_t records, uint64_t seed);
  // With inserts during a run, YCSB draws over the records plus twice the inserts it expects and
  // redraws a key not inserted yet; basalt-bench draws over the records there when the run
  // started, so each rank stays on one row (hashing into a growing count would move them all).
  uint64_t Next();

 private:
  uint64_t records_;
  uint64_t rng_;
  const ZipfianGenerator* zipf_;  // shared, built once
};

// YCSB's SkewedLatestGenerator: an ordinal in [0, latest), latest - 1 the most popular, by a
// Zipfian draw (theta 0.99) over `latest` items counted back from the newest. zeta(latest) is
// kept and extended term by term as latest grows, as YCSB's ZipfianGenerator does.
class SkewedLatestGenerator {
 public:
  explicit SkewedLatestGenerator(uint64_t seed) : rng_(seed) {}
  // latest > 0.
  uint64_t Next(uint64_t latest);

 private:
  uint64_t rng_;
  uint64_t items_ = 0;
  double zetan_ = 0;
  std::optional<ZipfianGenerator> zipf_;
};

// The key space of a run with inserts: ordinals [0, records) are loaded; an insert takes the
// next ordinal (Take) and reports it done (Ack); Acknowledged() is the count of ordinals below
// which every insert is done, what reads choose from (YCSB's AcknowledgedCounterGenerator).
// Thread-safe.
class InsertOrdinals {
 public:
  explicit InsertOrdinals(uint64_t records) : next_(records), acknowledged_(records) {}
  uint64_t Take();
  void Ack(uint64_t ordinal);
  uint64_t Acknowledged() const;

 private:
  mutable absl::Mutex mu_;
  uint64_t next_ ABSL_GUARDED_BY(mu_);
  uint64_t acknowledged_ ABSL_GUARDED_BY(mu_);
  std::set<uint64_t> done_above_ ABSL_GUARDED_BY(mu_);  // acked ordinals > acknowledged_
};

}  // namespace basalt::bench
