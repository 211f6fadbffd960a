#include "src/tools/bench/server_bench_common.h"

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "src/base/flags.h"

namespace basalt::bench {

int Fail(const absl::Status& s) {
  GlobalProgress().Done();
  std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
  return 1;
}

uint64_t ElapsedNanos(Clock::time_point t0, Clock::time_point t1) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
}

double Seconds(Clock::time_point t0, Clock::time_point t1) { return std::chrono::duration<double>(t1 - t0).count(); }

absl::StatusOr<ServerOptions> ParseServerOptions(const Flags& flags, const std::string& default_table) {
  ServerOptions o;
  o.address = flags.Str("server", "");
  // A cluster: the client finds the master in ZooKeeper and each region's server in meta.
  o.conn.zookeeper_quorum = flags.Str("zookeeper", "");
  o.conn.zookeeper_znode_parent = flags.Str("znode_parent", o.conn.zookeeper_znode_parent);
  if (o.address.empty() == o.conn.zookeeper_quorum.empty()) {
    return absl::InvalidArgumentError("one of --server=HOST:PORT and --zookeeper=HOST:PORT (a cluster) is required");
  }
  o.table = flags.Str("table", default_table);
  o.conn.address = o.address;
  if (o.address.empty()) o.address = "the cluster at zookeeper " + o.conn.zookeeper_quorum;
  o.conn.channels = static_cast<int>(flags.Int("channels", 1));
  std::string transport = flags.Str("transport", "grpc");
  if (transport == "grpc") {
    o.conn.transport = TransportChoice::kGrpc;
  } else if (transport == "auto") {
    o.conn.transport = TransportChoice::kAuto;
  } else if (transport == "verbs") {
    o.conn.transport = TransportChoice::kVerbs;
  } else if (transport == "tcp") {
    o.conn.transport = TransportChoice::kTcp;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown --transport '", transport, "' (grpc, auto, verbs, tcp)"));
  }
  if (o.conn.channels <= 0) return absl::InvalidArgumentError("--channels must be positive");
  const int64_t spin_us = flags.Int("verbs_spin_us", 20);
  const int64_t endpoints = flags.Int("verbs_max_endpoints", 32);
  if (spin_us < 0 || endpoints < 1) {
    return absl::InvalidArgumentError("--verbs_spin_us must be >= 0 and --verbs_max_endpoints >= 1");
  }
  o.conn.verbs_spin = absl::Microseconds(spin_us);
  o.conn.verbs_max_endpoints = static_cast<int>(endpoints);
  o.conn.verbs_async_endpoints = static_cast<int>(flags.Int("verbs_async_endpoints", o.conn.verbs_async_endpoints));
  o.conn.verbs_async_credits = static_cast<int>(flags.Int("verbs_async_credits", o.conn.verbs_async_credits));
  // Nonces on writes (on by default, as in every client): --nonces=0 measures what they cost.
  o.conn.nonces = flags.Int("nonces", 1) != 0;
  // A server with TLS (and auth): the CA, a client certificate, or a token in a file.
  o.conn.security.tls_ca = flags.Str("tls_ca", "");
  o.conn.security.tls_cert = flags.Str("tls_cert", "");
  o.conn.security.tls_key = flags.Str("tls_key", "");
  if (std::string token_file = flags.Str("token_file", ""); !token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(token_file);
    if (!token.ok()) return absl::InvalidArgumentError(absl::StrCat("--token_file ", token_file, " cannot be read"));
    o.conn.security.token = *std::move(token);
  }
  return o;
}

absl::StatusOr<Durability> ParseDurability(const std::string& s) {
  if (s == "SYNC_WAL" || s == "sync") return Durability::kSyncWal;
  if (s == "ASYNC_WAL" || s == "async") return Durability::kAsyncWal;
  if (s == "SKIP_WAL" || s == "skip") return Durability::kSkipWal;
  return absl::InvalidArgumentError(absl::StrCat("unknown durability '", s, "' (SYNC_WAL, ASYNC_WAL, SKIP_WAL)"));
}

const char* DurabilityName(Durability d) {
  switch (d) {
    case Durability::kSyncWal: return "SYNC_WAL";
    case Durability::kAsyncWal: return "ASYNC_WAL";
    case Durability::kSkipWal: return "SKIP_WAL";
    case Durability::kUseDefault: return "USE_DEFAULT";
  }
  return "?";
}

absl::StatusOr<std::vector<int64_t>> ParseIntList(const Flags& flags, const std::string& name, const std::string& def,
                                                  bool allow_zero) {
  std::vector<int64_t> out;
  for (const auto& s : flags.List(name, def)) {
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (end == s.c_str() || *end != '\0' || v < 0 || (v == 0 && !allow_zero)) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, ": '", s, "' is not a ",
                                                     allow_zero ? "non-negative" : "positive", " integer"));
    }
    out.push_back(v);
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat("--", name, " is empty"));
  return out;
}

