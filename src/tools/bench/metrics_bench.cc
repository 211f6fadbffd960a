// The cost of counting on the data path (docs/DESIGN.md §11: metrics must not slow it): the sharded
// Counter and the Histogram of common/metrics.h beside one shared atomic (what a naive counter
// is), from 1 and 2 threads. Google Benchmark.
//
//   build/src/tools/bench/metrics-bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <atomic>
#include <cstdint>

#include "benchmark/benchmark.h"
#include "common/metrics.h"

namespace {

basalt::metrics::Counter sharded;
std::atomic<uint64_t> shared{0};
basalt::metrics::Histogram latency(basalt::metrics::LatencyBucketsMicros(), 1e6);

void ShardedCounter(benchmark::State& state) {
  for (auto _ : state) sharded.Add();
}
BENCHMARK(ShardedCounter)->Threads(1)->Threads(2);

void SharedAtomic(benchmark::State& state) {
  for (auto _ : state) shared.fetch_add(1, std::memory_order_relaxed);
}
BENCHMARK(SharedAtomic)->Threads(1)->Threads(2);

void HistogramObserve(benchmark::State& state) {
  uint64_t v = 0;
  for (auto _ : state) latency.Observe((v += 37) % 20000);  // 0–20 ms across the buckets
}
BENCHMARK(HistogramObserve)->Threads(1)->Threads(2);

}  // namespace

BENCHMARK_MAIN();
