// `basalt-bench server snapshot`'s parts that need no YCSB (src/tools/bench/snapshot_bench.h).
#include "src/tools/bench/snapshot_bench.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "common/env.h"
#include "src/catalog/snapshot_export.h"
#include "src/schema/snapshot_file.h"
#include "src/tools/bench/server_bench_common.h"

namespace basalt::bench {
namespace {

// A plain copy of every file under `from` to `to` (read 4 MiB at a time, written, fsynced): what
// the snapshot export is compared with.
absl::StatusOr<uint64_t> PlainCopy(const std::string& from, const std::string& to) {
  uint64_t bytes = 0;
  std::vector<char> buf(4 << 20);
  for (const auto& e : std::filesystem::recursive_directory_iterator(from)) {
    const std::string dst = to + "/" + std::filesystem::relative(e.path(), from).string();
    if (e.is_directory()) {
      std::filesystem::create_directories(dst);
      continue;
    }
    const int in = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
    const int out = ::open(dst.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (in < 0 || out < 0) return absl::InternalError(absl::StrCat("plain copy of ", e.path().string(), ": open"));
    for (ssize_t n; (n = ::read(in, buf.data(), buf.size())) > 0; bytes += n) {
      if (::write(out, buf.data(), n) != n) return absl::InternalError("plain copy: write");
    }
    const bool synced = ::fsync(out) == 0;
    ::close(in);
    ::close(out);
    if (!synced) return absl::InternalError("plain copy: fsync");
  }
  return bytes;
}

}  // namespace

// Snapshot and clone, each timed `rounds` times on the loaded table (taken, then deleted;
// cloned, then dropped).
absl::Status TimeSnapshotAndClone(Admin* admin, const std::string& table, int rounds, Report* report) {
  LatencyHistogram snap_h, clone_h;
  for (int i = 0; i < rounds; ++i) {
    const std::string name = absl::StrCat("bench-snap-", i), clone = absl::StrCat(table, "_clone_", i);
    auto t0 = Clock::now();
    absl::StatusOr<SnapshotDescription> taken = admin->Snapshot(table, name);
    const double snap_s = Seconds(t0, Clock::now());
    BASALT_RETURN_IF_ERROR(taken.status());
    t0 = Clock::now();
    BASALT_RETURN_IF_ERROR(admin->CloneSnapshot(name, clone));
    const double clone_s = Seconds(t0, Clock::now());
    report->records.push_back({Text("op", "snapshot + clone"), Num("round", i), Num("table_MiB", taken->bytes / 1048576.0, 1),
                               Num("regions", taken->regions), Num("files", static_cast<double>(taken->files)),
                               Num("snapshot_ms", snap_s * 1e3, 1), Num("clone_ms", clone_s * 1e3, 1)});
    snap_h.Record(static_cast<uint64_t>(snap_s * 1e9));
    clone_h.Record(static_cast<uint64_t>(clone_s * 1e9));
    BASALT_RETURN_IF_ERROR(admin->DisableTable(clone));
    BASALT_RETURN_IF_ERROR(admin->DropTable(clone));
    if (i + 1 < rounds) BASALT_RETURN_IF_ERROR(admin->DeleteSnapshot(name));
  }
  report->summary.push_back(Num("snapshot_p50_ms", snap_h.PercentileMicros(0.5) / 1e3, 1));
  report->summary.push_back(Num("clone_p50_ms", clone_h.PercentileMicros(0.5) / 1e3, 1));
  return absl::OkStatus();
}

// The last snapshot exported from the server's data directory to a scratch directory, against a
// plain copy of the same files, alternating, `rounds` each.
absl::Status TimeExport(const std::string& data_dir, const std::string& snapshot, int rounds, Report* report) {
  const std::string scratch = absl::StrCat(std::filesystem::temp_directory_path().string(), "/basalt-bench-export-",
                                           ::getpid());
  double export_mbps = 0, plain_mbps = 0;
  for (int i = 0; i < rounds; ++i) {
    std::filesystem::remove_all(scratch);
    absl::StatusOr<server::ExportProgress> e;
    uint64_t plain_bytes = 0;
    double export_s = 0, plain_s = 0;
    // Each starts with nothing dirty in the page cache (sync), in alternating order.
    for (int k = 0; k < 2; ++k) {
      ::sync();
      const auto t0 = Clock::now();
      if ((k == 0) == (i % 2 == 0)) {
        e = server::ExportSnapshot({Env::Default(), data_dir}, snapshot, {Env::Default(), scratch + "/export"},
                                   server::ExportOptions{});
        BASALT_RETURN_IF_ERROR(e.status());
        export_s = Seconds(t0, Clock::now());
      } else {
        BASALT_ASSIGN_OR_RETURN(plain_bytes, PlainCopy(server::SnapshotDirIn(data_dir, snapshot), scratch + "/plain"));
        plain_s = Seconds(t0, Clock::now());
      }
    }
    const double em = e->copied_bytes / 1048576.0 / export_s, pm = plain_bytes / 1048576.0 / plain_s;
    report->records.push_back({Text("op", "export vs plain copy"), Num("round", i),
                               Num("MiB", e->copied_bytes / 1048576.0, 1), Num("export_MiB_per_s", em, 1),
                               Num("plain_MiB_per_s", pm, 1), Num("ratio", em / pm, 2)});
    export_mbps += em;
    plain_mbps += pm;
  }
  std::filesystem::remove_all(scratch);
  report->summary.push_back(Num("export_vs_plain_copy", export_mbps / plain_mbps, 2));
  return absl::OkStatus();
}

}  // namespace basalt::bench
