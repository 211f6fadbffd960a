// Benchmarks against a running basalt-server over gRPC (`basalt-bench server ...`):
//
//   latency  Put (SYNC_WAL) and Get of one cell per payload size, one client thread by default,
//            with the bare-gRPC floor: the server's Echo service called through the generated
//            stub over a channel with the client's channel arguments. Get and Echo alternate in
//            rounds so that drift of a noisy machine hits both alike.
//   ycsb     YCSB's core workloads (A to F) on YCSB's 1 KB records with its scrambled Zipfian key
//            choice (D: latest), over a sweep of client threads and target rates, with the Echo
//            floor as a workload of its own; then the server's resident memory.
//   load     only the YCSB load phase (BufferedMutator).
//
// Every latency is steady_clock around one synchronous client call, recorded in a per-thread
// LatencyHistogram and merged at the end. Warm-up operations are not recorded. A monitor thread
// prints the progress line once a second. See BENCHMARKS.md.
#include "src/tools/bench/server_bench_common.h"

namespace basalt::bench {

// ------------------------------------------------------------------ latency

namespace {

// The flags of `server latency`, validated (ParseLatencyFlags).
struct LatencyOptions {
  ServerOptions server;
  std::vector<int64_t> sizes;  // payload sizes, bytes
  int64_t ops = 0;             // Puts, Gets and Echos per size
  int64_t warmup = 0;          // warm-up ops of each kind per size
  int threads = 0;
  int rounds = 0;  // the Gets and Echos alternate in this many rounds
  bool with_floor = false;
};

// Reads the flags (refusing any other) and checks them; InvalidArgument names what is wrong.
absl::StatusOr<LatencyOptions> ParseLatencyFlags(const Flags& flags) {
  LatencyOptions o;
  BASALT_ASSIGN_OR_RETURN(o.server, ParseServerOptions(flags, "bench_latency"));
  BASALT_ASSIGN_OR_RETURN(o.sizes, ParseIntList(flags, "sizes", "1,100,1024,4096,16384,65536"));
  o.ops = flags.Int("ops", 5000);
  o.warmup = flags.Int("warmup", 500);
  o.threads = static_cast<int>(flags.Int("threads", 1));
  o.rounds = static_cast<int>(flags.Int("rounds", 10));
  o.with_floor = !flags.Bool("no_floor");
  flags.RefuseUnused();
  if (o.ops <= 0 || o.warmup < 0 || o.threads <= 0 || o.rounds <= 0 || o.ops < o.rounds) {
    return absl::InvalidArgumentError("need --ops ≥ --rounds > 0, --threads > 0, --warmup ≥ 0");
  }
  if (o.with_floor && o.server.conn.address.empty()) {
    return absl::InvalidArgumentError("the echo floor is one server's: with --zookeeper, give --no_floor");
  }
  return o;
}

std::string LatencyRowKey(int64_t size, int64_t i) { return absl::StrFormat("lat_%06d_%08d", size, i); }

// One timed Put / Get / Echo, callable from several threads at once. Each returns false (and
// records the error in the ErrorSlot) on failure, and records its latency into h unless h is
// null.
class TimedCalls {
 public:
  // Values are taken from `pool`, which must be at least as long as the largest size.
  TimedCalls(Table* table, rpc::Echo::Stub* echo, absl::Duration timeout, const std::string* pool, ErrorSlot* error)
      : table_(table), echo_(echo), timeout_(timeout), pool_(pool), error_(error) {}

  // A Put (SYNC_WAL) of one cell of `size` bytes into `row`.
  bool PutOne(int64_t size, const std::string& row, LatencyHistogram* h) const {
    basalt::Put put(row);
    put.Add(kFamily, "v", pool_->substr(0, size));
    put.SetDurability(Durability::kSyncWal);
    auto t0 = Clock::now();
    absl::Status s = table_->Put(put);
    auto t1 = Clock::now();
    if (!s.ok()) {
      error_->Set(s);
      return false;
    }
    if (h != nullptr) h->Record(ElapsedNanos(t0, t1));
    return true;
  }

  // A Get of the cell PutOne wrote; DataLoss unless it has `size` bytes.
  bool GetOne(int64_t size, const std::string& row, LatencyHistogram* h) const {
    basalt::Get get(row);
    get.AddColumn(kFamily, "v");
    auto t0 = Clock::now();
    absl::StatusOr<Result> r = table_->Get(get);
    auto t1 = Clock::now();
    if (!r.ok()) {
      error_->Set(r.status());
      return false;
    }
    auto v = r->Value(kFamily, "v");
    if (!v.has_value() || static_cast<int64_t>(v->size()) != size) {
      error_->Set(absl::DataLossError(absl::StrCat("Get of row ", row, " returned ",
                                                   v.has_value() ? absl::StrCat(v->size(), " bytes") : "no value",
                                                   ", expected ", size)));
      return false;
    }
    if (h != nullptr) h->Record(ElapsedNanos(t0, t1));
    return true;
  }

