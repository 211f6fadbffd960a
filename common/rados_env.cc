#include "common/rados_env.h"

#include <rados/librados.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "absl/functional/function_ref.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/fault_point.h"
#include "common/status.h"

namespace basalt {
namespace {

using librados::bufferlist;

constexpr char kRootId[] = "root";
constexpr char kIntentsObject[] = "intents";
constexpr int kMaxRaces = 1000;  // a directory changed under us this many times in a row: give up
constexpr uint32_t kBlocklistSeconds = 7 * 24 * 3600;  // how long a fenced client stays fenced

std::atomic<void (*)(std::string_view)> fenced_handler{nullptr};

absl::Status RadosError(std::string_view what, std::string_view path, int r) {
  const int err = r < 0 ? -r : r;
  std::string msg = absl::StrCat("rados: ", AV(what), " ", AV(path), ": ", std::strerror(err));
  switch (err) {
    case ENOENT: return absl::NotFoundError(msg);
    case ENOSPC:
    case EDQUOT: return absl::ResourceExhaustedError(msg);
    case ESHUTDOWN:  // the cluster blocklisted this client: another server owns its files now
      if (auto* handler = fenced_handler.load(std::memory_order_acquire)) handler(msg);
      return absl::AbortedError(absl::StrCat("fenced: this client is blocklisted (", msg, ")"));
    case ETIMEDOUT: return absl::DeadlineExceededError(msg);
    case EEXIST: return absl::AlreadyExistsError(msg);
    default: return absl::InternalError(msg);
  }
}

// An entry of a directory: a file's or a directory's id.
struct Entry {
  char type = 'f';
  std::string id;
  bool dir() const { return type == 'd'; }
  bool operator==(const Entry& o) const { return type == o.type && id == o.id; }
  std::string Encode() const { return std::string(1, type) + id; }
  static std::optional<Entry> Decode(std::string_view v) {
    if (v.size() < 2 || (v[0] != 'd' && v[0] != 'f')) return std::nullopt;
    return Entry{v[0], std::string(v.substr(1))};
  }
};

// A file's object size is part of its id ("<id>+<chunk bytes, hex>"), so that every client reads
// it as it was written, whatever its own chunk_bytes. An id without one is of a file written before
// ids said it, with the default of then.
constexpr uint64_t kChunkBytesOfOldIds = 32ull << 20;
uint64_t ChunkBytesOf(std::string_view id) {
  const size_t plus = id.rfind('+');
  uint64_t n = 0;
  if (plus == std::string_view::npos || !absl::SimpleHexAtoi(AV(id.substr(plus + 1)), &n) || n == 0) {
    return kChunkBytesOfOldIds;
  }
  return n;
}

std::string DirObject(std::string_view id) { return absl::StrCat("d:", AV(id)); }
std::string ChunkObject(std::string_view id, uint64_t chunk) { return absl::StrFormat("f:%s:%08x", AV(id), chunk); }

bufferlist Bytes(std::string_view s) {
  bufferlist bl;
  bl.append(s.data(), static_cast<unsigned>(s.size()));
  return bl;
}

// A path's components, made lexically absolute ("a/./b/../c" is "a/c"; every path is relative
// to the root directory, with or without a leading '/').
std::vector<std::string> Components(std::string_view path) {
  std::vector<std::string> out;
  for (absl::string_view c : absl::StrSplit(AV(path), '/', absl::SkipEmpty())) {
    if (c == ".") continue;
    if (c == "..") {
      if (!out.empty()) out.pop_back();
      continue;
    }
    out.emplace_back(c);
  }
  return out;
}

// Waits for an operation started with a completion and gives its result (and the object's
// version, for reads that decide a compare-and-swap).
struct Waited {
  int r;
  uint64_t version;
};
Waited Wait(librados::AioCompletion* c) {
  c->wait_for_complete();
  Waited w{c->get_return_value(), c->get_version64()};
  c->release();
  return w;
}

// Runs a read operation and waits for it (a completion gives the object's version too).
Waited ReadAndWait(librados::IoCtx& io, const std::string& oid, librados::ObjectReadOperation* op) {
  librados::AioCompletion* c = librados::Rados::aio_create_completion();
  if (const int r = io.aio_operate(oid, c, op, nullptr); r < 0) {  // not started: never completes
    c->release();
    return Waited{r, 0};
  }
  return Wait(c);
}

}  // namespace

void SetFencedHandler(void (*handler)(std::string_view what)) {
  fenced_handler.store(handler, std::memory_order_release);
}

class RadosEnv::Impl {
 public:
  explicit Impl(const RadosEnvOptions& options) : opt(options) {}
  ~Impl() {
    io.close();
    rados.shutdown();
  }

  RadosEnvOptions opt;
  librados::Rados rados;
  librados::IoCtx io;
  std::string instance;  // this client's unique id in the cluster, in hex
  std::atomic<uint64_t> next_id{1};

  std::string NewId() { return absl::StrCat(instance, ".", absl::Hex(next_id.fetch_add(1))); }
  std::string NewFileId() { return absl::StrCat(NewId(), "+", absl::Hex(opt.chunk_bytes)); }

