#include "common/rados_env.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/rados_env_impl.h"

namespace basalt {

void SetFencedHandler(void (*handler)(std::string_view what)) {
  fenced_handler.store(handler, std::memory_order_release);
}


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
  // A file of several names keeps its names in step: the new one is recorded before the move (a
  // name counts while its entry names the file), the old one dropped after.
  std::optional<Impl::Names> names;
  if (!f.entry->dir()) {
    BASALT_ASSIGN_OR_RETURN(names, impl_->NamesOf(f.entry->id, what));
    if (names) BASALT_RETURN_IF_ERROR(impl_->SetLinkKey(f.entry->id, t.parent, t.name, "", what));
  }
  if (f.parent == t.parent) {
    BASALT_RETURN_IF_ERROR(impl_->MoveWithin(f.parent, f.name, t.name, *f.entry, what));
  } else {
    BASALT_RETURN_IF_ERROR(impl_->MoveAcross(f, t, what));
  }
  if (names) BASALT_RETURN_IF_ERROR(impl_->RemoveLinkKeys(f.entry->id, {LinkKey(f.parent, f.name)}, what));
  return absl::OkStatus();
}

absl::Status RadosEnv::LinkFile(const std::string& from, const std::string& to) {
  BASALT_ASSIGN_OR_RETURN(Impl::Lookup f, impl_->ResolveParent(from));
  const std::string what = absl::StrCat(from, " as ", to);
  if (!f.entry) return absl::NotFoundError(absl::StrCat("rados: link ", what, ": no such file"));
  if (f.entry->dir()) return absl::FailedPreconditionError(absl::StrCat("rados: link ", what, ": a directory"));
  BASALT_ASSIGN_OR_RETURN(Impl::Lookup t, impl_->ResolveParent(to));
  if (t.entry) return absl::AlreadyExistsError(absl::StrCat("rados: link ", what, ": the new name is taken"));
  return impl_->Link(f, t, what);
}

absl::StatusOr<uint64_t> RadosEnv::LinkCount(const std::string& path) {
  BASALT_ASSIGN_OR_RETURN(Entry e, impl_->ResolveFile(path));
  BASALT_ASSIGN_OR_RETURN(std::optional<Impl::Names> names, impl_->NamesOf(e.id, path));
  if (!names) return 1;
  return std::max<uint64_t>(1, names->entries);
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