  bool EchoOne(const rpc::EchoRequest& req, LatencyHistogram* h) const {
    auto t0 = Clock::now();
    absl::Status s = EchoOnce(echo_, req, timeout_);
    auto t1 = Clock::now();
    if (!s.ok()) {
      error_->Set(s);
      return false;
    }
    if (h != nullptr) h->Record(ElapsedNanos(t0, t1));
    return true;
  }

 private:
  Table* table_;
  rpc::Echo::Stub* echo_;
  absl::Duration timeout_;
  const std::string* pool_;
  ErrorSlot* error_;
};

// The recorded latencies of one op kind ("Put", "Get", "Echo floor") at one size, and the wall
// time of its phases.
struct LatencyFigures {
  std::string op;
  int64_t size;
  LatencyHistogram hist;
  double seconds = 0;
};

using LatencyFigureList = std::vector<std::unique_ptr<LatencyFigures>>;

const LatencyFigures* FindFigures(const LatencyFigureList& figures, const std::string& op, int64_t size) {
  for (auto& f : figures) {
    if (f->op == op && f->size == size) return f.get();
  }
  return nullptr;
}

// The measurement of one size: warm-up, then --ops Puts, then as many Gets and (with the floor)
// Echos in alternating rounds; their figures appended to *figures. The first error of any
// call ends it.
absl::Status MeasureSize(const LatencyOptions& o, int64_t size, const TimedCalls& calls, const ErrorSlot& error,
                         Monitor* monitor, LatencyFigureList* figures) {
  const int threads = o.threads, rounds = o.rounds;
  const int64_t ops = o.ops;
  const std::string sl = SizeLabel(size);
  rpc::EchoRequest echo_req;
  echo_req.set_reply_size(static_cast<uint32_t>(size));

  // Warm-up: Puts of rows of their own, Gets and Echos, none recorded.
  monitor->Watch(absl::StrCat("latency ", sl, " warm-up"), {});
  for (int64_t i = 0; i < o.warmup && !error.failed(); ++i) {
    calls.PutOne(size, absl::StrCat(LatencyRowKey(size, i), "w"), nullptr);
    calls.GetOne(size, absl::StrCat(LatencyRowKey(size, i), "w"), nullptr);
    if (o.with_floor) calls.EchoOne(echo_req, nullptr);
  }
  if (error.failed()) return error.status();

  // Puts: thread t writes rows t, t + threads, ...
  Histograms put_h = MakeHistograms(threads);
  monitor->Watch(absl::StrCat("latency Put ", sl), Pointers(put_h));
  auto t0 = Clock::now();
  RunOnThreads(threads, [&](int t) {
    for (int64_t i = t; i < ops && !error.failed(); i += threads) {
      calls.PutOne(size, LatencyRowKey(size, i), put_h[t].get());
    }
  });
  double put_seconds = Seconds(t0, Clock::now());
  if (error.failed()) return error.status();

  // Gets of those rows and the floor, alternating in rounds (odd rounds floor first).
  Histograms get_h = MakeHistograms(threads), echo_h = MakeHistograms(threads);
  double get_seconds = 0, echo_seconds = 0;
  for (int r = 0; r < rounds; ++r) {
    const int64_t begin = ops * r / rounds, end = ops * (r + 1) / rounds;
    auto run_gets = [&] {
      monitor->Watch(absl::StrFormat("latency Get %s round %d/%d", sl, r + 1, rounds), Pointers(get_h));
      auto g0 = Clock::now();
      RunOnThreads(threads, [&](int t) {
        for (int64_t i = begin + t; i < end && !error.failed(); i += threads) {
          calls.GetOne(size, LatencyRowKey(size, i), get_h[t].get());
        }
      });
      get_seconds += Seconds(g0, Clock::now());
    };
    auto run_echos = [&] {
      if (!o.with_floor) return;
      monitor->Watch(absl::StrFormat("latency Echo floor %s round %d/%d", sl, r + 1, rounds), Pointers(echo_h));
      auto e0 = Clock::now();
      RunOnThreads(threads, [&](int t) {
        for (int64_t i = begin + t; i < end && !error.failed(); i += threads) {
          calls.EchoOne(echo_req, echo_h[t].get());
        }
      });
      echo_seconds += Seconds(e0, Clock::now());
    };
    if (r % 2 == 0) {
      run_gets();
      run_echos();
    } else {
      run_echos();
      run_gets();
    }
    if (error.failed()) return error.status();
  }
  monitor->Watch(absl::StrCat("latency ", sl, " done"), {});

  auto add = [&](const std::string& op, const Histograms& h, double seconds) {
    auto f = std::make_unique<LatencyFigures>();
    f->op = op;
    f->size = size;
    MergeInto(h, &f->hist);
    f->seconds = seconds;
    figures->push_back(std::move(f));
  };
  add("Put", put_h, put_seconds);
  add("Get", get_h, get_seconds);
  if (o.with_floor) add("Echo floor", echo_h, echo_seconds);
  return absl::OkStatus();
}

// A record per op kind and size, then the targets' ratios at 1 KiB (summary and notes).
void AddLatencyFigures(const LatencyFigureList& figures, Report* report) {
  for (const auto& f : figures) {
    Record rec{Text("op", f->op), Num("size_bytes", static_cast<double>(f->size)),
               Num("ops", static_cast<double>(f->hist.Count())),
               Num("ops_per_s", f->seconds > 0 ? f->hist.Count() / f->seconds : 0)};
    AddPercentiles(&rec, "", f->hist, true);
    report->records.push_back(std::move(rec));
  }

  // The targets' ratios at 1 KiB.
  const LatencyFigures* get1k = FindFigures(figures, "Get", 1024);
  const LatencyFigures* put1k = FindFigures(figures, "Put", 1024);
  const LatencyFigures* echo1k = FindFigures(figures, "Echo floor", 1024);
  if (get1k != nullptr && echo1k != nullptr) {
    double p50 = get1k->hist.PercentileNanos(0.5) / echo1k->hist.PercentileNanos(0.5);
    double p99 = get1k->hist.PercentileNanos(0.99) / echo1k->hist.PercentileNanos(0.99);
    report->summary.push_back(Num("get_1KiB_p50_vs_floor", p50, 2));
    report->summary.push_back(Num("get_1KiB_p99_vs_floor", p99, 2));
    report->notes.push_back(absl::StrFormat(
        "Get 1 KiB p50 = %.2fx the floor's (target <= 1.2x: %s), p99 = %.2fx (target <= 1.5x: %s)",
                                            p50, p50 <= 1.2 ? "met" : "missed", p99, p99 <= 1.5 ? "met" : "missed"));
  }
  if (get1k != nullptr) {
    double p99 = get1k->hist.PercentileMicros(0.99);
    report->notes.push_back(
        absl::StrFormat("Get 1 KiB p99 = %.1f us (target <= 500 us: %s)", p99, p99 <= 500 ? "met" : "missed"));
  }
  if (get1k != nullptr && put1k != nullptr) {
    double r = put1k->hist.PercentileNanos(0.5) / get1k->hist.PercentileNanos(0.5);
    report->summary.push_back(Num("put_1KiB_p50_vs_get", r, 2));
    report->notes.push_back(
        absl::StrFormat("Put 1 KiB (SYNC_WAL) p50 = %.2fx Get's (target <= 2x: %s)", r, r <= 2 ? "met" : "missed"));
  }
}

// The title and the notes on how it was measured.
void AddLatencyNotes(const LatencyOptions& o, Report* report) {
  report->title = absl::StrFormat("server latency: one cell per op, %d client thread%s, %s", o.threads,
                                  o.threads == 1 ? "" : "s", o.server.address);
  report->notes.push_back(absl::StrFormat(
      "per size: %d warm-up ops of each kind (not recorded), then %d Puts (SYNC_WAL, rows of their own), then %d "
      "Gets of those rows and %d Echo calls in %d alternating rounds; latency = steady_clock around each "
      "synchronous call; ops_per_s = ops / wall time of that op's phases",
      o.warmup, o.ops, o.ops, o.ops, o.rounds));
  if (o.with_floor) {
    report->notes.push_back(
        "Echo floor: basalt.rpc.Echo/Echo through the generated stub on its own channel with "
        "ClientChannelArguments, empty request payload, reply_size = size, same deadline as the client");
  }
}

}  // namespace

int RunServerLatency(const Flags& flags, Report* report) {
  auto o = ParseLatencyFlags(flags);
  if (!o.ok()) return Fail(o.status());

  auto conn = Connection::Open(o->server.conn);
  if (!conn.ok()) return Fail(conn.status());
  auto admin = (*conn)->GetAdmin();
  if (auto s = EnsureTable(admin.get(), o->server.table); !s.ok()) return Fail(s);
  auto table = (*conn)->GetTable(o->server.table);

  auto echo = NewEchoStub(o->server.address);

  const int64_t max_size = *std::max_element(o->sizes.begin(), o->sizes.end());
  const std::string pool = RandomPool(static_cast<size_t>(max_size) + 4096, 17);
  ErrorSlot error;
  const TimedCalls calls(table.get(), echo.get(), o->server.conn.timeout, &pool, &error);
  Monitor monitor;
  LatencyFigureList figures;
  for (int64_t size : o->sizes) {
    if (absl::Status s = MeasureSize(*o, size, calls, error, &monitor, &figures); !s.ok()) {
      monitor.Stop();
      return Fail(s);
    }
  }
  AddLatencyFigures(figures, report);
  AddServerStatus(admin.get(), report);
  AddLatencyNotes(*o, report);
  return 0;
}

}  // namespace basalt::bench