  // Entries `names` of directory `dir` and the directory object's version.
  struct DirState {
    std::map<std::string, Entry> entries;
    uint64_t version = 0;
  };
  absl::StatusOr<DirState> ReadEntries(const std::string& dir, const std::set<std::string>& names,
                                       std::string_view path) {
    librados::ObjectReadOperation op;
    std::map<std::string, bufferlist> vals;
    int rv = 0;
    op.omap_get_vals_by_keys(names, &vals, &rv);
    const Waited w = ReadAndWait(io, DirObject(dir), &op);
    if (w.r < 0) return RadosError("reading directory of", path, w.r);
    DirState st;
    st.version = w.version;
    for (auto& [k, v] : vals) {
      std::optional<Entry> e = Entry::Decode(v.to_str());
      if (!e) return absl::DataLossError(absl::StrCat("rados: entry '", k, "' of the directory of ", AV(path), " is not an entry"));
      st.entries.emplace(k, *std::move(e));
    }
    return st;
  }

  // Where a path is: the directory holding its last component, that name, and the entry if the
  // name is there. The root directory is {"", "", its entry}. Every directory above must exist.
  struct Lookup {
    std::string parent;
    std::string name;
    std::optional<Entry> entry;
  };
  absl::StatusOr<Lookup> Resolve(std::string_view path) {
    std::vector<std::string> parts = Components(path);
    Lookup l;
    l.entry = Entry{'d', kRootId};
    for (size_t i = 0; i < parts.size(); ++i) {
      if (!l.entry || !l.entry->dir()) {
        return absl::NotFoundError(absl::StrCat("rados: ", AV(path), ": ", l.entry ? "a file" : "no directory",
                                                " where a directory should be (", l.name, ")"));
      }
      l.parent = l.entry->id;
      l.name = parts[i];
      absl::StatusOr<DirState> st = ReadEntries(l.parent, {l.name}, path);
      if (absl::IsNotFound(st.status())) {
        l.entry.reset();  // a directory being deleted: nothing is in it
        continue;
      }
      if (!st.ok()) return st.status();
      auto it = st->entries.find(l.name);
      if (it == st->entries.end()) {
        l.entry.reset();
      } else {
        l.entry = it->second;
      }
    }
    return l;
  }

  absl::StatusOr<Lookup> ResolveParent(std::string_view path) {
    BASALT_ASSIGN_OR_RETURN(Lookup l, Resolve(path));
    if (l.name.empty()) return absl::InvalidArgumentError(absl::StrCat("rados: ", AV(path), ": the root directory"));
    return l;
  }

  absl::StatusOr<Entry> ResolveFile(std::string_view path) {
    BASALT_ASSIGN_OR_RETURN(Lookup l, Resolve(path));
    if (!l.entry) return absl::NotFoundError(absl::StrCat("rados: ", AV(path), ": no such file"));
    if (l.entry->dir()) return absl::FailedPreconditionError(absl::StrCat("rados: ", AV(path), ": a directory, not a file"));
    return *l.entry;
  }

  // What SetEntry should do with the entry it found: fail, apply the change, or leave it be.
  enum class Decision { kApply, kSkip };
  using Check = absl::FunctionRef<absl::StatusOr<Decision>(const std::optional<Entry>& old)>;

  // Sets entry `name` of directory `dir` to `to` (or removes it when `to` is empty), once
  // `check` has approved what is there now, as one compare-and-swap on the directory object. A
  // file the change replaces or removes is then deleted under an intent. Returns what was there.
  // A file whose entry a change removes: deleted, or kept because it moved (its other entry).
  enum class Dropped { kDelete, kKeep };
  absl::StatusOr<std::optional<Entry>> SetEntry(const std::string& dir, const std::string& name,
                                                const std::optional<Entry>& to, std::string_view path, Check check,
                                                Dropped dropped = Dropped::kDelete) {
    for (int attempt = 0; attempt < kMaxRaces; ++attempt) {
      BASALT_ASSIGN_OR_RETURN(DirState st, ReadEntries(dir, {name}, path));
      std::optional<Entry> old;
      if (auto it = st.entries.find(name); it != st.entries.end()) old = it->second;
      BASALT_ASSIGN_OR_RETURN(Decision d, check(old));
      if (d == Decision::kSkip) return old;
      const bool drops_file = dropped == Dropped::kDelete && old && !old->dir() && !(to && *to == *old);
      std::string intent;
      if (drops_file) {
        BASALT_ASSIGN_OR_RETURN(intent, AddIntent({"G", dir, name, old->id}));
      }
      librados::ObjectWriteOperation op;
      op.assert_version(st.version);
      if (to) {
        op.omap_set({{name, Bytes(to->Encode())}});
      } else {
        op.omap_rm_keys({name});
      }
      const int r = io.operate(DirObject(dir), &op);
      if (r == -ERANGE || r == -EOVERFLOW) {  // the directory changed since we read it
        if (!intent.empty()) RemoveIntent(intent).IgnoreError();
        continue;
      }
      if (r < 0) {
        if (!intent.empty()) RemoveIntent(intent).IgnoreError();
        return RadosError("changing the directory of", path, r);
      }
      if (drops_file) {
        FaultPoint("rados_env.unlink.between");
        BASALT_RETURN_IF_ERROR(RemoveChunks(old->id, path));
        BASALT_RETURN_IF_ERROR(RemoveIntent(intent));
      }
      return old;
    }
    return absl::AbortedError(absl::StrCat("rados: the directory of ", AV(path), " kept changing under ", kMaxRaces,
                                           " attempts to change it"));
  }

