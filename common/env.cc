#include "common/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace basalt {
namespace {

absl::Status PosixError(std::string_view what, const std::string& path, int err) {
  std::string msg = absl::StrCat(AV(what), " ", path, ": ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(msg);
  if (err == ENOTEMPTY || err == EEXIST || err == EISDIR || err == ENOTDIR) return absl::FailedPreconditionError(msg);
  return absl::InternalError(msg);
}

std::string DirOf(const std::string& path) {
  auto pos = path.rfind('/');
  return pos == std::string::npos ? "." : (pos == 0 ? "/" : path.substr(0, pos));
}

absl::Status SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return PosixError("open dir", dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  return rc == 0 ? absl::OkStatus() : PosixError("fsync dir", dir, err);
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd, uint64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixWritableFile() override { if (fd_ >= 0) ::close(fd_); }

  absl::Status Append(std::string_view data) override {
    const char* p = data.data();
    size_t left = data.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        return PosixError("write", path_, errno);
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    size_ += data.size();
    return absl::OkStatus();
  }
  absl::Status Sync() override {
    if (::fdatasync(fd_) != 0) return PosixError("fdatasync", path_, errno);
    return absl::OkStatus();
  }
  absl::Status Close() override {
    if (fd_ < 0) return absl::OkStatus();
    int rc = ::close(fd_);
    fd_ = -1;
    return rc == 0 ? absl::OkStatus() : PosixError("close", path_, errno);
  }
  uint64_t Size() const override { return size_; }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd, uint64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  absl::StatusOr<std::string_view> Read(uint64_t offset, size_t n, char* scratch) const override {
    if (offset > size_ || n > size_ - offset) {
      return absl::OutOfRangeError(absl::StrCat("read past end of ", path_, ": offset ", offset,
                                                " length ", n, " file size ", size_));
    }
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, scratch + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return PosixError("pread", path_, errno);
      }
      if (r == 0) {
        return absl::OutOfRangeError(absl::StrCat("short read of ", path_, " at offset ", offset + done));
      }
      done += static_cast<size_t>(r);
    }
    return std::string_view(scratch, n);
  }
  uint64_t Size() const override { return size_; }
  const std::string& name() const override { return path_; }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
};

class PosixSequentialFile final : public SequentialFile {
 public:
  PosixSequentialFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixSequentialFile() override { ::close(fd_); }
  absl::StatusOr<std::string_view> Read(size_t n, char* scratch) override {
    for (;;) {
      ssize_t r = ::read(fd_, scratch, n);
      if (r < 0) {
        if (errno == EINTR) continue;
        return PosixError("read", path_, errno);
      }
      return std::string_view(scratch, static_cast<size_t>(r));
    }
  }

 private:
  std::string path_;
  int fd_;
};

