#include "src/tools/bench/ycsb.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "src/tools/bench/bench_util.h"

namespace basalt::bench {

uint64_t YcsbFnvHash64(uint64_t v) {
  constexpr uint64_t kOffsetBasis = 0xCBF29CE484222325ull;
  constexpr uint64_t kPrime = 1099511628211ull;
  uint64_t h = kOffsetBasis;
  for (int i = 0; i < 8; ++i) {
    h ^= v & 0xff;
    v >>= 8;
    h *= kPrime;
  }
  // Java's Math.abs on a long; Long.MIN_VALUE stays as it is (as 2^63 here).
  if (static_cast<int64_t>(h) < 0 && h != (uint64_t{1} << 63)) h = ~h + 1;
  return h;
}

std::string YcsbKey(uint64_t ordinal) { return absl::StrCat("user", YcsbFnvHash64(ordinal)); }

double Zeta(uint64_t n, double theta) {
  constexpr uint64_t kExact = 1'000'000;
  const uint64_t m = n < kExact ? n : kExact;
  double sum = 0;
  // Smallest terms first: less rounding error.
  for (uint64_t i = m; i >= 1; --i) sum += std::pow(static_cast<double>(i), -theta);
  if (n == m) return sum;
  // sum_{i=m+1..n} f(i) with f(x) = x^-theta, by Euler–Maclaurin:
  //   ∫_m^n f + (f(n) - f(m))/2 + (f'(n) - f'(m))/12, with f'(x) = -theta x^(-theta-1).
  const double a = static_cast<double>(m), b = static_cast<double>(n);
  auto f = [&](double x) { return std::pow(x, -theta); };
  auto df = [&](double x) { return -theta * std::pow(x, -theta - 1); };
  double integral = (std::pow(b, 1 - theta) - std::pow(a, 1 - theta)) / (1 - theta);
  return sum + integral + (f(b) - f(a)) / 2 + (df(b) - df(a)) / 12;
}

ZipfianGenerator::ZipfianGenerator(uint64_t items, double theta, double zetan)
    : items_(items), theta_(theta), zetan_(zetan) {
  alpha_ = 1 / (1 - theta);
  const double zeta2 = 1 + std::pow(0.5, theta);
  eta_ = (1 - std::pow(2.0 / static_cast<double>(items), 1 - theta)) / (1 - zeta2 / zetan);
  half_pow_theta_ = std::pow(0.5, theta);
}

uint64_t ZipfianGenerator::Next(double u) const {
  const double uz = u * zetan_;
  if (uz < 1.0) return 0;
  if (uz < 1.0 + half_pow_theta_) return 1;
  uint64_t v = static_cast<uint64_t>(static_cast<double>(items_) * std::pow(eta_ * u - eta_ + 1, alpha_));
  return v < items_ ? v : items_ - 1;
}

ScrambledZipfianGenerator::ScrambledZipfianGenerator(uint64_t records, uint64_t seed)
    : records_(records), rng_(seed) {
  // zeta(10^10, 0.99) ≈ 26.469 (YCSB hard-codes 26.46902820178302); computed once per process.
  static const ZipfianGenerator* const shared = new ZipfianGenerator(
      kYcsbScrambledItems, kYcsbZipfianTheta, Zeta(kYcsbScrambledItems, kYcsbZipfianTheta));
  zipf_ = shared;
}

uint64_t ScrambledZipfianGenerator::Next() {
  uint64_t z = zipf_->Next(UnitDouble(SplitMix64(&rng_)));
  return YcsbFnvHash64(z) % records_;
}

uint64_t SkewedLatestGenerator::Next(uint64_t latest) {
  if (latest != items_) {
    if (latest > items_ && items_ > 0) {
      for (uint64_t i = items_ + 1; i <= latest; ++i) zetan_ += std::pow(static_cast<double>(i), -kYcsbZipfianTheta);
    } else {
      zetan_ = Zeta(latest, kYcsbZipfianTheta);
    }
    items_ = latest;
    zipf_.emplace(items_, kYcsbZipfianTheta, zetan_);
  }
  uint64_t back = zipf_->Next(UnitDouble(SplitMix64(&rng_)));
  return latest - 1 - back;
}

uint64_t InsertOrdinals::Take() {
  absl::MutexLock l(&mu_);
  return next_++;
}

void InsertOrdinals::Ack(uint64_t ordinal) {
  absl::MutexLock l(&mu_);
  if (ordinal != acknowledged_) {
    done_above_.insert(ordinal);
    return;
  }
  ++acknowledged_;
  for (auto it = done_above_.begin(); it != done_above_.end() && *it == acknowledged_;) {
    ++acknowledged_;
    it = done_above_.erase(it);
  }
}

uint64_t InsertOrdinals::Acknowledged() const {
  absl::MutexLock l(&mu_);
  return acknowledged_;
}

}  // namespace basalt::bench