  // Moves entry `from` of `dir` to `to` in the same directory, in one operation.
  absl::Status MoveWithin(const std::string& dir, const std::string& from, const std::string& to, const Entry& e,
                          std::string_view path) {
    for (int attempt = 0; attempt < kMaxRaces; ++attempt) {
      BASALT_ASSIGN_OR_RETURN(DirState st, ReadEntries(dir, {from, to}, path));
      auto f = st.entries.find(from);
      if (f == st.entries.end() || !(f->second == e)) {
        return absl::NotFoundError(absl::StrCat("rados: rename ", AV(path), ": it was removed or replaced meanwhile"));
      }
      std::optional<Entry> old;
      if (auto it = st.entries.find(to); it != st.entries.end()) old = it->second;
      if (old && old->dir()) BASALT_RETURN_IF_ERROR(CheckEmptyDir(old->id, path));
      std::string intent;
      if (old && !old->dir()) {
        BASALT_ASSIGN_OR_RETURN(intent, AddIntent({"G", dir, to, old->id}));
      }
      librados::ObjectWriteOperation op;
      op.assert_version(st.version);
      op.omap_rm_keys({from});
      op.omap_set({{to, Bytes(e.Encode())}});
      const int r = io.operate(DirObject(dir), &op);
      if (r == -ERANGE || r == -EOVERFLOW) {
        if (!intent.empty()) RemoveIntent(intent).IgnoreError();
        continue;
      }
      if (r < 0) {
        if (!intent.empty()) RemoveIntent(intent).IgnoreError();
        return RadosError("renaming", path, r);
      }
      if (old && old->dir()) RemoveDirObject(old->id, path).IgnoreError();
      if (old && !old->dir()) {
        BASALT_RETURN_IF_ERROR(RemoveChunks(old->id, path));
        BASALT_RETURN_IF_ERROR(RemoveIntent(intent));
      }
      return absl::OkStatus();
    }
    return absl::AbortedError(absl::StrCat("rados: the directory of ", AV(path), " kept changing"));
  }

  // Moves an entry from one directory to another: `to` first, then `from`, under an intent that
  // the next client to connect finishes if this one crashes in between.
  absl::Status MoveAcross(const Lookup& from, const Lookup& to, std::string_view path) {
    const Entry& e = *from.entry;
    BASALT_ASSIGN_OR_RETURN(std::string intent, AddIntent({"M", from.parent, from.name, to.parent, to.name, e.Encode()}));
    BASALT_RETURN_IF_ERROR(FinishMove(from.parent, from.name, to.parent, to.name, e, path));
    return RemoveIntent(intent);
  }

  absl::Status FinishMove(const std::string& fdir, const std::string& fname, const std::string& tdir,
                          const std::string& tname, const Entry& e, std::string_view path) {
    BASALT_ASSIGN_OR_RETURN(DirState st, ReadEntries(fdir, {fname}, path));
    auto f = st.entries.find(fname);
    if (f == st.entries.end() || !(f->second == e)) return absl::OkStatus();  // done already
    BASALT_RETURN_IF_ERROR(SetEntry(tdir, tname, e, path, [&](const std::optional<Entry>& old) -> absl::StatusOr<Decision> {
                             if (old && *old == e) return Decision::kSkip;
                             if (old && old->dir()) BASALT_RETURN_IF_ERROR(CheckEmptyDir(old->id, path));
                             return Decision::kApply;
                           }).status());
    FaultPoint("rados_env.move_across.between");
    return SetEntry(
               fdir, fname, std::nullopt, path,
               [&](const std::optional<Entry>& old) -> absl::StatusOr<Decision> {
                 return old && *old == e ? Decision::kApply : Decision::kSkip;
               },
               Dropped::kKeep)
        .status();
  }

  absl::Status CheckEmptyDir(const std::string& id, std::string_view path) {
    BASALT_ASSIGN_OR_RETURN(bool empty, DirEmpty(id, path));
    if (!empty) return absl::FailedPreconditionError(absl::StrCat("rados: ", AV(path), ": directory not empty"));
    return absl::OkStatus();
  }

  absl::StatusOr<bool> DirEmpty(const std::string& id, std::string_view path) {
    std::set<std::string> keys;
    const int r = io.omap_get_keys2(DirObject(id), "", 1, &keys, nullptr);
    if (r == -ENOENT) return true;
    if (r < 0) return RadosError("listing", path, r);
    return keys.empty();
  }

  absl::Status RemoveDirObject(const std::string& id, std::string_view path) {
    const int r = io.remove(DirObject(id));
    if (r < 0 && r != -ENOENT) return RadosError("removing directory", path, r);
    return absl::OkStatus();
  }

  // A file's size: where the first chunk that is not full ends (see the header).
  absl::StatusOr<uint64_t> FileSize(const std::string& id, std::string_view path) {
    const uint64_t chunk_bytes = ChunkBytesOf(id);
    uint64_t size = 0;
    for (uint64_t chunk = 0;; ++chunk) {
      uint64_t n = 0;
      time_t mtime = 0;
      const int r = io.stat(ChunkObject(id, chunk), &n, &mtime);
      if (r == -ENOENT) return size;
      if (r < 0) return RadosError("stat", path, r);
      size += std::min<uint64_t>(n, chunk_bytes);
      if (n < chunk_bytes) return size;
    }
  }

