// What the server benchmarks share (server_bench.cc: latency, scan, load, split, locate;
// server_ycsb.cc: YCSB): their flags, tables, worker threads, histograms, the progress line and
// the Echo floor.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "basalt/client.h"
#include "grpcpp/grpcpp.h"
#include "proto/basalt.grpc.pb.h"
#include "common/status.h"
#include "src/tools/bench/bench_util.h"
#include "src/tools/bench/histogram.h"
#include "src/tools/bench/ycsb.h"
#include "transport/grpc/grpc_settings.h"


namespace basalt::bench {

using Clock = std::chrono::steady_clock;

constexpr char kFamily[] = "f";

constexpr int kYcsbFields = 10;         // YCSB fieldcount
constexpr size_t kYcsbFieldBytes = 100;  // YCSB fieldlength
// The Echo floor's channel: a tag of its own so it gets its own TCP connection, as a client's.
constexpr int kEchoChannelTag = 0x4563686f;

// Prints the error (ending the progress line); the command's exit code, 1.
int Fail(const absl::Status& s);

uint64_t ElapsedNanos(Clock::time_point t0, Clock::time_point t1);
double Seconds(Clock::time_point t0, Clock::time_point t1);
// CPU time (user + system) process `pid` has used, in microseconds (/proc/<pid>/stat); NotFound
// naming the pid when there is no such process.
absl::StatusOr<double> ProcessCpuMicros(int64_t pid);

struct ServerOptions {
  std::string address;
  std::string table;
  ConnectionOptions conn;
};

absl::StatusOr<ServerOptions> ParseServerOptions(const Flags& flags, const std::string& default_table);

absl::StatusOr<Durability> ParseDurability(const std::string& s);

const char* DurabilityName(Durability d);

// A list of positive integers (also 0 with allow_zero).
absl::StatusOr<std::vector<int64_t>> ParseIntList(const Flags& flags, const std::string& name, const std::string& def,
                                                  bool allow_zero = false);

// The server's HBase port and its process, as the HBase port's benchmarks take them: --hbase
// (HOST:PORT) and --server_pid, both required (InvalidArgument, naming them).
struct HBasePortTarget {
  std::string address;  // HOST:PORT, as given
  std::string host;
  int port = 0;
  int64_t pid = 0;
};
absl::StatusOr<HBasePortTarget> ParseHBasePortTarget(const Flags& flags);
// A connection to the server with `server.table` made (family f) unless it exists.
absl::StatusOr<std::unique_ptr<Connection>> ConnectWithTable(const ServerOptions& server);
// The row keys those benchmarks write: "row%08d".
std::string BenchRowKey(int64_t i);

// Creates `name` with family f unless it exists; pre-split at `split_keys` (an existing table
// must have as many regions).
absl::Status EnsureTable(Admin* admin, const std::string& name, const std::vector<std::string>& split_keys = {});

// Random printable bytes (as YCSB's values), a pool to take values from at random offsets.
std::string RandomPool(size_t size, uint64_t seed);

// The first error of any worker thread.
class ErrorSlot {
 public:
  void Set(const absl::Status& s) {
    absl::MutexLock l(&mu_);
    if (status_.ok()) status_ = s;
    failed_.store(true, std::memory_order_relaxed);
  }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  absl::Status status() const {
    absl::MutexLock l(&mu_);
    return status_;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Status status_;
  std::atomic<bool> failed_{false};
};

// Runs fn(t) for t in [0, n) on n threads (on the calling thread when n == 1).
void RunOnThreads(int n, const std::function<void(int)>& fn);

using Histograms = std::vector<std::unique_ptr<LatencyHistogram>>;

Histograms MakeHistograms(int n);

void MergeInto(const Histograms& from, LatencyHistogram* into);

// Prints the progress line once a second from what it is told to watch: the operations recorded
// in a set of histograms (ops done, ops/s over the last second, p50 so far) or, with no
// histograms, a plain counter.
class Monitor {
 public:
  Monitor() : thread_([this] { Loop(); }) {}
  ~Monitor() { Stop(); }

  // Stops the line (before anything else is printed); idempotent.
  void Stop() {
    {
      absl::MutexLock l(&mu_);
      stop_ = true;
    }
    if (thread_.joinable()) thread_.join();
    GlobalProgress().Done();
  }

  void Watch(std::string label, std::vector<const LatencyHistogram*> hists,
             const std::atomic<uint64_t>* counter = nullptr) {
    absl::MutexLock l(&mu_);
    label_ = std::move(label);
    hists_ = std::move(hists);
    counter_ = counter;
    last_ops_ = OpsLocked(nullptr);  // the histograms may go on from an earlier round
    last_time_ = NowSeconds();
  }

 private:
  // Operations so far; with histograms, their p50 into *p50 (when not null).
  uint64_t OpsLocked(double* p50_us) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (hists_.empty()) return counter_ != nullptr ? counter_->load(std::memory_order_relaxed) : 0;
    auto merged = std::make_unique<LatencyHistogram>();
    for (const auto* h : hists_) merged->Merge(*h);
    if (p50_us != nullptr) *p50_us = merged->PercentileMicros(0.5);
    return merged->Count();
  }

  void Loop() {
    absl::MutexLock l(&mu_);
    for (;;) {
      mu_.AwaitWithTimeout(absl::Condition(&stop_), absl::Seconds(1));
      if (stop_) return;
      double now = NowSeconds();
      double p50_us = 0;
      uint64_t ops = OpsLocked(&p50_us);
      std::string p50 = hists_.empty() ? "" : absl::StrFormat(", p50 %.1f us", p50_us);
      double rate = now > last_time_ ? (ops - last_ops_) / (now - last_time_) : 0;
      last_ops_ = ops;
      last_time_ = now;
      GlobalProgress().Update(absl::StrFormat("[%s] %d ops, %.0f ops/s%s", label_, ops, rate, p50), true);
    }
  }

  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::string label_ ABSL_GUARDED_BY(mu_);
  std::vector<const LatencyHistogram*> hists_ ABSL_GUARDED_BY(mu_);
  const std::atomic<uint64_t>* counter_ ABSL_GUARDED_BY(mu_) = nullptr;
  uint64_t last_ops_ ABSL_GUARDED_BY(mu_) = 0;
  double last_time_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // last: starts once the fields above exist
};

std::vector<const LatencyHistogram*> Pointers(const Histograms& h);

// p50/p95/p99/p99.9 in microseconds, names prefixed; with_mean_max: also mean and max.
void AddPercentiles(Record* rec, const std::string& prefix, const LatencyHistogram& h, bool with_mean_max);

// The floor: the server's Echo service through the generated stub, on a channel of its own with
// the client's channel arguments.
std::unique_ptr<rpc::Echo::Stub> NewEchoStub(const std::string& address);

// One Echo call with the client's deadline; DataLoss when the reply is not the size asked.
absl::Status EchoOnce(rpc::Echo::Stub* echo, const rpc::EchoRequest& req, absl::Duration timeout);

// The server's resident memory and version into the summary (best effort: a failure is a note).
void AddServerStatus(Admin* admin, Report* report);

std::string SizeLabel(int64_t size);

}  // namespace basalt::bench
