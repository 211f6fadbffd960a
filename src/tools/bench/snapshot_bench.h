// The snapshot benchmark's timings (`basalt-bench server snapshot`, server_ycsb.cc runs them
// around its YCSB part): snapshot and clone of a loaded table, and the export against a plain copy.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "basalt/client.h"
#include "src/tools/bench/bench_util.h"

namespace basalt::bench {

// Snapshot and clone, each timed `rounds` times on `table` (snapshots "bench-snap-<i>", each
// deleted but the last; clones "<table>_clone_<i>", each dropped): a record per round, the
// medians in the summary.
absl::Status TimeSnapshotAndClone(Admin* admin, const std::string& table, int rounds, Report* report);
// Snapshot `snapshot` exported (server::ExportSnapshot) from the server's `data_dir` (local disk)
// to a scratch directory, against a plain read/write/fsync copy of the same files: each after a
// sync(), in alternating order, `rounds` times; a record per round, the ratio of the sums.
absl::Status TimeExport(const std::string& data_dir, const std::string& snapshot, int rounds, Report* report);

}  // namespace basalt::bench