  // Removes a file's objects, last first, so that a crash part way leaves a shorter file.
  absl::Status RemoveChunks(const std::string& id, std::string_view path, uint64_t keep = 0) {
    uint64_t count = 0;
    for (;; ++count) {
      uint64_t n = 0;
      time_t mtime = 0;
      const int r = io.stat(ChunkObject(id, count), &n, &mtime);
      if (r == -ENOENT) break;
      if (r < 0) return RadosError("stat", path, r);
    }
    for (uint64_t c = count; c-- > keep;) {
      const int r = io.remove(ChunkObject(id, c));
      if (r < 0 && r != -ENOENT) return RadosError("removing", path, r);
    }
    return absl::OkStatus();
  }

  // Intents: operations of two or more steps, recorded before the first step, removed after
  // the last. Key: this client's instance and a counter; value: fields joined by '\0'.
  absl::StatusOr<std::string> AddIntent(std::vector<std::string> fields) {
    const std::string key = NewId();
    librados::ObjectWriteOperation op;
    op.omap_set({{key, Bytes(absl::StrJoin(fields, absl::string_view("\0", 1)))}});
    const int r = io.operate(kIntentsObject, &op);
    if (r < 0) return RadosError("recording intent", fields[0], r);
    return key;
  }
  absl::Status RemoveIntent(const std::string& key) {
    librados::ObjectWriteOperation op;
    op.omap_rm_keys({key});
    const int r = io.operate(kIntentsObject, &op);
    if (r < 0 && r != -ENOENT) return RadosError("removing intent", key, r);
    return absl::OkStatus();
  }

  absl::Status FinishIntents(bool others_only) {
    std::map<std::string, bufferlist> all;
    std::string after;
    while (true) {
      std::map<std::string, bufferlist> page;
      const int r = io.omap_get_vals2(kIntentsObject, after, 1000, &page, nullptr);
      if (r == -ENOENT) break;
      if (r < 0) return RadosError("reading intents", kIntentsObject, r);
      if (page.empty()) break;
      after = page.rbegin()->first;
      all.merge(page);
    }
    const std::string mine = instance + ".";
    for (auto& [key, value] : all) {
      if (others_only && absl::StartsWith(key, mine)) continue;
      const std::string v = value.to_str();
      std::vector<std::string> f = absl::StrSplit(v, absl::ByChar('\0'));
      const std::string what = absl::StrCat("intent ", key);
      if (f[0] == "G" && f.size() == 4) {
        // Delete file f[3] unless entry f[2] of directory f[1] still names it.
        absl::StatusOr<DirState> st = ReadEntries(f[1], {f[2]}, what);
        if (!st.ok() && !absl::IsNotFound(st.status())) return st.status();
        const bool named = st.ok() && st->entries.count(f[2]) > 0 && st->entries.at(f[2]).id == f[3];
        if (!named) BASALT_RETURN_IF_ERROR(RemoveChunks(f[3], what));
      } else if (f[0] == "M" && f.size() == 6) {
        std::optional<Entry> e = Entry::Decode(f[5]);
        if (!e) return absl::DataLossError(absl::StrCat("rados: ", what, " is not an intent"));
        BASALT_RETURN_IF_ERROR(FinishMove(f[1], f[2], f[3], f[4], *e, what));
      } else {
        return absl::DataLossError(absl::StrCat("rados: ", what, " is not an intent"));
      }
      BASALT_RETURN_IF_ERROR(RemoveIntent(key));
    }
    return absl::OkStatus();
  }

  // One object name in each placement group of the pool (found once, from the pool's pg_num
  // and the hash that places objects: Ceph's stable_mod).
  absl::StatusOr<std::vector<std::string>> BarrierObjects() {
    absl::MutexLock lock(&barrier_mu);
    if (!barriers.empty()) return barriers;
    bufferlist out;
    std::string outs;
    const std::string cmd = absl::StrCat(R"({"prefix":"osd pool get","pool":")", opt.pool, R"(","var":"pg_num","format":"json"})");
    int r = rados.mon_command(cmd, {}, &out, &outs);
    if (r < 0) return RadosError(absl::StrCat("reading pg_num (", outs, ") of pool"), opt.pool, r);
    const std::string json = out.to_str();
    const size_t at = json.find("\"pg_num\":");
    uint32_t pg_num = 0;
    if (at == std::string::npos ||
        !absl::SimpleAtoi(absl::string_view(json).substr(at + 9, json.find_first_of(",}", at) - at - 9), &pg_num) || pg_num == 0) {
      return absl::InternalError(absl::StrCat("rados: no pg_num in the answer of 'osd pool get': ", json));
    }
    uint32_t mask = 1;
    while (mask < pg_num) mask <<= 1;
    mask -= 1;
    std::vector<std::string> found(pg_num);
    uint32_t have = 0;
    for (uint32_t n = 0; have < pg_num; ++n) {
      if (n > 1000 * pg_num) return absl::InternalError("rados: could not find an object name for every placement group");
      std::string oid = absl::StrCat("barrier:", n);
      uint32_t hash = 0;
      if ((r = io.get_object_pg_hash_position2(oid, &hash)) < 0) return RadosError("placing", oid, r);
      const uint32_t pg = (hash & mask) < pg_num ? (hash & mask) : (hash & (mask >> 1));
      if (found[pg].empty()) {
        found[pg] = std::move(oid);
        ++have;
      }
    }
    barriers = std::move(found);
    return barriers;
  }
  absl::Mutex barrier_mu;
  std::vector<std::string> barriers ABSL_GUARDED_BY(barrier_mu);

