// basalt-bench: `basalt-bench storage <subcommand> [--flags]` (one Region in this process) and
// `basalt-bench server <subcommand> --server=HOST:PORT [--flags]` (a running basalt-server), or
// --zookeeper=HOST:PORT (a cluster).
// Prints a progress line on stderr while running and a table (or, with --json, one JSON object)
// on stdout at the end.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "src/tools/bench/bench_util.h"
#include "src/tools/bench/tcp_echo_floor.h"
#include "transport/grpc/grpc_settings.h"

namespace {

constexpr char kUsage[] =
    "usage: basalt-bench storage <subcommand> [--flags] [--json]\n"
    "  crc         [--buffer-mb=64 --chunk-kb=16 --seconds=1]\n"
    "              CRC32C (ISA-L) vs CRC32C table loop vs CRC32 (ISA-L), GB/s on one core\n"
    "  seed003     [--rows=4000000 --encodings=NONE,PREFIX,FAST_DIFF,ROW_INDEX --compressions=NONE,SNAPPY,ZLIB\n"
    "               --modes=cache,nocache --op-seconds=2 --cache-mb=2048 --dir=/tmp]\n"
    "              bytes/row on disk, full-scan MB/s raw and random Gets/s, block cache warm and off\n"
    "  compaction  [--rows=2000000 --encoding=NONE --compression=NONE --value-size=0 --repeats=3]\n"
    "              major compaction CPU with CRC32C vs NULL checksums\n"
    "  rocksdb     [--rows=1000000 --gets=300000 --rounds=3 --cache-mb=2048]\n"
    "              Basalt (NONE, FAST_DIFF) vs RocksDB, cached point lookups and full scans\n"
    "  write       [--threads=1,16,64 --durability=sync,async --seconds=5 --value-size=100]\n"
    "              write ops/s and writes per fdatasync\n"
    "\n"
    "usage: basalt-bench server <subcommand> (--server=HOST:PORT | --zookeeper=HOST:PORT) [--flags] [--json]\n"
    "  common      [--transport=grpc|auto|verbs|tcp --channels=1 --verbs_spin_us=20 --verbs_max_endpoints=32\n"
    "               --verbs_async_endpoints=2 --verbs_async_credits=8 --znode_parent=/basalt --nonces=1]\n"
    "              (--zookeeper: a cluster; latency then needs --no_floor)\n"
    "              [--tls_ca=PEM --tls_cert=PEM --tls_key=PEM --token_file=FILE]  (a TLS server; latency:\n"
    "               --no_floor; src/tools/bench/security_overhead.sh compares TLS + auth with plain text)\n"
    "  latency     [--table=bench_latency --sizes=1,100,1024,4096,16384,65536 --ops=5000 --warmup=500\n"
    "               --threads=1 --rounds=10 --no_floor]\n"
    "              Put (SYNC_WAL) and Get of one cell per size, p50/p95/p99/p99.9 and ops/s, against the\n"
    "              bare-gRPC Echo floor (alternating rounds); ratios at 1 KiB\n"
    "  ycsb        [--table=usertable --workload=A,C --records=100000 --threads=1,4,16 --seconds=10\n"
    "               --warmup_seconds=2 --skip_load --load_threads=1 --durability=SYNC_WAL --flush_after_load\n"
    "               --regions=1 --target=0]\n"
    "              YCSB core workloads (A-F; zipfian, D latest; 10 x 100 B fields; W: updates only; echo:\n"
    "              the bare-gRPC floor, or with --transport=tcp the bare TCP path's), ops/s and percentiles\n"
    "              per op kind per thread count and target\n"
    "              (ops/s, a list; latency from the intended start), then the server's resident memory;\n"
    "              --regions pre-splits a new table into regions of equal record counts\n"
    "  load        [--table=usertable --records=100000 --skip_load --load_threads=1 --durability=SYNC_WAL\n"
    "               --flush_after_load --regions=1]\n"
    "              only the YCSB load phase (BufferedMutator)\n"
    "  scan        [--table=usertable --records=100000 --regions=1 --passes=5 --caching=1000 --skip_load\n"
    "               --flush_after_load --reversed=false|true|both --filter=\"HBase filter string\"]\n"
    "              full-table scans of the YCSB records, rows/s per pass (both: forward and\n"
    "              reversed each pass, and their ratio)\n"
    "  split       [--table=usertable --records=100000 --skip_load --flush_after_load]\n"
    "              loads a table of one region, then times Admin::Split of it (start the server with\n"
    "              --auto_split=false, so that the load does not split it first)\n"
    "  locate      [--table=usertable --records=100000 --regions=1 --clients=200 --skip_load]\n"
    "              Get latency of new clients: the first Get (reads basalt:meta) and the second (cached)\n"
    "  snapshot    [--table=usertable --records=100000 --regions=1 --skip_load --flush_after_load --rounds=3\n"
    "               --threads=4 --seconds=10 --target=0 --snapshot_every_ms=1000 --data_dir=DIR]\n"
    "              snapshot and clone times of the loaded table; with --data_dir (the server's, local disk)\n"
    "              the export's MiB/s against a plain copy of the same files; YCSB A's p99 with snapshots\n"
    "              taken every --snapshot_every_ms against without, alternating runs\n"
    "  queue       [--queue=bench_queue --producers=3 --consumers=10 --groups=1 --payload=1024 --batch=500\n"
    "               --dequeue_batch=BATCH --batches_per_tx=1 --seconds=10 --partitions=2*group size\n"
    "               --salt_buckets=4 --partitioning=round_robin|hash|fifo --keep --no_baseline]  (--server only)\n"
    "              transactional queue: events/s produced and consumed per group, conflicts, and the\n"
    "              end-to-end latency from enqueue to the commit of its dequeue (p50, p99); then the\n"
    "              same producers' events as plain batched Puts, and the ratio\n"
    "  hbase_get   --hbase=HOST:PORT --server_pid=PID [--table=bench_hbase_get --records=10000 --gets=20000\n"
    "               --rounds=6 --value_size=100]  (--server only)\n"
    "              the server's CPU per Get (from /proc/PID/stat) through its HBase port and its TCP fast path\n"
    "              against its gRPC front end: the same keys, rounds in turn, one synchronous client each; ratios\n"
    "  replicate   --hbase=HOST:PORT --server_pid=PID [--table=bench_replicate --batches=100 --rows=500\n"
    "               --rounds=4 --value_size=100]  (--server only)\n"
    "              a sink's apply rate: batches of rows as a replication source's ReplicateWALEntry calls\n"
    "              on the HBase port against the same rows as gRPC BatchMutates (SYNC_WAL), alternating\n"
    "              rounds, one call at a time; cells/s, the server's CPU per cell, and the ratios\n"
    "  replicate_source --peer=HOST:PORT --peer_key=ZK:PORT:/PARENT [--table=bench_replicate_source --threads=16\n"
    "               --seconds=10 --rounds=3 --value_size=100 --probe_ms=100 --down_seconds=0]  (--server only)\n"
    "              the source's Puts/s with one replication peer against none (alternating rounds, each peer\n"
    "              drained and removed after its round), then the lag from a Put's acknowledgement on the\n"
    "              source to the row being readable on the peer (p50, p99) at 50 % and 80 % of the capacity;\n"
    "              with --down_seconds, a peer disabled that long under writes at 50 %, then its catch-up rate\n";

}  // namespace

