// basalt-export-snapshot: copies a snapshot from one store to another (src/catalog/snapshot_export.h):
// out of a cluster to another cluster or to a directory kept as a backup, and back in. HBase's
// ExportSnapshot, for Basalt's stores:
//
//   basalt-export-snapshot --snapshot=nightly --from=rados:basalt/basalt:/data --to=/backups/basalt
//   basalt-export-snapshot --snapshot=nightly --from=/backups/basalt --to=rados:basalt/dr:/data
//
// A store is a directory (a standalone server's data_dir, or any directory: `snapshots/` is made
// under it) or rados:POOL/NAMESPACE:DATA_DIR (a cluster's rados_pool, rados_namespace and data_dir).
// Progress goes to stderr about once a second; the summary to stdout. Exit codes: 0 exported,
// 1 the export failed (the message says why; nothing half-made is left), 2 bad arguments.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/env.h"
#include "common/rados_env.h"
#include "common/status.h"
#include "src/base/flags.h"
#include "src/catalog/snapshot_export.h"

namespace basalt::server {
namespace {

struct Args {
  std::string snapshot, from, to, target;
  std::string from_ceph_conf = "/etc/ceph/ceph.conf", to_ceph_conf = "/etc/ceph/ceph.conf";
  std::string rados_client = "client.admin";
  uint64_t bandwidth = 0;
  bool help = false;
};

constexpr char kUsage[] =
    "usage: basalt-export-snapshot --snapshot=NAME --from=STORE --to=STORE [--target=NAME] [--bandwidth=BYTES]\n"
    "Copies a snapshot, every block's checksums verified as it is read; files the target holds in any of its\n"
    "snapshots already are not copied again. STORE: a directory (a standalone server's data_dir, or a backup\n"
    "directory), or rados:POOL/NAMESPACE:DATA_DIR (a cluster's rados_pool, rados_namespace and data_dir).\n"
    "Then, on the target: clone_snapshot 'NAME', 'table'.\n";

absl::StatusOr<Args> ParseArgs(const std::vector<std::string>& argv) {
  Args a;
  FlagSet flags("basalt-export-snapshot", {.config_file = false});
  auto text = [](std::string* to) {
    return [to](std::string_view v) {
      *to = std::string(v);
      return absl::OkStatus();
    };
  };
  flags.Add("snapshot", "", "the snapshot to copy", text(&a.snapshot));
  flags.Add("from", "", "the store it is in", text(&a.from));
  flags.Add("to", "", "the store to copy it to", text(&a.to));
  flags.Add("target", "", "its name there (default: its own)", text(&a.target));
  flags.Add("bandwidth", "0", "at most this many bytes written a second (50MiB); 0: no limit",
            [&a](std::string_view v) -> absl::Status {
              BASALT_ASSIGN_OR_RETURN(a.bandwidth, ParseBytes("bandwidth", v));
              return absl::OkStatus();
            });
  flags.Add("from_ceph_conf", a.from_ceph_conf, "the source's Ceph configuration, for a rados: store", text(&a.from_ceph_conf));
  flags.Add("to_ceph_conf", a.to_ceph_conf, "the target's Ceph configuration, for a rados: store", text(&a.to_ceph_conf));
  flags.Add("rados_client", a.rados_client, "the Ceph client (its keyring) the tool connects as", text(&a.rados_client));
  BASALT_RETURN_IF_ERROR(flags.Parse(argv));
  if (flags.help()) {
    std::cout << flags.Help(kUsage);
    a.help = true;
    return a;
  }
  for (const auto& [key, value] : {std::pair{"snapshot", &a.snapshot}, {"from", &a.from}, {"to", &a.to}}) {
    if (value->empty()) return absl::InvalidArgumentError(absl::StrCat("--", key, " is required"));
  }
  return a;
}

// A store from its text: a directory, or rados:POOL/NAMESPACE:DATA_DIR (connected here).
struct OpenStore {
  std::unique_ptr<Env> owned;
  SnapshotStore store;
};
absl::StatusOr<OpenStore> Open(const std::string& spec, const std::string& ceph_conf, const std::string& client) {
  OpenStore s;
  if (!absl::StartsWith(spec, "rados:")) {
    s.store = {Env::Default(), spec};
    return s;
  }
  const std::string rest = spec.substr(6);
  const size_t slash = rest.find('/'), colon = rest.find(':');
  if (slash == std::string::npos || colon == std::string::npos || colon < slash || slash == 0 || colon == slash + 1 ||
      colon + 1 == rest.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("store '", spec, "': a RADOS store is rados:POOL/NAMESPACE:DATA_DIR (rados:basalt/basalt:/data)"));
  }
  RadosEnvOptions ro;
  ro.ceph_conf = ceph_conf;
  ro.pool = rest.substr(0, slash);
  ro.root = rest.substr(slash + 1, colon - slash - 1);
  ro.client_name = client;
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<RadosEnv> env, RadosEnv::Connect(ro));
  s.owned = std::move(env);
  s.store = {s.owned.get(), rest.substr(colon + 1)};
  return s;
}

std::string MiB(uint64_t bytes) { return absl::StrFormat("%.1f MiB", bytes / 1048576.0); }

int Run(int argc, char** argv) {
  absl::StatusOr<Args> args = ParseArgs(std::vector<std::string>(argv + 1, argv + argc));
  if (!args.ok()) {
    std::cerr << "basalt-export-snapshot: " << args.status().message() << "\n" << kUsage;
    return 2;
  }
  if (args->help) return 0;
  absl::StatusOr<OpenStore> from = Open(args->from, args->from_ceph_conf, args->rados_client);
  absl::StatusOr<OpenStore> to = from.ok() ? Open(args->to, args->to_ceph_conf, args->rados_client) : from.status();
  if (!to.ok()) {
    std::cerr << "basalt-export-snapshot: " << to.status().ToString() << "\n";
    return to.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  ExportOptions o;
  o.target_name = args->target;
  o.bandwidth_bytes_per_s = args->bandwidth;
  o.on_progress = [](const ExportProgress& p) {
    const double s = absl::ToDoubleSeconds(p.elapsed);
    std::cerr << absl::StrFormat("export: %d/%d files, %s of %s written (%s/s), %d file(s) held by the target already\n",
                                 p.files_done, p.files, MiB(p.bytes_written), MiB(p.bytes - p.linked_bytes),
                                 MiB(s > 0 ? p.bytes_written / s : 0), p.linked_files);
  };
  absl::StatusOr<ExportProgress> done = ExportSnapshot(from->store, args->snapshot, to->store, o);
  if (!done.ok()) {
    std::cerr << "basalt-export-snapshot: " << done.status().ToString() << "\n";
    return 1;
  }
  const double s = absl::ToDoubleSeconds(done->elapsed);
  std::cout << absl::StrFormat(
      "exported snapshot %s to %s: %d file(s), %d bytes; copied %d file(s), %d bytes; %d file(s), %d bytes, held by the "
      "target already; %.2f s, %s/s\n",
      args->snapshot, args->to, done->files, done->bytes, done->copied_files, done->copied_bytes, done->linked_files,
      done->linked_bytes, s, MiB(s > 0 ? done->copied_bytes / s : 0));
  return 0;
}

}  // namespace
}  // namespace basalt::server

int main(int argc, char** argv) { return basalt::server::Run(argc, argv); }