class PosixEnv final : public Env {
 public:
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) {
      // A file of that name is replaced by a new one. The name of a linked file is unlinked first,
      // so that its other names keep their bytes (as on RADOS, where a new file has a new id).
      struct stat st;
      if (::stat(path.c_str(), &st) == 0 && st.st_nlink > 1 && ::unlink(path.c_str()) != 0) {
        return PosixError("unlink", path, errno);
      }
      fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    if (fd < 0) return PosixError("create", path, errno);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd, 0));
  }
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError("open", path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return PosixError("stat", path, err);
    }
    return std::unique_ptr<RandomAccessFile>(new PosixRandomAccessFile(path, fd, static_cast<uint64_t>(st.st_size)));
  }
  absl::StatusOr<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError("open", path, errno);
    return std::unique_ptr<SequentialFile>(new PosixSequentialFile(path, fd));
  }
  bool FileExists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError("stat", path, errno);
    return static_cast<uint64_t>(st.st_size);
  }
  absl::Status DeleteFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return PosixError("unlink", path, errno);
    return absl::OkStatus();
  }
  absl::Status CreateDirs(const std::string& path) override {
    // Note which components are new, create them, then make each new entry durable by syncing
    // its parent (a log's directory must survive a crash like the log itself).
    std::vector<std::filesystem::path> created;
    for (std::filesystem::path p = std::filesystem::path(path).lexically_normal();
         !p.empty() && p != p.root_path() && !std::filesystem::exists(p); p = p.parent_path()) {
      created.push_back(p);
    }
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return absl::InternalError(absl::StrCat("mkdir ", path, ": ", ec.message()));
    for (const auto& p : created) {
      const std::filesystem::path parent = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
      BASALT_RETURN_IF_ERROR(SyncDirectory(parent.native()));
    }
    return absl::OkStatus();
  }
  absl::Status DeleteDir(const std::string& path) override {
    if (::rmdir(path.c_str()) != 0) return PosixError("rmdir", path, errno);
    return SyncDirectory(DirOf(path));
  }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override {
    DIR* d = ::opendir(path.c_str());
    if (d == nullptr) return PosixError("opendir", path, errno);
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d)) {
      std::string_view n(e->d_name);
      if (n != "." && n != "..") names.emplace_back(n);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }
  absl::Status ReplaceFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return PosixError("rename to " + to, from, errno);
    return SyncDirectory(DirOf(to));
  }
  absl::Status SyncDir(const std::string& dir) override { return SyncDirectory(dir); }
  absl::Status LinkFile(const std::string& from, const std::string& to) override {
    if (::link(from.c_str(), to.c_str()) != 0) {
      const int err = errno;
      if (err == EEXIST) return absl::AlreadyExistsError(absl::StrCat("link ", from, " as ", to, ": the new name is taken"));
      if (err == EPERM || err == EISDIR) {
        return absl::FailedPreconditionError(absl::StrCat("link ", from, " as ", to, ": not a file"));
      }
      return PosixError("link to " + to, from, err);
    }
    return SyncDirectory(DirOf(to));
  }
  absl::StatusOr<uint64_t> LinkCount(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError("stat", path, errno);
    return static_cast<uint64_t>(st.st_nlink);
  }
  absl::Status RemoveTree(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return absl::InternalError(absl::StrCat("removing ", path, ": ", ec.message()));
    return SyncDirectory(DirOf(path));
  }
  absl::Status Truncate(const std::string& path, uint64_t size) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return PosixError("open", path, errno);
    int rc = ::ftruncate(fd, static_cast<off_t>(size));
    if (rc == 0) rc = ::fdatasync(fd);  // the cut must survive the next crash
    int err = errno;
    ::close(fd);
    return rc == 0 ? absl::OkStatus() : PosixError("truncate", path, err);
  }
};

}  // namespace

Env* Env::Default() {
  static PosixEnv* env = new PosixEnv;
  return env;
}

absl::Status Env::WriteFileDurably(const std::string& path, std::string_view contents) {
  const std::string tmp = path + ".tmp";
  absl::Status s = [&]() -> absl::Status {
    BASALT_ASSIGN_OR_RETURN(auto f, NewWritableFile(tmp));
    BASALT_RETURN_IF_ERROR(f->Append(contents));
    BASALT_RETURN_IF_ERROR(f->Sync());
    BASALT_RETURN_IF_ERROR(f->Close());
    return ReplaceFile(tmp, path);
  }();
  // A failed write leaves no half-written .tmp behind (on a full disk it would keep eating the
  // space a retry needs); the file at `path`, if any, is untouched.
  if (!s.ok() && FileExists(tmp)) DeleteFile(tmp).IgnoreError();
  return s;
}

absl::StatusOr<std::string> Env::ReadFileToString(const std::string& path) {
  BASALT_ASSIGN_OR_RETURN(auto f, NewRandomAccessFile(path));
  std::string out(f->Size(), '\0');
  BASALT_ASSIGN_OR_RETURN(auto got, f->Read(0, out.size(), out.data()));
  (void)got;
  return out;
}

}  // namespace basalt
