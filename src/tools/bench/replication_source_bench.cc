// basalt-bench server replicate_source: what a replication peer costs its source, and how far
// behind it stays (docs/DESIGN.md §15; issue 50's Must-show 4). The source is a server (--server)
// or a cluster (--zookeeper, its peers kept by the master); the peer is a server (--peer, its
// gRPC port, and --peer_key, its cluster key: a server publishing its HBase port in ZooKeeper).
//
//   1. The source's Put capacity with one peer against none: --threads writers, unpaced, for
//      --seconds, in alternating rounds (none first). A peer round adds a new peer before it and,
//      after it, waits until the peer has everything (the drain time) and removes it; so each
//      round starts from the same state and a peer round pays for all it shipped.
//   2. The lag at 50 % and 80 % of the capacity without a peer: the writers paced to that rate,
//      and a probe that writes a marker row on the source every --probe_ms and polls the peer
//      (a Get every ms) until it is there: the time from the source's acknowledgement to the row
//      being readable on the peer, what an application failing over would lose.
//   3. With --down_seconds: the catch-up of a peer that was away. The peer is added disabled (its
//      edits kept), the writers run at 50 % for that long, then stop and the peer is enabled: the
//      rows it then gets per second until it has everything.
#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "src/tools/bench/histogram.h"
#include "src/tools/bench/server_bench_common.h"

