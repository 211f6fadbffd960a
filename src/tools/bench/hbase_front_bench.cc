// basalt-bench server hbase_get: the server's CPU per Get through its HBase port and through the
// TCP fast path (src/front/tcp_front.h, Basalt's client with transport tcp) against its gRPC
// front end, on the same rows, in rounds of the same random keys taking each front end in turn
// (one synchronous client each, so each Get is a whole round trip on an idle server).
//
// The HBase side speaks HBase's RPC as the Java client does (a ConnectionHeader naming
// ClientService, then GetRequests naming the table's region by its HBase name), with our own
// codec and blocking client (src/front/hbase/wire_client.h): what is measured is the server's work, read from
// /proc/<server_pid>/stat (user + system time) around each round.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/hbase/hbase_client.pb.h"
#include "src/front/hbase/region_names.h"
#include "src/front/hbase/rpc_codec.h"
#include "src/front/hbase/wire_client.h"
#include "src/tools/bench/histogram.h"
#include "src/tools/bench/server_bench_common.h"

namespace basalt::bench {
namespace {

// A Get of `row`'s column f:q through the HBase port; its value's size.
absl::StatusOr<size_t> HBaseGet(hbase::WireClient* c, uint32_t call_id, const std::string& region_name,
                                const std::string& row) {
  hbase::GetRequest req;
  req.mutable_region()->set_type(hbase::RegionSpecifier::REGION_NAME);
  req.mutable_region()->set_value(region_name);
  req.mutable_get()->set_row(row);
  hbase::Column* col = req.mutable_get()->add_column();
  col->set_family("f");
  col->mutable_qualifier()->Add(std::string(1, 'q'));  // (add_qualifier("q") trips GCC 12 -Wrestrict)
  if (!c->Call(call_id, "Get", req)) return absl::UnavailableError("the HBase port closed the connection");
  absl::StatusOr<hbase::Answer> a = c->Read();
  if (!a.ok()) return a.status();
  if (a->header.has_exception()) return absl::InternalError(a->header.exception().stack_trace());
  hbase::GetResponse resp;
  if (!resp.ParseFromString(a->message)) return absl::InternalError("a GetResponse that does not parse");
  if (resp.result().cell_size() != 1) return absl::NotFoundError(absl::StrCat("row ", row, " not found"));
  return resp.result().cell(0).value().size();
}

}  // namespace

int RunServerHBaseGet(const Flags& flags, Report* report) {
  auto server = ParseServerOptions(flags, "bench_hbase_get");
  if (!server.ok()) return Fail(server.status());
  auto port = ParseHBasePortTarget(flags);
  if (!port.ok()) return Fail(port.status());
  const int64_t pid = port->pid;
  const int64_t records = flags.Int("records", 10000);
  const int64_t gets = flags.Int("gets", 20000);
  const int64_t rounds = flags.Int("rounds", 6);
  const int64_t value_size = flags.Int("value_size", 100);
  flags.RefuseUnused();
  if (records <= 0 || gets <= 0 || rounds <= 0 || value_size <= 0) {
    return Fail(absl::InvalidArgumentError("--records, --gets, --rounds and --value_size must be positive"));
  }
  auto conn = ConnectWithTable(*server);
  if (!conn.ok()) return Fail(conn.status());
  auto admin = (*conn)->GetAdmin();
  auto table = (*conn)->GetTable(server->table);
  {
    const std::string value(static_cast<size_t>(value_size), 'v');
    std::vector<RowMutationsBase> puts;
    for (int64_t i = 0; i < records; ++i) {
      puts.push_back(Put(BenchRowKey(i)).Add("f", "q", value));
      if (puts.size() == 1000 || i + 1 == records) {
        auto done = table->Batch(puts);
        if (!done.ok()) return Fail(done.status());
        for (const absl::Status& s : *done) {
          if (!s.ok()) return Fail(s);
        }
        puts.clear();
      }
    }
  }
  if (auto s = admin->Flush(server->table); !s.ok()) return Fail(s);
  auto regions = admin->ListRegions(server->table);
  if (!regions.ok()) return Fail(regions.status());
  if (regions->size() != 1) return Fail(absl::FailedPreconditionError("hbase_get reads a table of one region"));
  const std::string region_name = hbase::RegionNameOf(server->table, "", (*regions)[0].id);
  hbase::WireClient hbase(port->host, port->port, "ClientService");
  if (!hbase.connected()) {
    return Fail(absl::UnavailableError(absl::StrCat("cannot connect to the HBase port ", port->address)));
  }
  uint32_t call_id = 0;

  // Each round reads the same keys through one front end; they alternate, gRPC first.
  std::vector<std::string> keys;
  std::mt19937_64 rng(7);
  for (int64_t i = 0; i < gets; ++i) {
    keys.push_back(BenchRowKey(static_cast<int64_t>(rng() % static_cast<uint64_t>(records))));
  }
  // The TCP fast path: another connection of Basalt's client, required to take it.
  ServerOptions over_tcp = *server;
  over_tcp.conn.transport = TransportChoice::kTcp;
  auto tcp_conn = Connection::Open(over_tcp.conn);
  if (!tcp_conn.ok()) return Fail(tcp_conn.status());
  auto tcp_table = (*tcp_conn)->GetTable(server->table);
  struct Totals {
    explicit Totals(const char* n) : name(n) {}
    const char* name;
    double cpu_us = 0;
    double seconds = 0;
    LatencyHistogram latency;
  };
  Totals fronts[] = {Totals("gRPC"), Totals("HBase port"), Totals("TCP path")};
  auto get = [&](int front, const std::string& k) -> absl::Status {
    if (front == 1) return HBaseGet(&hbase, ++call_id, region_name, k).status();
    return (front == 0 ? table : tcp_table)->Get(Get(k)).status();
  };
  for (const std::string& k : keys) {  // warm them all: the block cache and the connections
    for (int front = 0; front < 3; ++front) {
      if (absl::Status s = get(front, k); !s.ok()) return Fail(s);
    }
  }
  for (int64_t round = 0; round < 3 * rounds; ++round) {
    const int front = static_cast<int>(round % 3);
    Totals& t = fronts[front];
    auto cpu0 = ProcessCpuMicros(pid);
    if (!cpu0.ok()) return Fail(cpu0.status());
    const auto t0 = Clock::now();
    for (const std::string& k : keys) {
      const auto s0 = Clock::now();
      if (absl::Status s = get(front, k); !s.ok()) return Fail(s);
      t.latency.Record(ElapsedNanos(s0, Clock::now()));
    }
    t.seconds += Seconds(t0, Clock::now());
    auto cpu1 = ProcessCpuMicros(pid);
    if (!cpu1.ok()) return Fail(cpu1.status());
    t.cpu_us += *cpu1 - *cpu0;
  }
  const double n = static_cast<double>(gets * rounds);
  for (Totals& t : fronts) {
    report->records.push_back({Text("front_end", t.name), Num("gets", n), Num("server_cpu_us_per_get", t.cpu_us / n, 2),
                               Num("ops_per_s", n / t.seconds), Num("p50_us", t.latency.PercentileMicros(0.5), 1),
                               Num("p99_us", t.latency.PercentileMicros(0.99), 1)});
  }
  const Totals& grpc = fronts[0];
  report->summary.push_back(Num("cpu_per_get_hbase_over_grpc", fronts[1].cpu_us / grpc.cpu_us, 3));
  report->summary.push_back(Num("cpu_per_get_tcp_over_grpc", fronts[2].cpu_us / grpc.cpu_us, 3));
  report->summary.push_back(
      Num("p50_tcp_over_grpc", fronts[2].latency.PercentileMicros(0.5) / grpc.latency.PercentileMicros(0.5), 3));
  report->title = absl::StrFormat(
      "server hbase_get: the server's CPU per Get, HBase port %s and TCP path vs gRPC %s (%lld records of %lld B, "
      "%lld Gets x %lld rounds each, in turn; one synchronous client each)",
      port->address, server->address, static_cast<long long>(records), static_cast<long long>(value_size),
      static_cast<long long>(gets), static_cast<long long>(rounds));
  return 0;
}

}  // namespace basalt::bench
