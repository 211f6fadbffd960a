// An Env on Ceph RADOS through librados, so that every log and block file of a cluster lives on
// one shared, replicated store (as HBase's live on HDFS) and a region moves or fails over by
// being opened elsewhere, with no data copied. The engine's code is the same as on a local disk.
//
// Layout, all in one RADOS namespace of one pool (`root`), so several installations or tests
// share a pool without seeing each other:
//   - A directory is an object "d:<id>" whose omap maps each name in it to "d<id>" (a directory)
//     or "f<id>" (a file); the root directory is "d:root". Ids are unique across the cluster
//     (the RADOS client's instance id and a counter), so a rename of a file or of a whole
//     directory only moves one omap entry and copies no data.
//   - A file is a run of objects "f:<id>:<chunk>" of `chunk_bytes` each (RADOS refuses objects
//     over osd_max_object_size, 128 MiB, and writes over osd_max_write_size, 90 MB), the size its
//     writer was set to: the id says it ("<id>+<bytes in hex>"), so a client set to another size
//     (a master reading a region server's log) reads the file as it was written. A file is
//     written from the front, so its size is where the first chunk that is not full ends: the
//     writer starts a chunk only once every write to the one before it has completed.
//   - Writes go at explicit offsets (never RADOS appends): a write sent again after a timeout
//     puts the same bytes in the same place, so a retried write can never be applied twice.
//   - Every change of a directory is one RADOS write operation, applied atomically and durable
//     when acknowledged, that asserts the version of the directory object it was decided on
//     (compare and swap), so two processes changing one directory cannot lose each other's
//     change. A rename within a directory is one such operation. A rename from one directory to
//     another, and a delete (the entry, then the file's objects), first record an intent in the
//     "intents" object; a crash part way leaves the intent, and the next RadosEnv to connect
//     finishes it, so a file is never lost, never left under two names, and never leaks.
//   - A file may have several names (LinkFile, a hard link): then an object "l:<id>" lists them,
//     each "<directory id>/<name>", and a name counts while its directory's entry still names
//     the file (a directory that moves keeps its id, so the names in it stay right). A delete,
//     an overwrite or a rename drops or moves its name there, and the file's objects go only
//     when no name counts. A link records its new name as pending under an "L" intent, checks
//     that the source still names the file, then makes the entry; a delete that read the names
//     in between sees the pending one, and one before it removed the source, which the link
//     then finds and gives up. A file never linked has no such object and costs nothing more.
//   - Durable: a write operation is acknowledged by RADOS only once every replica has it, so
//     Sync waits for the writes in flight; SyncDir has nothing to do.
//   - Fenced: once the cluster has blocklisted this client, each write fails with ESHUTDOWN and
//     Sync answers Aborted("fenced ...") (tested with two clients and a map barrier).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/env.h"

namespace basalt {

// What this process does when the cluster refuses its client as blocklisted (ESHUTDOWN from any
// operation): another server owns its files now, so nothing it does can be acknowledged any
// more. A daemon ends itself there (`what`: the refused operation), before the refusal reaches
// its caller: its clients see the connection go and send the call elsewhere, as after a crash,
// instead of an error for a call nothing of which was applied (docs/DESIGN.md §6). Unset (tools, tests):
// the operation fails with Aborted "fenced". Process-wide; set once at start-up.
void SetFencedHandler(void (*handler)(std::string_view what));

struct RadosEnvOptions {
  std::string ceph_conf;                  // the cluster's ceph.conf (monitor addresses)
  std::string pool = "basalt";            // an existing pool
  std::string root = "basalt";            // the RADOS namespace holding this Env's objects
  std::string client_name = "client.admin";
  uint64_t chunk_bytes = 32ull << 20;     // size of each object of a file (≤ 128 MiB)
  uint64_t write_bytes = 4ull << 20;      // most bytes in one RADOS write (≤ chunk_bytes)
  int max_writes_in_flight = 4;           // per file
  // An operation RADOS has not answered in this time fails with DeadlineExceeded instead of
  // waiting forever (librados waits forever by default).
  absl::Duration op_timeout = absl::Seconds(30);
};

class RadosEnv final : public Env {
 public:
  // Connects to the cluster, opens the pool and namespace, makes the root directory if it is not
  // there, and finishes the intents other clients left (see above).
  static absl::StatusOr<std::unique_ptr<RadosEnv>> Connect(const RadosEnvOptions& options);
  ~RadosEnv() override;

  // This client's address as the cluster knows it: what a master blocklists to fence it.
  std::string ClientAddress() const;
  // Fences another client of the cluster: blocklists its address, waits for the newest OSD map,
  // then writes one object in every placement group of the pool (a map barrier), so that every
  // OSD refuses that client before this returns; then finishes that client's intents.
  absl::Status Fence(const std::string& client_address);
  // Finishes intents left by clients that crashed mid-rename or mid-delete (done at Connect;
  // after a Fence, the fencer calls it again for the fenced client's).
  absl::Status FinishIntents();

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override;
  bool FileExists(const std::string& path) override;
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override;
  absl::Status DeleteFile(const std::string& path) override;
  absl::Status CreateDirs(const std::string& path) override;
  absl::Status DeleteDir(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override;
  absl::Status ReplaceFile(const std::string& from, const std::string& to) override;
  absl::Status Truncate(const std::string& path, uint64_t size) override;
  absl::Status SyncDir(const std::string& dir) override;
  absl::Status RemoveTree(const std::string& path) override;
  absl::Status LinkFile(const std::string& from, const std::string& to) override;
  absl::StatusOr<uint64_t> LinkCount(const std::string& path) override;

  // Every object of this Env's namespace, sorted (for tests and checks: it walks the pool).
  absl::StatusOr<std::vector<std::string>> ListObjects();

  const RadosEnvOptions& options() const { return options_; }

  class Impl;

 private:
  RadosEnv(RadosEnvOptions options, std::unique_ptr<Impl> impl);

  RadosEnvOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace basalt