  absl::Status DeleteDirEntry(const Lookup& l, std::string_view path) {
    // The directory object goes first, asserting the version at which it was seen empty, so a
    // file made in it meanwhile makes this fail instead of vanishing with it.
    for (int attempt = 0; attempt < kMaxRaces; ++attempt) {
      librados::ObjectReadOperation rop;
      std::set<std::string> keys;
      int rv = 0;
      rop.omap_get_keys2("", 1, &keys, nullptr, &rv);
      const Waited w = ReadAndWait(io, DirObject(l.entry->id), &rop);
      if (w.r == -ENOENT) break;
      if (w.r < 0) return RadosError("listing", path, w.r);
      if (!keys.empty()) return absl::FailedPreconditionError(absl::StrCat("rados: rmdir ", AV(path), ": directory not empty"));
      librados::ObjectWriteOperation op;
      op.assert_version(w.version);
      op.remove();
      const int r = io.operate(DirObject(l.entry->id), &op);
      if (r == -ERANGE || r == -EOVERFLOW) continue;
      if (r < 0 && r != -ENOENT) return RadosError("rmdir", path, r);
      break;
    }
    return SetEntry(l.parent, l.name, std::nullopt, path, [&](const std::optional<Entry>& old) -> absl::StatusOr<Decision> {
             return old && *old == *l.entry ? Decision::kApply : Decision::kSkip;
           }).status();
  }

  absl::Status RemoveTree(const Lookup& l, std::string_view path) {
    if (!l.entry) return absl::OkStatus();
    if (!l.entry->dir()) {
      return SetEntry(l.parent, l.name, std::nullopt, path, [&](const std::optional<Entry>& old) -> absl::StatusOr<Decision> {
               return old && *old == *l.entry ? Decision::kApply : Decision::kSkip;
             }).status();
    }
    BASALT_ASSIGN_OR_RETURN(std::vector<std::string> names, List(l.entry->id, path));
    BASALT_ASSIGN_OR_RETURN(DirState st, ReadEntries(l.entry->id, std::set<std::string>(names.begin(), names.end()), path));
    for (auto& [name, e] : st.entries) {
      BASALT_RETURN_IF_ERROR(RemoveTree(Lookup{l.entry->id, name, e}, absl::StrCat(AV(path), "/", name)));
    }
    if (l.name.empty()) return absl::OkStatus();  // the root stays
    return DeleteDirEntry(l, path);
  }

  absl::StatusOr<std::vector<std::string>> List(const std::string& id, std::string_view path) {
    std::vector<std::string> names;
    std::string after;
    while (true) {
      std::set<std::string> keys;
      bool more = false;
      const int r = io.omap_get_keys2(DirObject(id), after, 1000, &keys, &more);
      if (r == -ENOENT) break;  // being deleted
      if (r < 0) return RadosError("listing", path, r);
      if (keys.empty()) break;
      after = *keys.rbegin();
      names.insert(names.end(), keys.begin(), keys.end());  // omap keys come sorted bytewise
      if (!more) break;
    }
    return names;
  }
};

namespace {

class RadosWritableFile final : public WritableFile {
 public:
  RadosWritableFile(RadosEnv::Impl* env, std::string id, std::string path)
      : env_(env), id_(std::move(id)), path_(std::move(path)), chunk_bytes_(ChunkBytesOf(id_)) {}
  ~RadosWritableFile() override { WaitAll().IgnoreError(); }

  absl::Status Append(std::string_view data) override {
    BASALT_RETURN_IF_ERROR(error_);
    buf_.append(data);
    size_ += data.size();
    if (buf_.size() >= env_->opt.write_bytes) return Keep(Issue(/*all=*/false));
    return absl::OkStatus();
  }
  absl::Status Sync() override {
    BASALT_RETURN_IF_ERROR(error_);
    BASALT_RETURN_IF_ERROR(Keep(Issue(/*all=*/true)));
    return Keep(WaitAll());
  }
  absl::Status Close() override { return Sync(); }
  uint64_t Size() const override { return size_; }

 private:
  struct InFlight {
    librados::AioCompletion* c;
    uint64_t chunk;
  };

  absl::Status Keep(absl::Status s) {
    if (!s.ok() && error_.ok()) error_ = s;
    return s;
  }

  // Sends buffered bytes: whole writes of write_bytes, and with `all` the rest too. A write
  // never spans two objects, and a chunk is started only once the one before it is complete.
  absl::Status Issue(bool all) {
    const RadosEnvOptions& o = env_->opt;
    size_t pos = 0;
    while (pos < buf_.size()) {
      const uint64_t chunk = sent_ / chunk_bytes_;
      const uint64_t off = sent_ % chunk_bytes_;
      const size_t take = static_cast<size_t>(std::min<uint64_t>({buf_.size() - pos, chunk_bytes_ - off, o.write_bytes}));
      if (!all && take < o.write_bytes && take < chunk_bytes_ - off) break;
      if (!inflight_.empty() && inflight_.back().chunk != chunk) BASALT_RETURN_IF_ERROR(WaitAll());
      while (inflight_.size() >= static_cast<size_t>(o.max_writes_in_flight)) BASALT_RETURN_IF_ERROR(WaitOne());
      librados::ObjectWriteOperation op;
      op.write(off, Bytes(std::string_view(buf_).substr(pos, take)));
      librados::AioCompletion* c = librados::Rados::aio_create_completion();
      const int r = env_->io.aio_operate(ChunkObject(id_, chunk), c, &op);
      if (r < 0) {
        c->release();
        return RadosError("write", path_, r);
      }
      inflight_.push_back({c, chunk});
      pos += take;
      sent_ += take;
    }
    buf_.erase(0, pos);
    return absl::OkStatus();
  }

