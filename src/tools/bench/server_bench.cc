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

int RunServerLatency(const Flags& flags, Report* report) {
  auto so = ParseServerOptions(flags, "bench_latency");
  if (!so.ok()) return Fail(so.status());
  auto sizes = ParseIntList(flags, "sizes", "1,100,1024,4096,16384,65536");
  if (!sizes.ok()) return Fail(sizes.status());
  const int64_t ops = flags.Int("ops", 5000);
  const int64_t warmup = flags.Int("warmup", 500);
  const int threads = static_cast<int>(flags.Int("threads", 1));
  const int rounds = static_cast<int>(flags.Int("rounds", 10));
  const bool with_floor = !flags.Bool("no_floor");
  flags.RefuseUnused();
  if (ops <= 0 || warmup < 0 || threads <= 0 || rounds <= 0 || ops < rounds) {
    return Fail(absl::InvalidArgumentError("need --ops ≥ --rounds > 0, --threads > 0, --warmup ≥ 0"));
  }
  if (with_floor && so->conn.address.empty()) {
    return Fail(absl::InvalidArgumentError("the echo floor is one server's: with --zookeeper, give --no_floor"));
  }

  auto conn = Connection::Open(so->conn);
  if (!conn.ok()) return Fail(conn.status());
  auto admin = (*conn)->GetAdmin();
  if (auto s = EnsureTable(admin.get(), so->table); !s.ok()) return Fail(s);
  auto table = (*conn)->GetTable(so->table);

  auto echo = NewEchoStub(so->address);
  const absl::Duration timeout = so->conn.timeout;

  const int64_t max_size = *std::max_element(sizes->begin(), sizes->end());
  const std::string pool = RandomPool(static_cast<size_t>(max_size) + 4096, 17);
  ErrorSlot error;
  Monitor monitor;
  auto fail = [&](const absl::Status& st) {
    monitor.Stop();
    return Fail(st);
  };

  auto row_key = [](int64_t size, int64_t i) { return absl::StrFormat("lat_%06d_%08d", size, i); };

  // One timed Put / Get / Echo; false (and the error recorded) on failure.
  auto put_one = [&](int64_t size, const std::string& row, LatencyHistogram* h) {
    basalt::Put put(row);
    put.Add(kFamily, "v", pool.substr(0, size));
    put.SetDurability(Durability::kSyncWal);
    auto t0 = Clock::now();
    absl::Status s = table->Put(put);
    auto t1 = Clock::now();
    if (!s.ok()) {
      error.Set(s);
      return false;
    }
    if (h != nullptr) h->Record(ElapsedNanos(t0, t1));
    return true;
  };
  auto get_one = [&](int64_t size, const std::string& row, LatencyHistogram* h) {
    basalt::Get get(row);
    get.AddColumn(kFamily, "v");
    auto t0 = Clock::now();
    absl::StatusOr<Result> r = table->Get(get);
    auto t1 = Clock::now();
    if (!r.ok()) {
      error.Set(r.status());
      return false;
    }
    auto v = r->Value(kFamily, "v");
    if (!v.has_value() || static_cast<int64_t>(v->size()) != size) {
      error.Set(absl::DataLossError(absl::StrCat("Get of row ", row, " returned ",
                                                 v.has_value() ? absl::StrCat(v->size(), " bytes") : "no value",
                                                 ", expected ", size)));
      return false;
    }
    if (h != nullptr) h->Record(ElapsedNanos(t0, t1));
    return true;
  };
  auto echo_one = [&](const rpc::EchoRequest& req, LatencyHistogram* h) {
    auto t0 = Clock::now();
    absl::Status s = EchoOnce(echo.get(), req, timeout);
    auto t1 = Clock::now();
    if (!s.ok()) {
      error.Set(s);
      return false;
    }
    if (h != nullptr) h->Record(ElapsedNanos(t0, t1));
    return true;
  };

  struct Figures {
    std::string op;
    int64_t size;
    LatencyHistogram hist;
    double seconds = 0;
  };
  std::vector<std::unique_ptr<Figures>> figures;
  auto figures_for = [&](const std::string& op, int64_t size) -> Figures* {
    for (auto& f : figures) {
      if (f->op == op && f->size == size) return f.get();
    }
    return nullptr;
  };

  for (int64_t size : *sizes) {
    const std::string sl = SizeLabel(size);
    rpc::EchoRequest echo_req;
    echo_req.set_reply_size(static_cast<uint32_t>(size));

    // Warm-up: Puts of rows of their own, Gets and Echos, none recorded.
    monitor.Watch(absl::StrCat("latency ", sl, " warm-up"), {});
    for (int64_t i = 0; i < warmup && !error.failed(); ++i) {
      put_one(size, absl::StrCat(row_key(size, i), "w"), nullptr);
      get_one(size, absl::StrCat(row_key(size, i), "w"), nullptr);
      if (with_floor) echo_one(echo_req, nullptr);
    }
    if (error.failed()) return fail(error.status());

    // Puts: thread t writes rows t, t + threads, ...
    Histograms put_h = MakeHistograms(threads);
    monitor.Watch(absl::StrCat("latency Put ", sl), Pointers(put_h));
    auto t0 = Clock::now();
    RunOnThreads(threads, [&](int t) {
      for (int64_t i = t; i < ops && !error.failed(); i += threads) put_one(size, row_key(size, i), put_h[t].get());
    });
    double put_seconds = Seconds(t0, Clock::now());
    if (error.failed()) return fail(error.status());

    // Gets of those rows and the floor, alternating in rounds (odd rounds floor first).
    Histograms get_h = MakeHistograms(threads), echo_h = MakeHistograms(threads);
    double get_seconds = 0, echo_seconds = 0;
    for (int r = 0; r < rounds; ++r) {
      const int64_t begin = ops * r / rounds, end = ops * (r + 1) / rounds;
      auto run_gets = [&] {
        monitor.Watch(absl::StrFormat("latency Get %s round %d/%d", sl, r + 1, rounds), Pointers(get_h));
        auto g0 = Clock::now();
        RunOnThreads(threads, [&](int t) {
          for (int64_t i = begin + t; i < end && !error.failed(); i += threads) {
            get_one(size, row_key(size, i), get_h[t].get());
          }
        });
        get_seconds += Seconds(g0, Clock::now());
      };
      auto run_echos = [&] {
        if (!with_floor) return;
        monitor.Watch(absl::StrFormat("latency Echo floor %s round %d/%d", sl, r + 1, rounds), Pointers(echo_h));
        auto e0 = Clock::now();
        RunOnThreads(threads, [&](int t) {
          for (int64_t i = begin + t; i < end && !error.failed(); i += threads) {
            echo_one(echo_req, echo_h[t].get());
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
      if (error.failed()) return fail(error.status());
    }
    monitor.Watch(absl::StrCat("latency ", sl, " done"), {});

    auto add = [&](const std::string& op, const Histograms& h, double seconds) {
      auto f = std::make_unique<Figures>();
      f->op = op;
      f->size = size;
      MergeInto(h, &f->hist);
      f->seconds = seconds;
      figures.push_back(std::move(f));
    };
    add("Put", put_h, put_seconds);
    add("Get", get_h, get_seconds);
    if (with_floor) add("Echo floor", echo_h, echo_seconds);
  }

  for (const auto& f : figures) {
    Record rec{Text("op", f->op), Num("size_bytes", static_cast<double>(f->size)),
               Num("ops", static_cast<double>(f->hist.Count())),
               Num("ops_per_s", f->seconds > 0 ? f->hist.Count() / f->seconds : 0)};
    AddPercentiles(&rec, "", f->hist, true);
    report->records.push_back(std::move(rec));
  }

  // The targets' ratios at 1 KiB.
  const Figures* get1k = figures_for("Get", 1024);
  const Figures* put1k = figures_for("Put", 1024);
  const Figures* echo1k = figures_for("Echo floor", 1024);
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
  AddServerStatus(admin.get(), report);

  report->title = absl::StrFormat("server latency: one cell per op, %d client thread%s, %s", threads,
                                  threads == 1 ? "" : "s", so->address);
  report->notes.push_back(absl::StrFormat(
      "per size: %d warm-up ops of each kind (not recorded), then %d Puts (SYNC_WAL, rows of their own), then %d "
      "Gets of those rows and %d Echo calls in %d alternating rounds; latency = steady_clock around each "
      "synchronous call; ops_per_s = ops / wall time of that op's phases",
      warmup, ops, ops, ops, rounds));
  if (with_floor) {
    report->notes.push_back(
        "Echo floor: basalt.rpc.Echo/Echo through the generated stub on its own channel with "
        "ClientChannelArguments, empty request payload, reply_size = size, same deadline as the client");
  }
  return 0;
}

}  // namespace basalt::bench
