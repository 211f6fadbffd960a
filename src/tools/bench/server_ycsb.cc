// `basalt-bench server ycsb`, `scan`, `load`, `split`, `locate` and `snapshot` (server_bench.cc has
// `latency`): YCSB's core workloads A to F against a running server, over a sweep of client
// threads and target rates, and the benchmarks that use YCSB's records.
#include "src/tools/bench/server_bench_common.h"
#include "src/tools/bench/tcp_echo_floor.h"

#include <atomic>
#include <thread>

#include "absl/functional/function_ref.h"
#include "absl/strings/match.h"
#include "src/tools/bench/snapshot_bench.h"

namespace basalt::bench {

// ------------------------------------------------------------------ YCSB

namespace {

// The whole machine's CPU from /proc/stat's first line, in clock ticks: busy (user, nice,
// system, irq, softirq; guest time is inside user) and stolen by the hypervisor. All zero when
// it cannot be read.
struct MachineCpu {
  uint64_t busy = 0, kernel = 0, steal = 0, all = 0;  // kernel: system, irq, softirq (inside busy)
};

MachineCpu ReadMachineCpu() {
  MachineCpu c;
  std::ifstream in("/proc/stat");
  std::string label;
  uint64_t v[8] = {};
  if (!(in >> label) || label != "cpu") return c;
  for (uint64_t& x : v) {
    if (!(in >> x)) return MachineCpu{};
  }
  // user nice system idle iowait irq softirq steal
  c.busy = v[0] + v[1] + v[2] + v[5] + v[6];
  c.kernel = v[2] + v[5] + v[6];
  c.steal = v[7];
  c.all = c.busy + v[3] + v[4] + c.steal;
  return c;
}

struct YcsbWorkload {
  char name;
  // Operation proportions (YCSB's readproportion, updateproportion, insertproportion,
  // scanproportion, readmodifywriteproportion), summing to 1.
  double read = 0, update = 0, insert = 0, scan = 0, rmw = 0;
  bool latest = false;  // requestdistribution=latest (D) instead of zipfian
  bool echo = false;    // not YCSB's: the bare-gRPC floor, Echo calls replying a record's bytes
};

absl::StatusOr<YcsbWorkload> ParseWorkload(const std::string& s) {
  YcsbWorkload w;
  if (s == "echo" || s == "Echo") {
    w.name = 'e';
    w.echo = true;
    return w;
  }
  // YCSB's workloads/workload[a-f] property files; W is ours: every op an update.
  w.name = s.size() == 1 ? static_cast<char>(std::toupper(static_cast<unsigned char>(s[0]))) : '?';
  switch (w.name) {
    case 'A': w.read = w.update = 0.5; return w;
    case 'B': w.read = 0.95, w.update = 0.05; return w;
    case 'C': w.read = 1; return w;
    case 'D': w.read = 0.95, w.insert = 0.05, w.latest = true; return w;
    case 'E': w.scan = 0.95, w.insert = 0.05; return w;
    case 'F': w.read = w.rmw = 0.5; return w;
    case 'W': w.update = 1; return w;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown workload '", s, "' (YCSB's A to F; W: updates only; echo: the bare-gRPC floor)"));
  }
}

std::string WorkloadLabel(const YcsbWorkload& w) { return w.echo ? "echo" : std::string(1, w.name); }

std::string FieldName(int i) { return absl::StrCat("field", i); }

// A YCSB record: field0..field9, 100 random printable bytes each.
basalt::Put YcsbRecord(uint64_t ordinal, const std::string& pool, uint64_t* rng, Durability durability) {
  basalt::Put put(YcsbKey(ordinal));
  for (int f = 0; f < kYcsbFields; ++f) {
    put.Add(kFamily, FieldName(f), pool.substr(SplitMix64(rng) % (pool.size() - kYcsbFieldBytes), kYcsbFieldBytes));
  }
  put.SetDurability(durability);
  return put;
}

// True when a sample of the records (the first, the last, and 14 between) is present whole.
absl::StatusOr<bool> HasRecords(Table* table, uint64_t records) {
  uint64_t rng = 5;
  for (int i = 0; i < 16; ++i) {
    uint64_t ordinal = i == 0 ? 0 : i == 1 ? records - 1 : SplitMix64(&rng) % records;
    basalt::Get get(YcsbKey(ordinal));
    get.AddFamily(kFamily);
    BASALT_ASSIGN_OR_RETURN(Result r, table->Get(get));
    if (r.size() != kYcsbFields) return false;
  }
  return true;
}

struct LoadResult {
  uint64_t rows = 0;
  double seconds = 0;
};

// Inserts records [0, records) through one BufferedMutator fed by `threads` threads.
absl::StatusOr<LoadResult> YcsbLoad(Connection* conn, const std::string& table, uint64_t records, int threads,
                                    Durability durability, Monitor* monitor) {
  auto mutator = conn->GetBufferedMutator(table);
  const std::string pool = RandomPool(1 << 16, 23);
  std::atomic<uint64_t> done{0};
  ErrorSlot error;
  monitor->Watch(absl::StrFormat("ycsb load %d records", records), {}, &done);
  auto t0 = Clock::now();
  RunOnThreads(threads, [&](int t) {
    uint64_t rng = 1000 + t;
    for (uint64_t i = t; i < records && !error.failed(); i += threads) {
      absl::Status s = mutator->Mutate(YcsbRecord(i, pool, &rng, durability));
      if (!s.ok()) {
        error.Set(s);
        return;
      }
      done.fetch_add(1, std::memory_order_relaxed);
    }
  });
  absl::Status closed = mutator->Close();
  LoadResult r{done.load(), Seconds(t0, Clock::now())};
  monitor->Watch("ycsb load done", {});
  if (error.failed()) return error.status();
  BASALT_RETURN_IF_ERROR(closed);
  return r;
}

// YCSB's maxscanlength, scanlengthdistribution=uniform: a scan reads 1 to 100 rows.
constexpr uint64_t kYcsbMaxScanLength = 100;

struct YcsbRun {
  uint64_t misses = 0;  // reads that found no row
  double seconds = 0;
  // The machine's CPU over the recorded seconds (ReadMachineCpu), in clock ticks.
  uint64_t cpu_busy_ticks = 0, cpu_kernel_ticks = 0, cpu_steal_ticks = 0, cpu_all_ticks = 0;
  // Per operation kind (YCSB's READ, UPDATE, INSERT, SCAN, READ-MODIFY-WRITE, and Echo).
  LatencyHistogram read_h, update_h, insert_h, scan_h, rmw_h, echo_h;
  uint64_t Ops() const {
    return read_h.Count() + update_h.Count() + insert_h.Count() + scan_h.Count() + rmw_h.Count() + echo_h.Count();
  }
};

// What a YCSB run drives besides the table: the key space that inserts grow, and for the echo
// floor, the server's Echo service.
struct YcsbTargets {
  Table* table = nullptr;
  InsertOrdinals* ordinals = nullptr;
  rpc::Echo::Stub* echo = nullptr;
  const TcpEchoFloor* tcp_echo = nullptr;  // --transport=tcp: the echo floor is the TCP path's
  absl::Duration timeout;
  // > 0 (workload C only): each thread keeps this many Gets in flight through Table::GetAsync,
  // latency from each one's start to its callback.
  int async_window = 0;
};

// The phases of a run, which its client threads follow.
enum YcsbPhase : int { kWarmup, kMeasure, kStop };

// One client thread's figures.
struct YcsbThreadFigures {
  LatencyHistogram read_h, update_h, insert_h, scan_h, rmw_h, echo_h;
  uint64_t misses = 0;
};

// The client threads of one run (RunYcsbOnce): what they share, and each one's loop. The
// threads start in the warm-up phase; SetPhase moves them on.
class YcsbClients {
 public:
  // See RunYcsbOnce for target_ops_per_s.
  YcsbClients(const YcsbTargets& to, const YcsbWorkload& w, int threads, double target_ops_per_s,
              Durability durability)
      : to_(to),
        w_(w),
        threads_(threads),
        durability_(durability),
        pool_(RandomPool(1 << 16, 29)),
        interval_(target_ops_per_s > 0 ? static_cast<int64_t>(1e9 * threads / target_ops_per_s) : 0) {
    echo_req_.set_reply_size(static_cast<uint32_t>(kYcsbFields * kYcsbFieldBytes));
  }

  void SetPhase(YcsbPhase p) { phase_.store(p, std::memory_order_relaxed); }
  // Operations done in the warm-up (for the progress line only).
  const std::atomic<uint64_t>* warmup_ops() const { return &warmup_ops_; }
  const ErrorSlot& error() const { return error_; }

  // Client thread t in [0, threads): operations until the phase is kStop or any thread failed;
  // the measured phase's latencies into *mine.
  void RunThread(int t, YcsbThreadFigures* mine) {
    ScrambledZipfianGenerator keys(to_.ordinals->Acknowledged(), 0x5eed0000u + t);
    if (to_.async_window > 0) return AsyncReads(mine, &keys);
    SkewedLatestGenerator latest(0x1a7e0000u + t);
    uint64_t rng = 0xa11ce + t;
    int seen = kWarmup;
    Clock::time_point next_start = Clock::now() + interval_ * t / threads_;
    for (;;) {
      const int p = phase_.load(std::memory_order_relaxed);
      if (p == kStop || error_.failed()) return;
      if (p != seen) {  // the schedule starts afresh with the measured phase,
        seen = p;         // each thread's slots offset so that they do not fire together
        next_start = Clock::now() + interval_ * t / threads_;
      }
      Clock::time_point intended;
      if (interval_.count() > 0) {
        intended = next_start;
        next_start += interval_;
        if (intended > Clock::now()) {
          std::this_thread::sleep_until(intended);
          if (phase_.load(std::memory_order_relaxed) != p) continue;
        }
      }
      const double u = UnitDouble(SplitMix64(&rng));
      // Zipfian keys come from the records there when the run started (a fixed range keeps
      // each rank on one row; inserts are still scanned over), latest from every acknowledged
      // one (asked only then: it takes the inserts' lock).
      auto choose_row = [&] {
        return YcsbKey(w_.latest ? latest.Next(to_.ordinals->Acknowledged()) : keys.Next());
      };
      const auto t0 = Clock::now();
      if (interval_.count() == 0) intended = t0;
      LatencyHistogram* h = OneOperation(u, choose_row, &rng, mine);
      if (h == nullptr) return;
      if (p == kMeasure) {
        h->Record(ElapsedNanos(intended, Clock::now()));
      } else {
        warmup_ops_.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }

 private:
  // False (and the error recorded) unless s is OK.
  bool Check(const absl::Status& s) {
    if (s.ok()) return true;
    error_.Set(s);
    return false;
  }

  // Sets one random field of *put to random bytes, with the run's durability.
  void RandomField(uint64_t* rng, basalt::Put* put) const {
    put->Add(kFamily, FieldName(static_cast<int>(SplitMix64(rng) % kYcsbFields)),
             pool_.substr(SplitMix64(rng) % (pool_.size() - kYcsbFieldBytes), kYcsbFieldBytes));
    put->SetDurability(durability_);
  }

  // A whole row (YCSB's readallfields); false on error. A row that is not there is a miss.
  bool ReadRow(const std::string& row, YcsbThreadFigures* mine) {
    basalt::Get get(row);
    get.AddFamily(kFamily);
    absl::StatusOr<Result> r = to_.table->Get(get);
    if (!Check(r.status())) return false;
    if (r->empty()) ++mine->misses;
    return true;
  }

  // YCSB's scan: from `row`, at most `length` rows, all fields; false on error (also when more
  // rows come back).
  bool ScanRows(const std::string& row, uint64_t length) {
    basalt::Scan scan;
    scan.WithStartRow(row).AddFamily(kFamily).SetLimit(length).SetCaching(static_cast<uint32_t>(length));
    auto scanner = to_.table->GetScanner(scan);
    if (!Check(scanner.status())) return false;
    uint64_t rows = 0;
    for (Result result;;) {
      absl::StatusOr<bool> more = (*scanner)->Next(&result);
      if (!Check(more.status())) return false;
      if (!*more) break;
      ++rows;
    }
    if (rows > length) {
      return Check(absl::InternalError(absl::StrCat("a scan limited to ", length, " rows returned ", rows)));
    }
    return true;
  }

  // One operation of the workload's mix, its kind chosen by u (uniform in [0, 1)), its row (if
  // it needs one) by choose_row; the histogram of its kind, or null when it failed.
  LatencyHistogram* OneOperation(double u, absl::FunctionRef<std::string()> choose_row, uint64_t* rng,
                                 YcsbThreadFigures* mine) {
    const YcsbWorkload& w = w_;
    if (w.echo) {
      const absl::Status s = to_.tcp_echo != nullptr ? to_.tcp_echo->Call(choose_row(), to_.timeout)
                                                     : EchoOnce(to_.echo, echo_req_, to_.timeout);
      if (!Check(s)) return nullptr;
      return &mine->echo_h;
    }
    if (u < w.read) {
      if (!ReadRow(choose_row(), mine)) return nullptr;
      return &mine->read_h;
    }
    if (u < w.read + w.update) {
      basalt::Put put(choose_row());  // YCSB's update writes one random field (writeallfields=false)
      RandomField(rng, &put);
      if (!Check(to_.table->Put(put))) return nullptr;
      return &mine->update_h;
    }
    if (u < w.read + w.update + w.insert) {
      const uint64_t ordinal = to_.ordinals->Take();
      if (!Check(to_.table->Put(YcsbRecord(ordinal, pool_, rng, durability_)))) return nullptr;
      to_.ordinals->Ack(ordinal);
      return &mine->insert_h;
    }
    if (u < w.read + w.update + w.insert + w.scan) {
      // From a chosen key, a uniform 1..maxscanlength rows.
      const uint64_t length = 1 + SplitMix64(rng) % kYcsbMaxScanLength;
      if (!ScanRows(choose_row(), length)) return nullptr;
      return &mine->scan_h;
    }
    // Read-modify-write: the whole row, then one field of it, timed together.
    const std::string row = choose_row();
    if (!ReadRow(row, mine)) return nullptr;
    basalt::Put put(row);
    RandomField(rng, &put);
    if (!Check(to_.table->Put(put))) return nullptr;
    return &mine->rmw_h;
  }

  // Workload C with a window of async Gets per thread: the callbacks record under the window's
  // lock (they may run on several of the transport's threads at once). Returns once every Get
  // started has called back.
  void AsyncReads(YcsbThreadFigures* mine, ScrambledZipfianGenerator* keys) {
    struct Window {
      absl::Mutex mu;
      int in_flight ABSL_GUARDED_BY(mu) = 0;
    } win;
    for (;;) {
      const int p = phase_.load(std::memory_order_relaxed);
      if (p == kStop || error_.failed()) break;
      {
        absl::MutexLock l(&win.mu);
        auto room = [&win, this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(win.mu) { return win.in_flight < to_.async_window; };
        if (!win.mu.AwaitWithTimeout(absl::Condition(&room), absl::Milliseconds(100))) continue;
        ++win.in_flight;
      }
      basalt::Get get(YcsbKey(keys->Next()));
      get.AddFamily(kFamily);
      const auto t0 = Clock::now();
      to_.table->GetAsync(std::move(get), [&win, this, mine, p, t0](absl::StatusOr<Result> r) {
        const auto t1 = Clock::now();
        if (!r.ok()) error_.Set(r.status());
        absl::MutexLock l(&win.mu);
        if (r.ok() && r->empty()) ++mine->misses;
        if (p == kMeasure) {
          mine->read_h.Record(ElapsedNanos(t0, t1));
        } else {
          warmup_ops_.fetch_add(1, std::memory_order_relaxed);
        }
        --win.in_flight;
      });
    }
    absl::MutexLock l(&win.mu);  // the callbacks hold `win`: all of them first
    win.mu.Await(absl::Condition(
        +[](Window* w) ABSL_NO_THREAD_SAFETY_ANALYSIS { return w->in_flight == 0; }, &win));
  }

  const YcsbTargets& to_;
  const YcsbWorkload& w_;
  const int threads_;
  const Durability durability_;
  const std::string pool_;                   // the values' bytes, at random offsets
  const std::chrono::nanoseconds interval_;  // between a thread's scheduled starts; 0: unthrottled
  rpc::EchoRequest echo_req_;                // a record's bytes back
  std::atomic<int> phase_{kWarmup};
  std::atomic<uint64_t> warmup_ops_{0};
  ErrorSlot error_;
};

// One timed run: `threads` client threads issue the workload's mix for warmup_seconds (not
// recorded), then `seconds` (recorded). target_ops_per_s > 0: the threads together start that
// many operations a second on a fixed schedule, and latency runs from each operation's
// intended start, so a stall's queueing shows in it (no coordinated omission); 0: each thread
// starts its next operation when the last one ends, latency from the actual start.
absl::Status RunYcsbOnce(const YcsbTargets& to, const YcsbWorkload& w, int threads, double target_ops_per_s,
                         double warmup_seconds, double seconds, Durability durability, Monitor* monitor,
                         YcsbRun* out) {
  std::vector<std::unique_ptr<YcsbThreadFigures>> per(threads);
  for (auto& p : per) p = std::make_unique<YcsbThreadFigures>();
  YcsbClients clients(to, w, threads, target_ops_per_s, durability);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&clients, &per, t] { clients.RunThread(t, per[t].get()); });
  }
  const std::string label = absl::StrFormat("ycsb %s x%d", WorkloadLabel(w), threads);
  monitor->Watch(absl::StrCat(label, " warm-up"), {}, clients.warmup_ops());
  absl::SleepFor(absl::Seconds(warmup_seconds));
  std::vector<const LatencyHistogram*> all;
  for (const auto& p : per) {
    for (const LatencyHistogram* h : {&p->read_h, &p->update_h, &p->insert_h, &p->scan_h, &p->rmw_h, &p->echo_h}) {
      all.push_back(h);
    }
  }
  monitor->Watch(label, all);
  auto t0 = Clock::now();
  const MachineCpu cpu0 = ReadMachineCpu();
  clients.SetPhase(kMeasure);
  absl::SleepFor(absl::Seconds(seconds));
  clients.SetPhase(kStop);
  const MachineCpu cpu1 = ReadMachineCpu();
  for (auto& th : ts) th.join();
  out->seconds = Seconds(t0, Clock::now());
  if (cpu0.all > 0 && cpu1.all > cpu0.all) {  // both read
    out->cpu_busy_ticks = cpu1.busy - cpu0.busy;
    out->cpu_kernel_ticks = cpu1.kernel - cpu0.kernel;
    out->cpu_steal_ticks = cpu1.steal - cpu0.steal;
    out->cpu_all_ticks = cpu1.all - cpu0.all;
  }
  monitor->Watch(absl::StrCat(label, " done"), {});
  if (clients.error().failed()) return clients.error().status();
  for (const auto& p : per) {
    out->read_h.Merge(p->read_h);
    out->update_h.Merge(p->update_h);
    out->insert_h.Merge(p->insert_h);
    out->scan_h.Merge(p->scan_h);
    out->rmw_h.Merge(p->rmw_h);
    out->echo_h.Merge(p->echo_h);
    out->misses += p->misses;
  }
  return absl::OkStatus();
}

struct YcsbSetup {
  ServerOptions server;
  uint64_t records = 0;
  int load_threads = 1;
  Durability durability = Durability::kSyncWal;
  bool skip_load = false;
  bool flush_after_load = false;
  int regions = 1;  // pre-split into this many regions of equal record counts
  bool tcp_echo_in_process = false;  // the TCP floor's loops in this process (tcp_echo_floor.h)
  bool tcp_echo_codec = false;       // the TCP floor decodes requests and encodes replies (ibid.)
};

// Split keys that cut the records' keys into `regions` ranges of equal counts.
std::vector<std::string> RecordSplitKeys(uint64_t records, int regions) {
  std::vector<std::string> keys;
  if (regions <= 1) return keys;
  keys.reserve(records);
  for (uint64_t i = 0; i < records; ++i) keys.push_back(YcsbKey(i));
  std::sort(keys.begin(), keys.end());
  std::vector<std::string> splits;
  for (int r = 1; r < regions; ++r) splits.push_back(keys[records * r / regions]);
  return splits;
}

absl::StatusOr<YcsbSetup> ParseYcsbSetup(const Flags& flags) {
  YcsbSetup s;
  BASALT_ASSIGN_OR_RETURN(s.server, ParseServerOptions(flags, "usertable"));
  int64_t records = flags.Int("records", 100000);
  if (records <= 0) return absl::InvalidArgumentError("--records must be positive");
  s.records = static_cast<uint64_t>(records);
  s.load_threads = static_cast<int>(flags.Int("load_threads", 1));
  if (s.load_threads <= 0) return absl::InvalidArgumentError("--load_threads must be positive");
  BASALT_ASSIGN_OR_RETURN(s.durability, ParseDurability(flags.Str("durability", "SYNC_WAL")));
  s.skip_load = flags.Bool("skip_load");
  s.flush_after_load = flags.Bool("flush_after_load");
  s.tcp_echo_in_process = flags.Bool("tcp_echo_in_process");
  s.tcp_echo_codec = flags.Bool("tcp_echo_codec");
  const int64_t regions = flags.Int("regions", 1);
  if (regions < 1 || regions > 1000 || static_cast<uint64_t>(regions) > s.records) {
    return absl::InvalidArgumentError("--regions must be between 1 and min(1000, --records)");
  }
  s.regions = static_cast<int>(regions);
  return s;
}

// Creates the table and loads it (unless --skip_load finds the records there); the load's
// figures go into the report's summary.
absl::Status PrepareYcsb(Connection* conn, Admin* admin, const YcsbSetup& s, Monitor* monitor, Report* report,
                         std::optional<LoadResult>* loaded = nullptr) {
  BASALT_RETURN_IF_ERROR(EnsureTable(admin, s.server.table, RecordSplitKeys(s.records, s.regions)));
  report->summary.push_back(Num("regions", s.regions));
  auto table = conn->GetTable(s.server.table);
  if (s.skip_load) {
    BASALT_ASSIGN_OR_RETURN(bool present, HasRecords(table.get(), s.records));
    if (present) {
      report->summary.push_back(Text("load", "skipped (records present)"));
      return absl::OkStatus();
    }
    report->notes.push_back("--skip_load: the records were not all present, so they were loaded");
  }
  BASALT_ASSIGN_OR_RETURN(LoadResult load,
                          YcsbLoad(conn, s.server.table, s.records, s.load_threads, s.durability, monitor));
  report->summary.push_back(Num("load_records", static_cast<double>(load.rows)));
  report->summary.push_back(Num("load_seconds", load.seconds, 2));
  report->summary.push_back(Num("load_records_per_s", load.seconds > 0 ? load.rows / load.seconds : 0));
  if (loaded != nullptr) *loaded = load;
  if (s.flush_after_load) {
    monitor->Watch("flush", {});
    BASALT_RETURN_IF_ERROR(admin->Flush(s.server.table));
  }
  return absl::OkStatus();
}

std::string YcsbDescription(const YcsbSetup& s) {
  return absl::StrFormat(
      "table %s: %d records of %d fields x %d B (family f, field0..field%d), keys \"user\"+FNV64(i); "
      "writes %s",
      s.server.table, s.records, kYcsbFields, kYcsbFieldBytes, kYcsbFields - 1, DurabilityName(s.durability));
}

// Connects and prepares the YCSB table (PrepareYcsb, with its own progress monitor): what
// scan, load and split start with.
absl::StatusOr<std::unique_ptr<Connection>> ConnectAndPrepare(const YcsbSetup& s, Report* report,
                                                              std::optional<LoadResult>* loaded = nullptr) {
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn, Connection::Open(s.server.conn));
  auto admin = conn->GetAdmin();
  Monitor monitor;
  absl::Status prepared = PrepareYcsb(conn.get(), admin.get(), s, &monitor, report, loaded);
  monitor.Stop();
  BASALT_RETURN_IF_ERROR(prepared);
  return conn;
}

// --async_window's rule: workload C alone, without --target.
absl::Status CheckAsyncWindow(int64_t async_window, const std::vector<YcsbWorkload>& workloads,
                              const std::vector<int64_t>& targets) {
  if (async_window < 0 || async_window > 4096) return absl::InvalidArgumentError("--async_window must be 0..4096");
  for (const YcsbWorkload& w : workloads) {
    if (async_window > 0 && (w.name != 'C' || targets != std::vector<int64_t>{0})) {
      return absl::InvalidArgumentError("--async_window is for workload C alone, without --target");
    }
  }
  return absl::OkStatus();
}

// The floor a run's echo workload calls: with --transport=tcp the TCP path's (tcp_echo_floor.h),
// else the server's bare-gRPC Echo.
struct EchoFloors {
  std::unique_ptr<rpc::Echo::Stub> grpc;
  std::unique_ptr<TcpEchoFloor> tcp;
};
absl::StatusOr<EchoFloors> StartEchoFloor(const YcsbSetup& setup) {
  EchoFloors floors;
  if (setup.server.conn.transport != TransportChoice::kTcp) {
    floors.grpc = NewEchoStub(setup.server.address);
    return floors;
  }
  // The TCP path's loops, as many as the server's default (one per core), and its client, as
  // many connections as the table's.
  const int loops = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  BASALT_ASSIGN_OR_RETURN(floors.tcp,
                          TcpEchoFloor::Start(loops, setup.server.conn.tcp_connections, setup.tcp_echo_in_process,
                                              setup.tcp_echo_codec));
  return floors;
}

}  // namespace

int RunServerYcsb(const Flags& flags, Report* report) {
  auto setup = ParseYcsbSetup(flags);
  if (!setup.ok()) return Fail(setup.status());
  std::vector<YcsbWorkload> workloads;
  bool with_echo = false;
  for (const auto& s : flags.List("workload", "A,C")) {
    auto w = ParseWorkload(s);
    if (!w.ok()) return Fail(w.status());
    with_echo |= w->echo;
    workloads.push_back(*w);
  }
  auto threads = ParseIntList(flags, "threads", "1,4,16");
  if (!threads.ok()) return Fail(threads.status());
  auto targets = ParseIntList(flags, "target", "0", /*allow_zero=*/true);
  if (!targets.ok()) return Fail(targets.status());
  const double seconds = flags.Double("seconds", 10);
  const double warmup_seconds = flags.Double("warmup_seconds", 2);
  const int64_t async_window = flags.Int("async_window", 0);
  flags.RefuseUnused();
  if (workloads.empty()) return Fail(absl::InvalidArgumentError("--workload is empty"));
  if (absl::Status s = CheckAsyncWindow(async_window, workloads, *targets); !s.ok()) return Fail(s);
  if (seconds <= 0 || warmup_seconds < 0) {
    return Fail(absl::InvalidArgumentError("need --seconds > 0, --warmup_seconds >= 0"));
  }
  if (with_echo && setup->server.conn.address.empty()) {
    return Fail(absl::InvalidArgumentError("the echo floor is one server's: with --zookeeper, leave echo out"));
  }

  auto conn = Connection::Open(setup->server.conn);
  if (!conn.ok()) return Fail(conn.status());
  auto admin = (*conn)->GetAdmin();
  Monitor monitor;
  auto fail = [&](const absl::Status& st) {
    monitor.Stop();
    return Fail(st);
  };
  if (auto s = PrepareYcsb(conn->get(), admin.get(), *setup, &monitor, report); !s.ok()) return fail(s);
  auto table = (*conn)->GetTable(setup->server.table);
  InsertOrdinals ordinals(setup->records);
  EchoFloors floors;
  if (with_echo) {
    absl::StatusOr<EchoFloors> started = StartEchoFloor(*setup);
    if (!started.ok()) return fail(started.status());
    floors = *std::move(started);
  }
  const YcsbTargets to{table.get(), &ordinals, floors.grpc.get(), floors.tcp.get(), setup->server.conn.timeout,
                       static_cast<int>(async_window)};

  // (threads, target) -> sums over the runs of C and of echo: ops/s, and ops and busy ticks
  struct Sums {
    double ops_per_s = 0, ops = 0, busy_ticks = 0;
  };
  std::map<std::pair<int64_t, int64_t>, Sums> c_sums, echo_sums;
  const double tick_us = 1e6 / static_cast<double>(sysconf(_SC_CLK_TCK));
  for (const YcsbWorkload& w : workloads) {
    for (int64_t n : *threads) {
      for (int64_t target : *targets) {
        YcsbRun run;
        absl::Status s = RunYcsbOnce(to, w, static_cast<int>(n), static_cast<double>(target), warmup_seconds,
                                     seconds, setup->durability, &monitor, &run);
        if (!s.ok()) return fail(s);
        const double ops_per_s = run.Ops() / run.seconds;
        for (auto* sums : {w.name == 'C' ? &c_sums : nullptr, w.echo ? &echo_sums : nullptr}) {
          if (sums == nullptr) continue;
          Sums& into = (*sums)[{n, target}];
          into.ops_per_s += ops_per_s;
          into.ops += static_cast<double>(run.Ops());
          into.busy_ticks += static_cast<double>(run.cpu_busy_ticks);
        }
        Record rec{Text("workload", WorkloadLabel(w)), Num("threads", static_cast<double>(n)),
                   Num("target", static_cast<double>(target)), Num("ops", static_cast<double>(run.Ops())),
                   Num("ops_per_s", ops_per_s)};
        // CPU of the whole machine (client, server and the rest) per operation: steadier than
        // ops/s on a VM whose hypervisor steals a varying share.
        if (run.cpu_all_ticks > 0 && run.Ops() > 0) {
          rec.push_back(Num("cpu_us_per_op", run.cpu_busy_ticks * tick_us / static_cast<double>(run.Ops()), 1));
          rec.push_back(Num("kernel_pct", run.cpu_busy_ticks > 0 ? 100.0 * run.cpu_kernel_ticks /
                                                                       static_cast<double>(run.cpu_busy_ticks)
                                                                 : 0.0, 1));
          rec.push_back(Num("steal_pct", 100.0 * run.cpu_steal_ticks / static_cast<double>(run.cpu_all_ticks), 1));
        }
        struct Kind {
          const char* prefix;
          double proportion;
          const LatencyHistogram* h;
        };
        const Kind kinds[] = {{"read_", w.read, &run.read_h},       {"update_", w.update, &run.update_h},
                              {"insert_", w.insert, &run.insert_h}, {"scan_", w.scan, &run.scan_h},
                              {"rmw_", w.rmw, &run.rmw_h},          {"echo_", w.echo ? 1.0 : 0.0, &run.echo_h}};
        for (const Kind& k : kinds) {
          if (k.proportion > 0) AddPercentiles(&rec, k.prefix, *k.h, false);  // the workload's own kinds
        }
        rec.push_back(Num("read_misses", static_cast<double>(run.misses)));
        report->records.push_back(std::move(rec));
      }
    }
  }
  // C against the echo floor at the same threads and target, over all their runs (alternate
  // them, --workload=C,echo,C,echo, so that drift hits both): ops/s, and CPU per op.
  for (const auto& [key, c] : c_sums) {
    auto e = echo_sums.find(key);
    if (e == echo_sums.end() || e->second.ops_per_s <= 0) continue;
    const std::string suffix =
        absl::StrFormat("x%d%s", key.first, key.second > 0 ? absl::StrCat("_at_", key.second) : "");
    report->summary.push_back(Num("C_vs_echo_ops_" + suffix, c.ops_per_s / e->second.ops_per_s, 2));
    if (c.ops > 0 && e->second.ops > 0 && e->second.busy_ticks > 0) {
      report->summary.push_back(Num("C_vs_echo_cpu_per_op_" + suffix,
                                    (c.busy_ticks / c.ops) / (e->second.busy_ticks / e->second.ops), 2));
    }
  }
  if (ordinals.Acknowledged() > setup->records) {
    report->summary.push_back(Num("inserted_records", static_cast<double>(ordinals.Acknowledged() - setup->records)));
  }
  // The rows' value of the Status call: resident memory after the runs.
  AddServerStatus(admin.get(), report);

  report->title = absl::StrFormat("server YCSB: zipfian (scrambled, theta %.2f), %s", kYcsbZipfianTheta,
                                  setup->server.address);
  report->notes.push_back(YcsbDescription(*setup));
  report->notes.push_back(absl::StrFormat(
      "each run: %g s warm-up (not recorded), then %g s recorded; YCSB's core workloads: A = 50%% read / 50%% "
      "update, B = 95/5, C = 100%% read, D = 95%% read / 5%% insert with the latest records most read, E = 95%% "
      "scan of 1-%d rows (uniform, from a zipfian key, the client's scanner with a row limit) / 5%% insert, F = "
      "50%% read / 50%% read-modify-write (timed whole); W = 100%% update (not YCSB's); echo = the bare-gRPC "
      "floor: basalt.rpc.Echo/Echo through the generated stub on its own channel, replying %d B (a record's "
      "field bytes); with --transport=tcp, the bare TCP floor instead: the TCP path's loops and client with "
      "nothing behind them, a Get's frame answered with a record's reply frame, the loops in a process "
      "of their own as a server's (--tcp_echo_in_process: in this one; --tcp_echo_codec: each request decoded and its reply "
      "encoded from the record's cells, as the TCP front does around its Get) (src/tools/bench/tcp_echo_floor.h); a read gets the whole row, an update puts one random field, an "
      "insert a whole record",
      warmup_seconds, seconds, kYcsbMaxScanLength, kYcsbFields * kYcsbFieldBytes));
  report->notes.push_back(
      "target = ops/s for all threads together on a fixed schedule, latency from each op's intended start "
      "(0: unthrottled, latency from the actual start); ops_per_s = recorded ops / recorded seconds; "
      "cpu_us_per_op = the whole machine's busy CPU (/proc/stat: user, nice, system, irq, softirq) over the "
      "recorded seconds / recorded ops; kernel_pct = the share of that busy CPU in the kernel (system, irq, "
      "softirq); steal_pct = the share the hypervisor stole; C_vs_echo_*: sums over "
      "every C and echo run of the same threads and target; read_misses = reads that found no row (should be 0)");
  report->notes.push_back("server_resident_bytes: Admin::Status() resident_bytes after the last run");
  if (async_window > 0) {
    report->notes.push_back(absl::StrFormat(
        "--async_window=%d: each thread keeps %d Gets in flight (Table::GetAsync), latency from a Get's start to "
        "its callback",
        async_window, async_window));
  }
  return 0;
}

int RunServerScan(const Flags& flags, Report* report) {
  auto setup = ParseYcsbSetup(flags);
  if (!setup.ok()) return Fail(setup.status());
  const int passes = static_cast<int>(flags.Int("passes", 5));
  const int caching = static_cast<int>(flags.Int("caching", 1000));
  // --reversed=false|true|both: both scans each pass, forward then reversed, for their ratio.
  const std::string reversed = flags.Str("reversed", "false");
  const std::string filter_text = flags.Str("filter", "");  // HBase's filter language
  flags.RefuseUnused();
  if (passes <= 0 || caching <= 0) return Fail(absl::InvalidArgumentError("need --passes > 0, --caching > 0"));
  if (reversed != "false" && reversed != "true" && reversed != "both") {
    return Fail(absl::InvalidArgumentError("--reversed is false, true or both"));
  }
  Scan scan;
  scan.SetCaching(static_cast<uint32_t>(caching));
  if (!filter_text.empty()) {
    absl::StatusOr<Filter> f = ParseFilterString(filter_text);
    if (!f.ok()) return Fail(f.status());
    scan.SetFilter(*std::move(f));
  }
  std::vector<bool> directions;
  if (reversed != "true") directions.push_back(false);
  if (reversed != "false") directions.push_back(true);
  auto conn = ConnectAndPrepare(*setup, report);
  if (!conn.ok()) return Fail(conn.status());
  auto table = (*conn)->GetTable(setup->server.table);
  std::vector<double> rates[2];
  uint64_t rows_each = 0;
  for (int p = 0; p < passes; ++p) {
    for (bool rev : directions) {
      auto t0 = Clock::now();
      auto sc = table->GetScanner(Scan(scan).SetReversed(rev));
      if (!sc.ok()) return Fail(sc.status());
      Result row;
      uint64_t rows = 0;
      for (;;) {
        auto more = (*sc)->Next(&row);
        if (!more.ok()) return Fail(more.status());
        if (!*more) break;
        ++rows;
      }
      const double secs = Seconds(t0, Clock::now());
      if (filter_text.empty() && rows != setup->records) {
        return Fail(absl::DataLossError(absl::StrCat("a full scan returned ", rows, " rows, not ", setup->records)));
      }
      if (p > 0 || rev) {
        if (rows != rows_each) return Fail(absl::DataLossError(absl::StrCat("scans returned ", rows, " and ", rows_each, " rows")));
      }
      rows_each = rows;
      rates[rev].push_back(rows / secs);
      report->records.push_back({Num("pass", p + 1), Text("direction", rev ? "reversed" : "forward"),
                                 Num("rows", static_cast<double>(rows)), Num("seconds", secs, 3),
                                 Num("rows_per_s", rows / secs)});
    }
  }
  double median[2] = {0, 0};
  for (int rev = 0; rev < 2; ++rev) {
    if (rates[rev].empty()) continue;
    std::sort(rates[rev].begin(), rates[rev].end());
    median[rev] = rates[rev][rates[rev].size() / 2];
    report->summary.push_back(Num(rev ? "reversed_median_rows_per_s" : "median_rows_per_s", median[rev]));
  }
  if (median[0] > 0 && median[1] > 0) report->summary.push_back(Num("reversed_to_forward", median[1] / median[0], 3));
  report->title = absl::StrFormat("server scan: full-table scans, %d rows a message%s, %s", caching,
                                  filter_text.empty() ? "" : ", filter " + filter_text, setup->server.address);
  report->notes.push_back(YcsbDescription(*setup));
  return 0;
}

int RunServerLoad(const Flags& flags, Report* report) {
  auto setup = ParseYcsbSetup(flags);
  if (!setup.ok()) return Fail(setup.status());
  flags.RefuseUnused();
  std::optional<LoadResult> loaded;
  auto conn = ConnectAndPrepare(*setup, report, &loaded);
  if (!conn.ok()) return Fail(conn.status());
  auto admin = (*conn)->GetAdmin();
  if (loaded.has_value()) {
    constexpr double kRecordBytes = kYcsbFields * kYcsbFieldBytes;
    const double secs = loaded->seconds > 0 ? loaded->seconds : 1e-9;
    report->records.push_back({Text("phase", "load"), Num("records", static_cast<double>(loaded->rows)),
                               Num("seconds", loaded->seconds, 2), Num("records_per_s", loaded->rows / secs),
                               Num("MB_per_s", loaded->rows * kRecordBytes / secs / 1e6, 1)});
  }
  AddServerStatus(admin.get(), report);
  report->title = absl::StrFormat("server YCSB load (BufferedMutator, %d producer thread%s), %s", setup->load_threads,
                                  setup->load_threads == 1 ? "" : "s", setup->server.address);
  report->notes.push_back(YcsbDescription(*setup));
  return 0;
}

int RunServerSplit(const Flags& flags, Report* report) {
  auto setup = ParseYcsbSetup(flags);
  if (!setup.ok()) return Fail(setup.status());
  flags.RefuseUnused();
  if (setup->regions != 1) return Fail(absl::InvalidArgumentError("split measures a table of one region: --regions=1"));
  auto conn = ConnectAndPrepare(*setup, report);
  if (!conn.ok()) return Fail(conn.status());
  auto admin = (*conn)->GetAdmin();
  // Everything in block files, so the split's time is the split's (its parent's final flush
  // has nothing left to write).
  if (auto s = admin->Flush(setup->server.table); !s.ok()) return Fail(s);
  auto before = admin->ListRegions(setup->server.table);
  if (!before.ok()) return Fail(before.status());
  if (before->size() != 1) {
    return Fail(absl::FailedPreconditionError(absl::StrCat("table ", setup->server.table, " has ", before->size(),
                                                           " regions; split measures one (a new table, or "
                                                           "a server with --auto_split=false)")));
  }
  const uint64_t bytes = (*before)[0].store_file_bytes;
  const auto t0 = Clock::now();
  if (auto s = admin->Split(setup->server.table); !s.ok()) return Fail(s);
  const double secs = Seconds(t0, Clock::now());
  auto after = admin->ListRegions(setup->server.table);
  if (!after.ok()) return Fail(after.status());
  report->records.push_back({Num("region_MiB", bytes / 1048576.0, 1), Num("split_ms", secs * 1e3, 1),
                             Num("regions_after", static_cast<double>(after->size()))});
  report->summary.push_back(Num("split_ms", secs * 1e3, 1));
  report->title = absl::StrFormat("server split: one region of %.1f MiB split at its middle (as the client's "
                                  "Admin::Split sees it), %s",
                                  bytes / 1048576.0, setup->server.address);
  report->notes.push_back(YcsbDescription(*setup));
  return 0;
}

int RunServerLocate(const Flags& flags, Report* report) {
  auto setup = ParseYcsbSetup(flags);
  if (!setup.ok()) return Fail(setup.status());
  const int64_t clients = flags.Int("clients", 200);
  flags.RefuseUnused();
  if (clients <= 0) return Fail(absl::InvalidArgumentError("--clients must be positive"));
  auto conn = ConnectAndPrepare(*setup, report);
  if (!conn.ok()) return Fail(conn.status());
  // Each client is a new Connection whose channel is up (a ListRegions call) but whose region
  // cache is empty: its first Get reads basalt:meta, its second (another record) does not.
  LatencyHistogram cold, warm;
  std::mt19937_64 rng(29);
  for (int64_t c = 0; c < clients; ++c) {
    auto client = Connection::Open(setup->server.conn);
    if (!client.ok()) return Fail(client.status());
    if (auto r = (*client)->GetAdmin()->ListRegions(setup->server.table); !r.ok()) return Fail(r.status());
    auto table = (*client)->GetTable(setup->server.table);
    for (LatencyHistogram* h : {&cold, &warm}) {
      const std::string key = YcsbKey(rng() % setup->records);
      const auto t0 = Clock::now();
      absl::StatusOr<Result> r = table->Get(basalt::Get(key));
      const auto t1 = Clock::now();
      if (!r.ok()) return Fail(r.status());
      if (r->empty()) return Fail(absl::DataLossError(absl::StrCat("record ", key, " is missing")));
      h->Record(ElapsedNanos(t0, t1));
    }
    const TransportStats st = (*client)->GetTransportStats();
    if (st.meta_lookups != 1) {
      return Fail(absl::InternalError(absl::StrCat("a client read meta ", st.meta_lookups, " times, not once")));
    }
  }
  for (auto [name, h] : {std::pair{"cold (meta lookup)", &cold}, std::pair{"warm", &warm}}) {
    report->records.push_back({Text("first Get of a client", name), Num("gets", static_cast<double>(h->Count())),
                               Num("p50_us", h->PercentileMicros(0.50), 1), Num("p99_us", h->PercentileMicros(0.99), 1)});
  }
  report->summary.push_back(Num("cold_p50_us", cold.PercentileMicros(0.50), 1));
  report->summary.push_back(Num("warm_p50_us", warm.PercentileMicros(0.50), 1));
  report->summary.push_back(Num("cold_over_warm_p50", cold.PercentileMicros(0.50) / warm.PercentileMicros(0.50), 2));
  report->title = absl::StrFormat("server locate: Get with a cold region cache (one read of basalt:meta) and a warm "
                                  "one, %d clients, %s",
                                  clients, setup->server.address);
  report->notes.push_back(YcsbDescription(*setup));
  return 0;
}

// ------------------------------------------------------------------ snapshot

// Snapshot and clone times of a loaded table, the export's MB/s against a plain copy, and YCSB
// A's p99 while snapshots are taken against without (alternating runs).
int RunServerSnapshot(const Flags& flags, Report* report) {
  auto setup = ParseYcsbSetup(flags);
  if (!setup.ok()) return Fail(setup.status());
  const int rounds = static_cast<int>(flags.Int("rounds", 3));
  const int threads = static_cast<int>(flags.Int("threads", 4));
  const double seconds = flags.Double("seconds", 10);
  const double target = flags.Double("target", 0);
  const int64_t every_ms = flags.Int("snapshot_every_ms", 1000);
  const std::string data_dir = flags.Str("data_dir", "");
  flags.RefuseUnused();
  if (rounds < 1 || threads < 1 || seconds <= 0 || every_ms < 1) {
    return Fail(absl::InvalidArgumentError("need --rounds, --threads, --seconds, --snapshot_every_ms > 0"));
  }
  auto conn = ConnectAndPrepare(*setup, report);
  if (!conn.ok()) return Fail(conn.status());
  auto admin = (*conn)->GetAdmin();
  for (const SnapshotDescription& d : admin->ListSnapshots().value_or(std::vector<SnapshotDescription>{})) {
    if (absl::StartsWith(d.name, "bench-snap-")) admin->DeleteSnapshot(d.name).IgnoreError();
  }
  if (auto s = TimeSnapshotAndClone(admin.get(), setup->server.table, rounds, report); !s.ok()) return Fail(s);
  const std::string last = absl::StrCat("bench-snap-", rounds - 1);
  if (!data_dir.empty()) {
    if (auto s = TimeExport(data_dir, last, rounds, report); !s.ok()) return Fail(s);
  }
  if (auto s = admin->DeleteSnapshot(last); !s.ok()) return Fail(s);

  // YCSB A without and with snapshots taken (and deleted) every --snapshot_every_ms.
  auto table = (*conn)->GetTable(setup->server.table);
  InsertOrdinals ordinals(setup->records);
  const YcsbTargets to{table.get(), &ordinals, nullptr, nullptr, setup->server.conn.timeout, 0};
  auto a = ParseWorkload("A");
  Monitor monitor;
  double p99[2] = {0, 0};
  int taken = 0;
  for (int i = 0; i < 2 * rounds; ++i) {
    const bool with = i % 2 == 1;
    std::atomic<bool> stop{false};
    absl::Status snap_status;
    std::thread snapshotter([&] {
      for (int n = 0; with && !stop.load(); ++n) {
        const std::string name = absl::StrCat("bench-snap-load-", n);
        if (absl::Status s = admin->Snapshot(setup->server.table, name).status(); !s.ok()) snap_status = s;
        admin->DeleteSnapshot(name).IgnoreError();
        ++taken;
        absl::SleepFor(absl::Milliseconds(every_ms));
      }
    });
    YcsbRun run;
    absl::Status s = RunYcsbOnce(to, *a, threads, target, 1, seconds, setup->durability, &monitor, &run);
    stop = true;
    snapshotter.join();
    if (!s.ok() || !snap_status.ok()) {
      monitor.Stop();
      return Fail(s.ok() ? snap_status : s);
    }
    LatencyHistogram all;
    all.Merge(run.read_h);
    all.Merge(run.update_h);
    Record rec{Text("op", with ? "YCSB A, snapshots taken" : "YCSB A"), Num("round", i / 2), Num("threads", threads),
               Num("ops_per_s", run.Ops() / run.seconds)};
    AddPercentiles(&rec, "", all, false);
    report->records.push_back(std::move(rec));
    p99[with] += all.PercentileMicros(0.99);
  }
  monitor.Stop();
  report->summary.push_back(Num("ycsb_a_p99_with_vs_without", p99[1] / p99[0], 2));
  report->summary.push_back(Num("snapshots_during_load", taken));
  report->title = absl::StrFormat("server snapshot: snapshot, clone and export of table %s, and YCSB A with snapshots, %s",
                                  setup->server.table, setup->server.address);
  report->notes.push_back(YcsbDescription(*setup));
  report->notes.push_back(absl::StrFormat(
      "snapshot_ms / clone_ms: the client's Admin call, each round a new snapshot (then deleted) and a clone (then "
      "dropped); export: server::ExportSnapshot from --data_dir to a scratch directory (every block verified, "
      "fsynced) against a plain read/write/fsync copy of the same files, each after a sync(), in alternating order; YCSB A: %d threads, %g s "
      "recorded after 1 s, target %g ops/s (0: unthrottled), alternating without and with a snapshot (taken "
      "and deleted) every %d ms; p99 over reads and updates; the ratio is of the sums over the rounds",
      threads, seconds, target, every_ms));
  return 0;
}

}  // namespace basalt::bench