namespace basalt::bench {
namespace {

constexpr char kPeer[] = "bench_source";

// `threads` writers on `conn` for `seconds` (each at rate/threads Puts a second when rate > 0):
// the Puts acknowledged. The first error stops them.
absl::StatusOr<int64_t> Write(Connection* conn, const std::string& table, int threads, double seconds, double rate,
                              int64_t value_size, int64_t* next_row) {
  std::atomic<int64_t> done{0};
  std::atomic<bool> failed{false};
  absl::Status first;
  absl::Mutex mu;
  const std::string value(static_cast<size_t>(value_size), 'v');
  const int64_t base = *next_row;
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> ts;
  for (int w = 0; w < threads; ++w) {
    ts.emplace_back([&, w] {
      auto t = conn->GetTable(table);
      const auto interval = rate > 0 ? std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(threads / rate))
                                     : Clock::duration::zero();
      auto next = Clock::now();
      for (int64_t i = 0; !failed.load() && Clock::now() < end; ++i) {
        if (rate > 0) {
          std::this_thread::sleep_until(next);
          next += interval;
        }
        absl::Status s = t->Put(Put(absl::StrFormat("w%02d-%012d", w, base + i)).Add("f", "q", value));
        if (!s.ok()) {
          absl::MutexLock l(&mu);
          if (first.ok()) first = s;
          failed = true;
          return;
        }
        ++done;
      }
    });
  }
  for (auto& t : ts) t.join();
  *next_row = base + done.load() + 1;
  if (!first.ok()) return first;
  return done.load();
}

// The peer's status on the source: NotFound when there is none.
absl::StatusOr<PeerStatus> Peer(Admin* admin) {
  auto peers = admin->ListPeers();
  if (!peers.ok()) return peers.status();
  for (PeerStatus& p : *peers) {
    if (p.peer.id == kPeer) return p;
  }
  return absl::NotFoundError("no peer");
}

// Waits until the peer has every edit (its lag 0): how long it took.
absl::StatusOr<double> Drain(Admin* admin) {
  const auto t0 = Clock::now();
  for (;;) {
    absl::StatusOr<PeerStatus> p = Peer(admin);
    if (!p.ok()) return p.status();
    if (p->lag_bytes == 0) return Seconds(t0, Clock::now());
    if (p->state == "BROKEN") return absl::DataLossError(absl::StrCat("the peer broke: ", p->last_error));
    if (Seconds(t0, Clock::now()) > 300) return absl::DeadlineExceededError(absl::StrCat("the peer did not catch up: ", p->last_error));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

int RunServerReplicateSource(const Flags& flags, Report* report) {
  auto server = ParseServerOptions(flags, "bench_replicate_source");
  if (!server.ok()) return Fail(server.status());
  const std::string peer_address = flags.Str("peer", "");
  const std::string peer_key = flags.Str("peer_key", "");
  const int64_t threads = flags.Int("threads", 16);
  const double seconds = flags.Double("seconds", 10);
  const int64_t rounds = flags.Int("rounds", 3);
  const int64_t value_size = flags.Int("value_size", 100);
  const int64_t probe_ms = flags.Int("probe_ms", 100);
  const double down_seconds = flags.Double("down_seconds", 0);
  flags.RefuseUnused();
  if (peer_address.empty() || peer_key.empty()) {
    return Fail(absl::InvalidArgumentError("--peer=HOST:PORT (the peer's gRPC port) and --peer_key=<its cluster key> "
                                           "are required"));
  }
  if (threads <= 0 || seconds <= 0 || rounds <= 0 || value_size <= 0 || probe_ms <= 0) {
    return Fail(absl::InvalidArgumentError("--threads, --seconds, --rounds, --value_size and --probe_ms must be positive"));
  }
  auto source = ConnectWithTable(*server);
  if (!source.ok()) return Fail(source.status());
  // The peer is a server (its gRPC port), whether the source is a server or a cluster.
  ServerOptions on_peer = *server;
  on_peer.conn.address = peer_address;
  on_peer.conn.zookeeper_quorum.clear();
  auto peer = ConnectWithTable(on_peer);
  if (!peer.ok()) return Fail(peer.status());
  auto admin = (*source)->GetAdmin();
  // The source's family replicated.
  absl::StatusOr<TableInfo> info = admin->DescribeTable(server->table);
  if (!info.ok()) return Fail(info.status());
  for (FamilySettings& f : info->families) f.metadata = {{"REPLICATION_SCOPE", "1"}};
  if (auto s = admin->ModifyTable(*info); !s.ok()) return Fail(s);
  (void)admin->RemovePeer(kPeer);  // (one a stopped run left)
  ReplicationPeer p;
  p.id = kPeer;
  p.cluster_key = peer_key;

  // 1. Capacity, alternating rounds.
  int64_t next_row = 0;
  double none_ops = 0, peer_ops = 0, drain_s = 0;
  for (int64_t round = 0; round < 2 * rounds; ++round) {
    const bool with_peer = round % 2 == 1;
    if (with_peer) {
      if (auto s = admin->AddPeer(p); !s.ok()) return Fail(s);
    }
    auto n = Write(source->get(), server->table, static_cast<int>(threads), seconds, 0, value_size, &next_row);
    if (!n.ok()) return Fail(n.status());
    (with_peer ? peer_ops : none_ops) += static_cast<double>(*n);
    if (with_peer) {
      auto d = Drain(admin.get());
      if (!d.ok()) return Fail(d.status());
      drain_s += *d;
      if (auto s = admin->RemovePeer(kPeer); !s.ok()) return Fail(s);
    }
  }
  const double span = seconds * static_cast<double>(rounds);
  const double capacity = none_ops / span;
  report->records.push_back({Text("run", "no peer"), Num("puts_per_s", capacity), Num("lag_p50_ms", 0),
                             Num("lag_p99_ms", 0), Num("probes", 0), Num("drain_s", 0, 2)});
  report->records.push_back({Text("run", "one peer"), Num("puts_per_s", peer_ops / span), Num("lag_p50_ms", 0),
                             Num("lag_p99_ms", 0), Num("probes", 0),
                             Num("drain_s", drain_s / static_cast<double>(rounds), 2)});
  report->summary.push_back(Num("puts_one_peer_over_none", peer_ops / none_ops, 3));

  // 2. The lag at a share of the capacity.
  for (double share : {0.5, 0.8}) {
    if (auto s = admin->AddPeer(p); !s.ok()) return Fail(s);
    std::atomic<bool> stop{false};
    LatencyHistogram lag;
    absl::Status probe_error;
    std::thread probe([&] {
      auto on_source = (*source)->GetTable(server->table);
      auto on_peer = (*peer)->GetTable(server->table);
      for (int64_t i = 0; !stop.load(); ++i) {
        const std::string row = absl::StrFormat("lag-%012d", next_row + i);
        if (absl::Status s = on_source->Put(Put(row).Add("f", "q", "probe")); !s.ok()) {
          probe_error = s;
          return;
        }
        const auto acked = Clock::now();
        for (;;) {
          auto got = on_peer->Get(Get(row));
          if (got.ok() && !got->empty()) break;
          if (Seconds(acked, Clock::now()) > 60) {
            probe_error = absl::DeadlineExceededError(absl::StrCat("row ", row, " not on the peer in 60 s"));
            return;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        lag.Record(ElapsedNanos(acked, Clock::now()));
        std::this_thread::sleep_for(std::chrono::milliseconds(probe_ms));
      }
    });
    auto n = Write(source->get(), server->table, static_cast<int>(threads), seconds, share * capacity, value_size,
                   &next_row);
    stop = true;
    probe.join();
    if (!n.ok()) return Fail(n.status());
    if (!probe_error.ok()) return Fail(probe_error);
    auto d = Drain(admin.get());
    if (!d.ok()) return Fail(d.status());
    if (auto s = admin->RemovePeer(kPeer); !s.ok()) return Fail(s);
    report->records.push_back({Text("run", absl::StrFormat("one peer at %.0f%%", share * 100)),
                               Num("puts_per_s", static_cast<double>(*n) / seconds),
                               Num("lag_p50_ms", lag.PercentileMicros(0.5) / 1000, 1),
                               Num("lag_p99_ms", lag.PercentileMicros(0.99) / 1000, 1),
                               Num("probes", static_cast<double>(lag.Count())), Num("drain_s", *d, 2)});
  }
  // 3. A peer away for down_seconds, then back.
  if (down_seconds > 0) {
    ReplicationPeer away = p;
    away.enabled = false;
    if (auto s = admin->AddPeer(away); !s.ok()) return Fail(s);
    auto n = Write(source->get(), server->table, static_cast<int>(threads), down_seconds, 0.5 * capacity, value_size,
                   &next_row);
    if (!n.ok()) return Fail(n.status());
    absl::StatusOr<PeerStatus> before = Peer(admin.get());
    if (!before.ok()) return Fail(before.status());
    if (auto s = admin->EnablePeer(kPeer); !s.ok()) return Fail(s);
    auto d = Drain(admin.get());
    if (!d.ok()) return Fail(d.status());
    if (auto s = admin->RemovePeer(kPeer); !s.ok()) return Fail(s);
    report->records.push_back({Text("run", absl::StrFormat("peer away %.0f s, then back", down_seconds)),
                               Num("puts_per_s", static_cast<double>(*n) / down_seconds), Num("lag_p50_ms", 0),
                               Num("lag_p99_ms", 0), Num("probes", 0), Num("drain_s", *d, 2)});
    report->summary.push_back(Num("catch_up_rows_per_s", static_cast<double>(*n) / *d));
    report->summary.push_back(Num("catch_up_log_mib", static_cast<double>(before->lag_bytes) / (1 << 20), 1));
  }
  report->title = absl::StrFormat(
      "server replicate_source: the source %s's Puts with one peer (%s) against none, and the lag at 50 %% and 80 %% "
      "of its capacity (%lld writers, %.0f s rounds, %lld rounds each, %lld B values)",
      server->address, peer_key, static_cast<long long>(threads), seconds, static_cast<long long>(rounds),
      static_cast<long long>(value_size));
  return 0;
}

}  // namespace basalt::bench