  absl::Status WaitOne() {
    InFlight f = inflight_.front();
    inflight_.erase(inflight_.begin());
    const Waited w = Wait(f.c);
    if (w.r < 0) return RadosError("write", path_, w.r);
    return absl::OkStatus();
  }
  absl::Status WaitAll() {
    absl::Status first;
    while (!inflight_.empty()) {
      absl::Status s = WaitOne();
      if (first.ok()) first = s;
    }
    return first;
  }

  RadosEnv::Impl* env_;
  const std::string id_;
  const std::string path_;
  const uint64_t chunk_bytes_;
  std::string buf_;      // appended, not yet sent
  uint64_t size_ = 0;    // appended
  uint64_t sent_ = 0;    // sent to RADOS
  std::vector<InFlight> inflight_;
  absl::Status error_;   // the first failure: every later call fails with it
};

class RadosRandomAccessFile final : public RandomAccessFile {
 public:
  RadosRandomAccessFile(RadosEnv::Impl* env, std::string id, std::string path, uint64_t size)
      : env_(env), id_(std::move(id)), path_(std::move(path)), size_(size), chunk_bytes_(ChunkBytesOf(id_)) {}

  absl::StatusOr<std::string_view> Read(uint64_t offset, size_t n, char* scratch) const override {
    if (offset > size_ || n > size_ - offset) {
      return absl::OutOfRangeError(absl::StrCat("rados: read ", path_, ": ", n, " bytes at ", offset,
                                                " past the end of a file of ", size_));
    }
    size_t done = 0;
    while (done < n) {
      const uint64_t at = offset + done;
      const uint64_t chunk = at / chunk_bytes_;
      const uint64_t off = at % chunk_bytes_;
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n - done, chunk_bytes_ - off));
      bufferlist bl;
      const int r = env_->io.read(ChunkObject(id_, chunk), bl, take, off);
      if (r < 0) return RadosError("read", path_, r);
      if (bl.length() != take) {
        return absl::OutOfRangeError(absl::StrCat("rados: read ", path_, ": ", bl.length(), " of ", take,
                                                  " bytes at ", at, " (the file shrank)"));
      }
      bl.begin().copy(take, scratch + done);
      done += take;
    }
    return std::string_view(scratch, n);
  }
  uint64_t Size() const override { return size_; }
  const std::string& name() const override { return path_; }

 private:
  RadosEnv::Impl* env_;
  const std::string id_;
  const std::string path_;
  const uint64_t size_;
  const uint64_t chunk_bytes_;
};

class RadosSequentialFile final : public SequentialFile {
 public:
  explicit RadosSequentialFile(std::unique_ptr<RadosRandomAccessFile> file) : file_(std::move(file)) {}
  absl::StatusOr<std::string_view> Read(size_t n, char* scratch) override {
    n = static_cast<size_t>(std::min<uint64_t>(n, file_->Size() - pos_));
    BASALT_ASSIGN_OR_RETURN(std::string_view got, file_->Read(pos_, n, scratch));
    pos_ += got.size();
    return got;
  }

 private:
  std::unique_ptr<RadosRandomAccessFile> file_;
  uint64_t pos_ = 0;
};

}  // namespace

RadosEnv::RadosEnv(RadosEnvOptions options, std::unique_ptr<Impl> impl)
    : options_(std::move(options)), impl_(std::move(impl)) {}
RadosEnv::~RadosEnv() = default;

absl::StatusOr<std::unique_ptr<RadosEnv>> RadosEnv::Connect(const RadosEnvOptions& options) {
  if (options.chunk_bytes == 0 || options.chunk_bytes > (128ull << 20) || options.write_bytes == 0 ||
      options.write_bytes > options.chunk_bytes || options.write_bytes > (64ull << 20) || options.max_writes_in_flight < 1) {
    return absl::InvalidArgumentError(absl::StrCat("rados: chunk_bytes ", options.chunk_bytes, " (1 B to 128 MiB) and write_bytes ",
                                                   options.write_bytes, " (1 B to 64 MiB, at most chunk_bytes) are out of range"));
  }
  auto impl = std::make_unique<Impl>(options);
  librados::Rados& rados = impl->rados;
  const std::string where = absl::StrCat("cluster of ", options.ceph_conf, " as ", options.client_name);
  int r = rados.init2(options.client_name.c_str(), "ceph", 0);
  if (r < 0) return RadosError("init", where, r);
  if (!options.ceph_conf.empty() && (r = rados.conf_read_file(options.ceph_conf.c_str())) < 0) {
    return RadosError("reading configuration", options.ceph_conf, r);
  }
  const std::string timeout = absl::StrCat(std::max<int64_t>(1, absl::ToInt64Seconds(options.op_timeout)));
  for (const char* key : {"rados_osd_op_timeout", "rados_mon_op_timeout", "client_mount_timeout"}) {
    if ((r = rados.conf_set(key, timeout.c_str())) < 0) return RadosError(absl::StrCat("setting ", key), where, r);
  }
  if ((r = rados.connect()) < 0) return RadosError("connecting to the", where, r);
  if ((r = rados.ioctx_create(options.pool.c_str(), impl->io)) < 0) return RadosError("opening pool", options.pool, r);
  impl->io.set_namespace(options.root);
  impl->instance = absl::StrCat(absl::Hex(rados.get_instance_id()));
  librados::ObjectWriteOperation mkroot;
  mkroot.create(/*exclusive=*/false);
  if ((r = impl->io.operate(DirObject(kRootId), &mkroot)) < 0) return RadosError("making the root directory in", options.root, r);
  BASALT_RETURN_IF_ERROR(impl->FinishIntents(/*others_only=*/true));
  return std::unique_ptr<RadosEnv>(new RadosEnv(options, std::move(impl)));
}

