// A snapshot copied from one store to another (docs/DESIGN.md §16, "Export and import"): from a
// cluster's storage (RADOS) or a standalone server's data directory, to another cluster's, to a
// plain directory kept as a backup, or back. The same operation is the export and the import: a
// directory holding `snapshots/<name>/` is a store like any other, and a snapshot that arrives
// in a cluster's store is listed there at once (the catalogue reads its snapshots from storage)
// and becomes a table with clone_snapshot. HBase's ExportSnapshot does the same over HDFS.
//
// What it writes, in the target's `snapshots/<name>/`: each region's directory (CopyRegion,
// storage/region.h: every block verified as read, or named again when the target holds the same
// file in any of its snapshots: a chain of exports copies only what is new), then SNAPSHOT, last
// and durably. Until SNAPSHOT is there no cluster lists it, and a server's start-up on that
// store removes the directory; after an error the export removes what it wrote itself. A run
// killed part way leaves whole files only (each is written under a .tmp name and renamed), and
// running it again keeps them.
//
// The tool reads and writes the stores directly (src/tools/export/), as HBase's does HDFS: who
// may run it is whoever holds the stores' credentials (the Ceph keyring, the directories), the
// same power as a cluster's own daemons. Thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/env.h"

namespace basalt::server {

// Where a cluster (or a backup) keeps its files: `snapshots/` is under `data_dir` in `env`.
struct SnapshotStore {
  Env* env = nullptr;
  std::string data_dir;
};

struct ExportProgress {
  uint64_t files = 0, bytes = 0;                // the snapshot's block files
  uint64_t files_done = 0;                      // copied or found
  uint64_t copied_files = 0, copied_bytes = 0;  // read, verified and written
  uint64_t linked_files = 0, linked_bytes = 0;  // the target held them already
  uint64_t bytes_written = 0;                   // so far, of copied_bytes (as blocks go)
  absl::Duration elapsed;
};

struct ExportOptions {
  std::string target_name;            // the snapshot's name in the target; empty: its own
  uint64_t bandwidth_bytes_per_s = 0;  // at most this many bytes written a second; 0: no limit
  // Called about every `progress_every` while it copies, and once at the end.
  std::function<void(const ExportProgress&)> on_progress;
  absl::Duration progress_every = absl::Seconds(1);
  size_t read_bytes = 4 << 20;  // each read of the source
};

// Copies snapshot `name` from `from` to `to`. NotFound when `from` has no such snapshot (a
// directory without SNAPSHOT is not one), AlreadyExists when `to` has one of the target name,
// DataLoss for damage found in the source (the file, the block, the offset), and the target's
// refusals (a full disk: ResourceExhausted), each naming the snapshot.
absl::StatusOr<ExportProgress> ExportSnapshot(const SnapshotStore& from, std::string_view name, const SnapshotStore& to,
                                              const ExportOptions& options);

}  // namespace basalt::server
