// RadosEnv's state and its operations on directories, names and intents (rados_env.h describes
// the layout), shared by rados_env.cc (the Env's methods and its files). Private to common/.
#pragma once

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
#include "common/rados_env.h"

namespace basalt {
namespace rados_internal {

using librados::bufferlist;

constexpr char kRootId[] = "root";
constexpr char kIntentsObject[] = "intents";
constexpr int kMaxRaces = 1000;  // a directory changed under us this many times in a row: give up
constexpr uint32_t kBlocklistSeconds = 7 * 24 * 3600;  // how long a fenced client stays fenced

inline std::atomic<void (*)(std::string_view)> fenced_handler{nullptr};

inline absl::Status RadosError(std::string_view what, std::string_view path, int r) {
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
inline uint64_t ChunkBytesOf(std::string_view id) {
  const size_t plus = id.rfind('+');
  uint64_t n = 0;
  if (plus == std::string_view::npos || !absl::SimpleHexAtoi(AV(id.substr(plus + 1)), &n) || n == 0) {
    return kChunkBytesOfOldIds;
  }
  return n;
}

inline std::string DirObject(std::string_view id) { return absl::StrCat("d:", AV(id)); }
inline std::string ChunkObject(std::string_view id, uint64_t chunk) { return absl::StrFormat("f:%s:%08x", AV(id), chunk); }
// The names of a file that has more than one (see the header): keys "<directory id>/<name>",
// value "p" while a link that adds the name is under way, else empty.
inline std::string LinksObject(std::string_view id) { return absl::StrCat("l:", AV(id)); }
inline std::string LinkKey(std::string_view dir, std::string_view name) { return absl::StrCat(AV(dir), "/", AV(name)); }
constexpr char kPendingLink[] = "p";

inline bufferlist Bytes(std::string_view s) {
  bufferlist bl;
  bl.append(s.data(), static_cast<unsigned>(s.size()));
  return bl;
}

// A path's components, made lexically absolute ("a/./b/../c" is "a/c"; every path is relative
// to the root directory, with or without a leading '/').
inline std::vector<std::string> Components(std::string_view path) {
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
inline Waited Wait(librados::AioCompletion* c) {
  c->wait_for_complete();
  Waited w{c->get_return_value(), c->get_version64()};
  c->release();
  return w;
}

// Runs a read operation and waits for it (a completion gives the object's version too).
inline Waited ReadAndWait(librados::IoCtx& io, const std::string& oid, librados::ObjectReadOperation* op) {
  librados::AioCompletion* c = librados::Rados::aio_create_completion();
  if (const int r = io.aio_operate(oid, c, op, nullptr); r < 0) {  // not started: never completes
    c->release();
    return Waited{r, 0};
  }
  return Wait(c);
}

}  // namespace rados_internal

using namespace rados_internal;  // NOLINT: this header's own helpers, for RadosEnv::Impl and rados_env.cc

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
        BASALT_RETURN_IF_ERROR(DropName(old->id, dir, name, path));
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
        BASALT_RETURN_IF_ERROR(DropName(old->id, dir, to, path));
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

  // The names a file has, when it has a links object (nullopt: it has one name, its entry's).
  struct Names {
    std::vector<std::string> counted;  // keys whose entry names the file, and pending links
    std::vector<std::string> stale;    // keys whose entry is gone or names another file
    size_t entries = 0;                // of `counted`, the names whose entry is there
  };
  absl::StatusOr<std::optional<Names>> NamesOf(const std::string& id, std::string_view path) {
    std::map<std::string, bufferlist> keys;
    std::string after;
    for (;;) {
      std::map<std::string, bufferlist> page;
      bool more = false;
      const int r = io.omap_get_vals2(LinksObject(id), after, 1000, &page, &more);
      if (r == -ENOENT) return std::optional<Names>();
      if (r < 0) return RadosError("reading the names of", path, r);
      if (page.empty()) break;
      after = page.rbegin()->first;
      keys.merge(page);
      if (!more) break;
    }
    Names n;  // (a links object left with no key: no name counts)
    for (auto& [key, value] : keys) {
      const size_t slash = key.find('/');
      if (slash == std::string::npos) return absl::DataLossError(absl::StrCat("rados: a name of ", AV(path), " is not one: ", key));
      absl::StatusOr<DirState> st = ReadEntries(key.substr(0, slash), {key.substr(slash + 1)}, path);
      if (!st.ok() && !absl::IsNotFound(st.status())) return st.status();
      const bool named = st.ok() && !st->entries.empty() && st->entries.begin()->second == Entry{'f', id};
      if (named) ++n.entries;
      (named || value.to_str() == kPendingLink ? n.counted : n.stale).push_back(key);
    }
    return std::optional<Names>(std::move(n));
  }

  absl::Status SetLinkKey(const std::string& id, const std::string& dir, const std::string& name,
                          std::string_view value, std::string_view path) {
    librados::ObjectWriteOperation op;
    op.omap_set({{LinkKey(dir, name), Bytes(value)}});
    const int r = io.operate(LinksObject(id), &op);
    if (r < 0) return RadosError("naming", path, r);
    return absl::OkStatus();
  }

  absl::Status RemoveLinkKeys(const std::string& id, const std::set<std::string>& keys, std::string_view path) {
    librados::ObjectWriteOperation op;
    op.omap_rm_keys(keys);
    const int r = io.operate(LinksObject(id), &op);
    if (r < 0 && r != -ENOENT) return RadosError("unnaming", path, r);
    return absl::OkStatus();
  }

  // Removes the file's objects (and its links object) when no name of it counts any more. A file
  // without a links object has one name, which its caller is deleting: nothing to check.
  absl::Status DropIfUnnamed(const std::string& id, std::string_view path) {
    BASALT_ASSIGN_OR_RETURN(std::optional<Names> names, NamesOf(id, path));
    if (!names) return absl::OkStatus();
    if (!names->counted.empty()) {
      if (!names->stale.empty()) {
        return RemoveLinkKeys(id, std::set<std::string>(names->stale.begin(), names->stale.end()), path);
      }
      return absl::OkStatus();
    }
    BASALT_RETURN_IF_ERROR(RemoveChunks(id, path));
    const int r = io.remove(LinksObject(id));
    if (r < 0 && r != -ENOENT) return RadosError("removing the names of", path, r);
    return absl::OkStatus();
  }

  // Entry `name` of `dir`, which named file `id`, is gone: the file's objects go unless another
  // name of it counts (a hard link: LinkFile).
  absl::Status DropName(const std::string& id, const std::string& dir, const std::string& name, std::string_view path) {
    BASALT_ASSIGN_OR_RETURN(std::optional<Names> names, NamesOf(id, path));
    if (!names) return RemoveChunks(id, path);
    BASALT_RETURN_IF_ERROR(RemoveLinkKeys(id, {LinkKey(dir, name)}, path));
    return DropIfUnnamed(id, path);
  }

  // Gives file `from` (its entry `e`) the entry `to` as well: the new name is recorded as pending
  // first (under an intent), then the source is checked to still name the file (a delete that
  // read the names before the pending one was there removed it first), then the entry is made.
  absl::Status Link(const Lookup& from, const Lookup& to, std::string_view path) {
    const Entry& e = *from.entry;
    BASALT_ASSIGN_OR_RETURN(std::string intent, AddIntent({"L", to.parent, to.name, e.id}));
    auto undo = [&](absl::Status why) -> absl::Status {
      RemoveLinkKeys(e.id, {LinkKey(to.parent, to.name)}, path).IgnoreError();
      BASALT_RETURN_IF_ERROR(DropIfUnnamed(e.id, path));
      BASALT_RETURN_IF_ERROR(RemoveIntent(intent));
      return why;
    };
    {
      librados::ObjectWriteOperation op;
      op.omap_set({{LinkKey(from.parent, from.name), Bytes("")}, {LinkKey(to.parent, to.name), Bytes(kPendingLink)}});
      const int r = io.operate(LinksObject(e.id), &op);
      if (r < 0) return undo(RadosError("linking", path, r));
    }
    absl::StatusOr<DirState> src = ReadEntries(from.parent, {from.name}, path);
    if (!src.ok()) return undo(src.status());
    if (src->entries.empty() || !(src->entries.begin()->second == e)) {
      return undo(absl::NotFoundError(absl::StrCat("rados: link ", AV(path), ": the file was removed meanwhile")));
    }
    FaultPoint("rados_env.link.between");
    absl::Status made = SetEntry(to.parent, to.name, e, path, [&](const std::optional<Entry>& old) -> absl::StatusOr<Decision> {
                          if (old) return absl::AlreadyExistsError(absl::StrCat("rados: link ", AV(path), ": the new name is taken"));
                          return Decision::kApply;
                        }).status();
    if (!made.ok()) return undo(made);
    BASALT_RETURN_IF_ERROR(SetLinkKey(e.id, to.parent, to.name, "", path));
    return RemoveIntent(intent);
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
        if (!named) BASALT_RETURN_IF_ERROR(DropName(f[3], f[1], f[2], what));
      } else if (f[0] == "L" && f.size() == 4) {
        // A link of file f[3] as entry f[2] of directory f[1], cut short: the name counts only
        // if the entry was made; the file goes if no name of it is left.
        BASALT_RETURN_IF_ERROR(SetLinkKey(f[3], f[1], f[2], "", what));
        BASALT_RETURN_IF_ERROR(DropIfUnnamed(f[3], what));
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

}  // namespace basalt