int main(int argc, char** argv) {
  // Debian's Abseil keeps deadlock detection on (built without NDEBUG); it costs on every lock.
  basalt::DisableMutexDeadlockDetection();
  if ((argc == 3 || argc == 4) && std::strcmp(argv[1], "tcp_echo_port") == 0) {  // the ycsb TCP floor's child
    return basalt::bench::RunTcpEchoPort(std::atoi(argv[2]), argc == 4 && std::strcmp(argv[3], "codec") == 0);
  }
  if (argc < 3 || (std::strcmp(argv[1], "storage") != 0 && std::strcmp(argv[1], "server") != 0)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string group = argv[1];
  std::string sub = argv[2];
  auto flags = basalt::bench::Flags::Parse(argc, argv, 3);
  if (!flags.ok()) {
    std::fprintf(stderr, "%s\n%s", std::string(flags.status().message()).c_str(), kUsage);
    return 2;
  }
  basalt::bench::Report report;
  for (int i = 0; i < argc; ++i) {
    if (i) report.command += ' ';
    report.command += argv[i];
  }
  bool json = flags->Bool("json");
  int rc;
  if (group == "server") {
    if (sub == "latency") {
      rc = basalt::bench::RunServerLatency(*flags, &report);
    } else if (sub == "ycsb") {
      rc = basalt::bench::RunServerYcsb(*flags, &report);
    } else if (sub == "load") {
      rc = basalt::bench::RunServerLoad(*flags, &report);
    } else if (sub == "scan") {
      rc = basalt::bench::RunServerScan(*flags, &report);
    } else if (sub == "split") {
      rc = basalt::bench::RunServerSplit(*flags, &report);
    } else if (sub == "queue") {
      rc = basalt::bench::RunServerQueue(*flags, &report);
    } else if (sub == "locate") {
      rc = basalt::bench::RunServerLocate(*flags, &report);
    } else if (sub == "snapshot") {
      rc = basalt::bench::RunServerSnapshot(*flags, &report);
    } else if (sub == "hbase_get") {
      rc = basalt::bench::RunServerHBaseGet(*flags, &report);
    } else if (sub == "replicate") {
      rc = basalt::bench::RunServerReplicate(*flags, &report);
    } else if (sub == "replicate_source") {
      rc = basalt::bench::RunServerReplicateSource(*flags, &report);
    } else {
      std::fprintf(stderr, "unknown subcommand 'server %s'\n%s", sub.c_str(), kUsage);
      return 2;
    }
  } else if (sub == "crc") {
    rc = basalt::bench::RunCrc(*flags, &report);
  } else if (sub == "seed003") {
    rc = basalt::bench::RunSeed003(*flags, &report);
  } else if (sub == "compaction") {
    rc = basalt::bench::RunCompaction(*flags, &report);
  } else if (sub == "rocksdb") {
    rc = basalt::bench::RunRocksDb(*flags, &report);
  } else if (sub == "write") {
    rc = basalt::bench::RunWrite(*flags, &report);
  } else {
    std::fprintf(stderr, "unknown subcommand '%s'\n%s", sub.c_str(), kUsage);
    return 2;
  }
  if (rc != 0) return rc;
  basalt::bench::PrintReport(report, json);
  return 0;
}
