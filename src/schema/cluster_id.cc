#include "src/schema/cluster_id.h"

#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/uuid.h"

namespace basalt::server {

bool IsUuid(std::string_view s) { return ParseUuid(s).has_value(); }

std::string NewUuid() {
  absl::BitGen gen;
  Uuid u{absl::Uniform<uint64_t>(gen), absl::Uniform<uint64_t>(gen)};
  u.hi = (u.hi & ~0xf000ull) | 0x4000ull;                      // version 4
  u.lo = (u.lo & ~(0xc000ull << 48)) | (0x8000ull << 48);      // the RFC 4122 variant
  return UuidText(u);
}

absl::StatusOr<std::string> LoadOrCreateClusterId(Env* env, const std::string& data_dir) {
  const std::string path = absl::StrCat(data_dir, "/", kClusterIdFileName);
  if (!env->FileExists(path)) {
    BASALT_RETURN_IF_ERROR(env->CreateDirs(data_dir));
    const std::string id = NewUuid();
    const std::string mine = absl::StrCat(path, ".", id);
    BASALT_RETURN_IF_ERROR(env->WriteFileDurably(mine, id + "\n"));
    absl::Status linked = env->LinkFile(mine, path);  // fails when another start made it first
    env->DeleteFile(mine).IgnoreError();
    if (linked.ok()) BASALT_RETURN_IF_ERROR(env->SyncDir(data_dir));
    if (!linked.ok() && !env->FileExists(path)) return linked;
  }
  BASALT_ASSIGN_OR_RETURN(std::string text, env->ReadFileToString(path));
  const std::string id(absl::StripTrailingAsciiWhitespace(text));
  if (!IsUuid(id)) {
    return absl::DataLossError(absl::StrCat("the cluster id file ", path, " holds no UUID (", text.size(),
                                            " bytes): restore it from a backup of this cluster, never make a new one "
                                            "for a cluster that has replication peers"));
  }
  return id;
}

}  // namespace basalt::server
