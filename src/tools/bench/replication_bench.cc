// basalt-bench server replicate: how fast a Basalt sink applies what a replication source sends
// (docs/DESIGN.md §15), against the same rows written by Basalt's own client: the rate at which a
// peer that was away catches up, as far as the sink decides it.
//
// Each batch is `rows` rows of one Put each (f:q, --value_size bytes, one timestamp), as a source
// ships a log: made into a ReplicateWALEntry by the source's own converter
// (src/front/hbase/replication_source.h) and sent to the server's HBase port (AdminService, one
// call at a time, waiting for each answer: a source's shipper does the same), or sent as one
// BatchMutate through gRPC (SYNC_WAL, as the sink applies it). Rounds alternate, gRPC first, over
// the same rows, so both write the same cells; the server's CPU is read from /proc/<pid>/stat.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "src/front/hbase/replication_source.h"
#include "src/front/hbase/wire_client.h"
#include "src/tools/bench/histogram.h"
#include "src/tools/bench/server_bench_common.h"
#include "storage/cell.h"

namespace basalt::bench {
namespace {

constexpr char kSourceCluster[] = "5e5e5e5e-0000-4000-8000-000000000001";

}  // namespace

int RunServerReplicate(const Flags& flags, Report* report) {
  auto server = ParseServerOptions(flags, "bench_replicate");
  if (!server.ok()) return Fail(server.status());
  auto port = ParseHBasePortTarget(flags);
  if (!port.ok()) return Fail(port.status());
  const int64_t pid = port->pid;
  const int64_t batches = flags.Int("batches", 100);
  const int64_t rows = flags.Int("rows", 500);
  const int64_t rounds = flags.Int("rounds", 4);
  const int64_t value_size = flags.Int("value_size", 100);
  flags.RefuseUnused();
  if (batches <= 0 || rows <= 0 || rounds <= 0 || value_size <= 0) {
    return Fail(absl::InvalidArgumentError("--batches, --rows, --rounds and --value_size must be positive"));
  }
  auto conn = ConnectWithTable(*server);
  if (!conn.ok()) return Fail(conn.status());
  auto table = (*conn)->GetTable(server->table);
  auto sink = hbase::WireClient::Dial(port->host, port->port, "AdminService", "bench", std::chrono::seconds(60));
  if (!sink.ok()) return Fail(sink.status());

  // The batches both ways: the source's calls, and the client's Puts.
  const std::string value(static_cast<size_t>(value_size), 'v');
  const int64_t ts = absl::ToUnixMillis(absl::Now());
  std::vector<hbase::SourceBatch> calls(static_cast<size_t>(batches));
  std::vector<std::vector<RowMutationsBase>> puts(static_cast<size_t>(batches));
  hbase::SourceOptions so;
  so.cluster_id = kSourceCluster;
  so.replicated = [](std::string_view, std::string_view) { return true; };
  so.now_ms = ts;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t r = 0; r < rows; ++r) {
      const std::string row = BenchRowKey(b * rows + r);
      WalRecord rec;
      rec.region = absl::StrCat(server->table, ",,1");
      rec.seq = static_cast<uint64_t>(b * rows + r + 1);
      rec.edits.push_back(WalEdit{kFamily, MakeFlatKey(row, "q", ts, CellType::kPut), value});
      if (auto s = hbase::AddToSourceBatch(rec, server->table, so, &calls[static_cast<size_t>(b)]); !s.ok()) return Fail(s);
      puts[static_cast<size_t>(b)].push_back(Put(row).Add(kFamily, "q", value, ts).SetDurability(Durability::kSyncWal));
    }
  }
  uint32_t call_id = 0;
  auto replicate = [&](const hbase::SourceBatch& batch) -> absl::Status {
    if (!(*sink)->Call(++call_id, "ReplicateWALEntry", batch.request, batch.cell_block)) {
      return absl::UnavailableError("the HBase port closed the connection");
    }
    absl::StatusOr<hbase::Answer> a = (*sink)->Read(std::chrono::seconds(60));
    if (!a.ok()) return a.status();
    if (a->header.has_exception()) return absl::InternalError(a->header.exception().stack_trace());
    return absl::OkStatus();
  };
  auto put = [&](const std::vector<RowMutationsBase>& batch) -> absl::Status {
    auto done = table->Batch(batch);
    if (!done.ok()) return done.status();
    for (const absl::Status& s : *done) BASALT_RETURN_IF_ERROR(s);
    return absl::OkStatus();
  };
  struct Totals {
    double cpu_us = 0;
    double seconds = 0;
    LatencyHistogram latency;
  };
  Totals grpc, repl;
  if (auto s = replicate(calls[0]); !s.ok()) return Fail(s);  // (the table on the port, and the connections)
  if (auto s = put(puts[0]); !s.ok()) return Fail(s);
  for (int64_t round = 0; round < 2 * rounds; ++round) {
    const bool via_sink = round % 2 == 1;
    Totals& t = via_sink ? repl : grpc;
    auto cpu0 = ProcessCpuMicros(pid);
    if (!cpu0.ok()) return Fail(cpu0.status());
    const auto t0 = Clock::now();
    for (int64_t b = 0; b < batches; ++b) {
      const auto s0 = Clock::now();
      absl::Status s = via_sink ? replicate(calls[static_cast<size_t>(b)]) : put(puts[static_cast<size_t>(b)]);
      if (!s.ok()) return Fail(s);
      t.latency.Record(ElapsedNanos(s0, Clock::now()));
    }
    t.seconds += Seconds(t0, Clock::now());
    auto cpu1 = ProcessCpuMicros(pid);
    if (!cpu1.ok()) return Fail(cpu1.status());
    t.cpu_us += *cpu1 - *cpu0;
  }
  const double cells = static_cast<double>(batches * rows * rounds);
  for (auto [name, t] : {std::pair<const char*, Totals*>{"gRPC BatchMutate", &grpc}, {"ReplicateWALEntry", &repl}}) {
    report->records.push_back({Text("path", name), Num("cells", cells), Num("cells_per_s", cells / t->seconds),
                               Num("server_cpu_us_per_cell", t->cpu_us / cells, 3),
                               Num("batch_p50_ms", t->latency.PercentileMicros(0.5) / 1000, 2),
                               Num("batch_p99_ms", t->latency.PercentileMicros(0.99) / 1000, 2)});
  }
  report->summary.push_back(Num("cells_per_s_sink_over_grpc", grpc.seconds / repl.seconds, 3));
  report->summary.push_back(Num("cpu_per_cell_sink_over_grpc", repl.cpu_us / grpc.cpu_us, 3));
  report->title = absl::StrFormat(
      "server replicate: a sink's apply rate, ReplicateWALEntry on the HBase port %s vs BatchMutate on gRPC %s "
      "(%lld batches of %lld rows of %lld B x %lld rounds each, alternating; one call at a time)",
      port->address, server->address, static_cast<long long>(batches), static_cast<long long>(rows),
      static_cast<long long>(value_size), static_cast<long long>(rounds));
  return 0;
}

}  // namespace basalt::bench