absl::StatusOr<double> ProcessCpuMicros(int64_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (stat.empty() || close == std::string::npos) {
    return absl::NotFoundError(absl::StrCat("no process ", pid, " (--server_pid: the basalt-server's pid)"));
  }
  std::istringstream fields(stat.substr(close + 2));
  std::string f;
  uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {  // fields 14 and 15: utime, stime (clock ticks)
    if (i == 14) utime = std::stoull(f);
    if (i == 15) stime = std::stoull(f);
  }
  return static_cast<double>(utime + stime) * 1e6 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

absl::Status EnsureTable(Admin* admin, const std::string& name, const std::vector<std::string>& split_keys) {
  auto desc = admin->DescribeTable(name);
  if (desc.ok()) {
    if (!split_keys.empty() && desc->regions != split_keys.size() + 1) {
      return absl::FailedPreconditionError(absl::StrCat("table '", name, "' exists with ", desc->regions,
                                                        " region(s), not ", split_keys.size() + 1));
    }
    for (const auto& f : desc->families) {
      if (f.name == kFamily) return absl::OkStatus();
    }
    return absl::FailedPreconditionError(absl::StrCat("table '", name, "' exists without family '", kFamily, "'"));
  }
  if (desc.status().code() != absl::StatusCode::kNotFound) return desc.status();
  TableInfo info;
  info.name = name;
  FamilySettings fam;
  fam.name = std::string(kFamily);  // not `= kFamily`: GCC 12 -Wrestrict false positive
  info.families.push_back(fam);
  absl::Status s = admin->CreateTable(info, split_keys);
  if (s.code() == absl::StatusCode::kAlreadyExists) return absl::OkStatus();  // created meanwhile
  return s;
}

std::string RandomPool(size_t size, uint64_t seed) {
  std::string pool(size, '\0');
  for (char& c : pool) c = static_cast<char>(' ' + SplitMix64(&seed) % 95);
  return pool;
}

void RunOnThreads(int n, const std::function<void(int)>& fn) {
  if (n == 1) {
    fn(0);
    return;
  }
  std::vector<std::thread> ts;
  ts.reserve(n);
  for (int t = 0; t < n; ++t) ts.emplace_back(fn, t);
  for (auto& th : ts) th.join();
}

Histograms MakeHistograms(int n) {
  Histograms h;
  for (int i = 0; i < n; ++i) h.push_back(std::make_unique<LatencyHistogram>());
  return h;
}

void MergeInto(const Histograms& from, LatencyHistogram* into) {
  for (const auto& h : from) into->Merge(*h);
}

std::vector<const LatencyHistogram*> Pointers(const Histograms& h) {
  std::vector<const LatencyHistogram*> out;
  for (const auto& p : h) out.push_back(p.get());
  return out;
}

void AddPercentiles(Record* rec, const std::string& prefix, const LatencyHistogram& h, bool with_mean_max) {
  rec->push_back(Num(prefix + "p50_us", h.PercentileMicros(0.50), 1));
  rec->push_back(Num(prefix + "p95_us", h.PercentileMicros(0.95), 1));
  rec->push_back(Num(prefix + "p99_us", h.PercentileMicros(0.99), 1));
  rec->push_back(Num(prefix + "p99.9_us", h.PercentileMicros(0.999), 1));
  if (!with_mean_max) return;
  rec->push_back(Num(prefix + "mean_us", h.MeanNanos() / 1e3, 1));
  rec->push_back(Num(prefix + "max_us", h.MaxNanos() / 1e3, 1));
}

std::unique_ptr<rpc::Echo::Stub> NewEchoStub(const std::string& address) {
  return rpc::Echo::NewStub(
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), ClientChannelArguments(kEchoChannelTag)));
}

absl::Status EchoOnce(rpc::Echo::Stub* echo, const rpc::EchoRequest& req, absl::Duration timeout) {
  rpc::EchoResponse resp;
  grpc::ClientContext ctx;  // the client library makes one per call too
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  grpc::Status s = echo->Echo(&ctx, req, &resp);
  if (!s.ok()) return FromGrpcStatus(s);
  if (resp.payload().size() != req.reply_size()) {
    return absl::DataLossError(absl::StrCat("Echo replied ", resp.payload().size(), " bytes, asked ", req.reply_size()));
  }
  return absl::OkStatus();
}

void AddServerStatus(Admin* admin, Report* report) {
  auto st = admin->Status();
  if (!st.ok()) {
    report->notes.push_back(absl::StrCat("Admin::Status failed: ", st.status().ToString()));
    return;
  }
  report->summary.push_back(Text("server_version", st->version));
  report->summary.push_back(Text("server_mode", st->mode));
  report->summary.push_back(Num("server_resident_bytes", static_cast<double>(st->resident_bytes)));
  report->summary.push_back(Num("server_resident_mib", st->resident_bytes / 1048576.0, 1));
}

std::string SizeLabel(int64_t size) {
  if (size >= 1024 && size % 1024 == 0) return absl::StrCat(size / 1024, " KiB");
  return absl::StrCat(size, " B");
}

absl::StatusOr<HBasePortTarget> ParseHBasePortTarget(const Flags& flags) {
  HBasePortTarget t;
  t.address = flags.Str("hbase", "");
  t.pid = flags.Int("server_pid", 0);
  if (t.address.empty() || t.pid <= 0) {
    return absl::InvalidArgumentError("--hbase=HOST:PORT (the server's HBase port) and --server_pid are required");
  }
  BASALT_RETURN_IF_ERROR(server::SplitHostPort(t.address, &t.host, &t.port));
  return t;
}

absl::StatusOr<std::unique_ptr<Connection>> ConnectWithTable(const ServerOptions& server) {
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn, Connection::Open(server.conn));
  BASALT_RETURN_IF_ERROR(EnsureTable(conn->GetAdmin().get(), server.table));
  return conn;
}

std::string BenchRowKey(int64_t i) { return absl::StrFormat("row%08d", i); }

}  // namespace basalt::bench