std::string RadosEnv::ClientAddress() const { return impl_->rados.get_addrs(); }

absl::Status RadosEnv::FinishIntents() { return impl_->FinishIntents(/*others_only=*/true); }

absl::Status RadosEnv::Fence(const std::string& client_address) {
  librados::Rados& rados = impl_->rados;
  // For a week (Ceph's default is an hour): a server paused longer than that and then resumed
  // must still find itself fenced. It exits as soon as it learns its session ended.
  int r = rados.blocklist_add(client_address, kBlocklistSeconds);
  if (r < 0) return RadosError("blocklisting", client_address, r);
  if ((r = rados.wait_for_latest_osdmap()) < 0) return RadosError("waiting for the OSD map after fencing", client_address, r);
  // The map barrier: an OSD that takes an operation sent with the new map first waits for that
  // map, and from then on refuses the fenced client. The fenced client's next write may go to
  // any placement group (a new log segment is a new object), so write once into every one.
  BASALT_ASSIGN_OR_RETURN(const std::vector<std::string> barriers, impl_->BarrierObjects());
  std::vector<librados::AioCompletion*> done;
  int first = 0;
  for (const std::string& oid : barriers) {
    librados::ObjectWriteOperation op;
    op.write_full(Bytes(client_address));
    librados::AioCompletion* c = librados::Rados::aio_create_completion();
    if (const int started = impl_->io.aio_operate(oid, c, &op); started < 0) {
      c->release();
      if (first == 0) first = started;
      continue;
    }
    done.push_back(c);
  }
  for (librados::AioCompletion* c : done) {
    if (Waited w = Wait(c); w.r < 0 && first == 0) first = w.r;
  }
  if (first < 0) return RadosError("writing the map barrier after fencing", client_address, first);
  return FinishIntents();
}

absl::StatusOr<std::unique_ptr<WritableFile>> RadosEnv::NewWritableFile(const std::string& path) {
  BASALT_ASSIGN_OR_RETURN(Impl::Lookup l, impl_->ResolveParent(path));
  const Entry e{'f', impl_->NewFileId()};
  BASALT_RETURN_IF_ERROR(impl_->SetEntry(l.parent, l.name, e, path, [&](const std::optional<Entry>& old) -> absl::StatusOr<Impl::Decision> {
                               if (old && old->dir()) return absl::FailedPreconditionError(absl::StrCat("rados: ", path, ": a directory"));
                               return Impl::Decision::kApply;
                             }).status());
  return std::make_unique<RadosWritableFile>(impl_.get(), e.id, path);
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> RadosEnv::NewRandomAccessFile(const std::string& path) {
  BASALT_ASSIGN_OR_RETURN(Entry e, impl_->ResolveFile(path));
  BASALT_ASSIGN_OR_RETURN(uint64_t size, impl_->FileSize(e.id, path));
  return std::make_unique<RadosRandomAccessFile>(impl_.get(), e.id, path, size);
}

absl::StatusOr<std::unique_ptr<SequentialFile>> RadosEnv::NewSequentialFile(const std::string& path) {
  BASALT_ASSIGN_OR_RETURN(Entry e, impl_->ResolveFile(path));
  BASALT_ASSIGN_OR_RETURN(uint64_t size, impl_->FileSize(e.id, path));
  return std::make_unique<RadosSequentialFile>(std::make_unique<RadosRandomAccessFile>(impl_.get(), e.id, path, size));
}

bool RadosEnv::FileExists(const std::string& path) {
  absl::StatusOr<Impl::Lookup> l = impl_->Resolve(path);
  return l.ok() && l->entry.has_value();
}

absl::StatusOr<uint64_t> RadosEnv::GetFileSize(const std::string& path) {
  BASALT_ASSIGN_OR_RETURN(Entry e, impl_->ResolveFile(path));
  return impl_->FileSize(e.id, path);
}

absl::Status RadosEnv::DeleteFile(const std::string& path) {
  BASALT_ASSIGN_OR_RETURN(Impl::Lookup l, impl_->ResolveParent(path));
  return impl_->SetEntry(l.parent, l.name, std::nullopt, path, [&](const std::optional<Entry>& old) -> absl::StatusOr<Impl::Decision> {
                 if (!old) return absl::NotFoundError(absl::StrCat("rados: delete ", path, ": no such file"));
                 if (old->dir()) return absl::FailedPreconditionError(absl::StrCat("rados: delete ", path, ": a directory"));
                 return Impl::Decision::kApply;
               }).status();
}

absl::Status RadosEnv::CreateDirs(const std::string& path) {
  std::string dir = kRootId;
  std::string sofar;
  for (const std::string& name : Components(path)) {
    absl::StrAppend(&sofar, "/", name);
    BASALT_ASSIGN_OR_RETURN(Impl::DirState st, impl_->ReadEntries(dir, {name}, sofar));
    if (auto it = st.entries.find(name); it != st.entries.end()) {
      if (!it->second.dir()) return absl::FailedPreconditionError(absl::StrCat("rados: mkdir ", sofar, ": a file"));
      dir = it->second.id;
      continue;
    }
    const Entry e{'d', impl_->NewId()};
    librados::ObjectWriteOperation mk;
    mk.create(/*exclusive=*/true);
    if (int r = impl_->io.operate(DirObject(e.id), &mk); r < 0) return RadosError("mkdir", sofar, r);
    BASALT_ASSIGN_OR_RETURN(std::optional<Entry> old,
                            impl_->SetEntry(dir, name, e, sofar, [&](const std::optional<Entry>& o) -> absl::StatusOr<Impl::Decision> {
                              if (o && !o->dir()) return absl::FailedPreconditionError(absl::StrCat("rados: mkdir ", sofar, ": a file"));
                              return o ? Impl::Decision::kSkip : Impl::Decision::kApply;
                            }));
    if (old) {  // another client made it first: use theirs
      impl_->RemoveDirObject(e.id, sofar).IgnoreError();
      dir = old->id;
    } else {
      dir = e.id;
    }
  }
  return absl::OkStatus();
}

absl::Status RadosEnv::DeleteDir(const std::string& path) {
  BASALT_ASSIGN_OR_RETURN(Impl::Lookup l, impl_->ResolveParent(path));
  if (!l.entry) return absl::NotFoundError(absl::StrCat("rados: rmdir ", path, ": no such directory"));
  if (!l.entry->dir()) return absl::FailedPreconditionError(absl::StrCat("rados: rmdir ", path, ": a file"));
  return impl_->DeleteDirEntry(l, path);
}

absl::StatusOr<std::vector<std::string>> RadosEnv::ListDir(const std::string& path) {
  BASALT_ASSIGN_OR_RETURN(Impl::Lookup l, impl_->Resolve(path));
  if (!l.entry) return absl::NotFoundError(absl::StrCat("rados: list ", path, ": no such directory"));
  if (!l.entry->dir()) return absl::FailedPreconditionError(absl::StrCat("rados: list ", path, ": a file"));
  return impl_->List(l.entry->id, path);
}

absl::Status RadosEnv::ReplaceFile(const std::string& from, const std::string& to) {
  BASALT_ASSIGN_OR_RETURN(Impl::Lookup f, impl_->ResolveParent(from));
  if (!f.entry) return absl::NotFoundError(absl::StrCat("rados: rename ", from, ": no such file or directory"));
  BASALT_ASSIGN_OR_RETURN(Impl::Lookup t, impl_->ResolveParent(to));
  const std::string what = absl::StrCat(from, " to ", to);
  if (f.parent == t.parent && f.name == t.name) return absl::OkStatus();
  if (t.entry && t.entry->dir() && !f.entry->dir()) {
    return absl::FailedPreconditionError(absl::StrCat("rados: rename ", what, ": the target is a directory"));
  }
  if (t.entry && !t.entry->dir() && f.entry->dir()) {
    return absl::FailedPreconditionError(absl::StrCat("rados: rename ", what, ": the target is a file"));
  }
  if (f.entry->dir()) {
    // A directory must not move into itself.
    const std::vector<std::string> fc = Components(from), tc = Components(to);
    if (tc.size() > fc.size() && std::equal(fc.begin(), fc.end(), tc.begin())) {
      return absl::InvalidArgumentError(absl::StrCat("rados: rename ", what, ": into itself"));
    }
  }
  if (f.parent == t.parent) return impl_->MoveWithin(f.parent, f.name, t.name, *f.entry, what);
  return impl_->MoveAcross(f, t, what);
}

absl::Status RadosEnv::Truncate(const std::string& path, uint64_t size) {
  BASALT_ASSIGN_OR_RETURN(Entry e, impl_->ResolveFile(path));
  BASALT_ASSIGN_OR_RETURN(uint64_t now, impl_->FileSize(e.id, path));
  if (size > now) {
    return absl::InvalidArgumentError(absl::StrCat("rados: truncate ", path, " to ", size, ": the file holds only ", now));
  }
  if (size == now) return absl::OkStatus();
  const uint64_t chunk = size / ChunkBytesOf(e.id);
  const uint64_t off = size % ChunkBytesOf(e.id);
  BASALT_RETURN_IF_ERROR(impl_->RemoveChunks(e.id, path, chunk + 1));
  librados::ObjectWriteOperation op;
  if (off == 0) {
    op.remove();
  } else {
    op.truncate(off);
  }
  const int r = impl_->io.operate(ChunkObject(e.id, chunk), &op);
  if (r < 0 && r != -ENOENT) return RadosError("truncate", path, r);
  return absl::OkStatus();
}

absl::Status RadosEnv::SyncDir(const std::string&) { return absl::OkStatus(); }

absl::StatusOr<std::vector<std::string>> RadosEnv::ListObjects() {
  std::vector<std::string> names;
  try {
    for (auto it = impl_->io.nobjects_begin(); it != impl_->io.nobjects_end(); ++it) names.push_back(it->get_oid());
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("rados: listing the objects of ", options_.root, ": ", e.what()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::Status RadosEnv::RemoveTree(const std::string& path) {
  BASALT_ASSIGN_OR_RETURN(Impl::Lookup l, impl_->Resolve(path));
  return impl_->RemoveTree(l, path);
}

}  // namespace basalt
