// The one small file-system interface all storage I/O goes through (LevelDB's Env idea), so the
// engine runs on a local disk today and on a shared store (RADOS) later. The contract it asks
// of an implementation is what a shared object store can give: files written once,
// sequentially, then read at random; append-only logs; whole-file atomic replace (Rename) used
// only for small manifests. Implementations are thread-safe; a file object is used by one
// writer at a time but may be read from many threads (RandomAccessFile::Read is const).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace basalt {

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual absl::Status Append(std::string_view data) = 0;
  // Durably persists everything appended so far (fdatasync on POSIX).
  virtual absl::Status Sync() = 0;
  virtual absl::Status Close() = 0;
  virtual uint64_t Size() const = 0;
};

class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads n bytes at offset into scratch (which must hold n bytes). Short reads are an error
  // (OutOfRange) naming the file, offset and sizes.
  virtual absl::StatusOr<std::string_view> Read(uint64_t offset, size_t n, char* scratch) const = 0;
  virtual uint64_t Size() const = 0;
  virtual const std::string& name() const = 0;
};

class SequentialFile {
 public:
  virtual ~SequentialFile() = default;
  // Reads up to n bytes; an empty result means end of file.
  virtual absl::StatusOr<std::string_view> Read(size_t n, char* scratch) = 0;
};

class Env {
 public:
  virtual ~Env() = default;
  // The process-wide POSIX environment.
  static Env* Default();

  // A new, empty file at `path`, replacing a file of that name (whose other names, if it was
  // linked, keep their bytes).
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  virtual absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) = 0;
  virtual absl::StatusOr<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) = 0;
  virtual bool FileExists(const std::string& path) = 0;
  virtual absl::StatusOr<uint64_t> GetFileSize(const std::string& path) = 0;
  virtual absl::Status DeleteFile(const std::string& path) = 0;
  virtual absl::Status CreateDirs(const std::string& path) = 0;
  // Removes an empty directory, durably.
  virtual absl::Status DeleteDir(const std::string& path) = 0;
  // Names (not paths) in a directory, sorted bytewise; callers must not depend on anything else.
  virtual absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) = 0;
  // Atomically replaces `to` with `from` and makes that durable (manifests only).
  virtual absl::Status ReplaceFile(const std::string& from, const std::string& to) = 0;
  // Cuts a file to size, durably.
  virtual absl::Status Truncate(const std::string& path, uint64_t size) = 0;
  // Makes the creation and removal of files in dir durable (fsync of the directory on POSIX).
  virtual absl::Status SyncDir(const std::string& dir) = 0;
  // Removes a file or a directory with everything in it, durably; nothing there is not an error.
  virtual absl::Status RemoveTree(const std::string& path) = 0;
  // Gives file `from` a second name `to` (a hard link), durably: both name the same bytes, which
  // stay until the last of its names is deleted (docs/DESIGN.md §16: how snapshots pin block
  // files). For files nothing writes any more. `to`'s directory must exist. NotFound when `from`
  // is not a file; AlreadyExists when `to` is taken.
  virtual absl::Status LinkFile(const std::string& from, const std::string& to) = 0;
  // How many names the file at `path` has (1 for a file never linked). NotFound.
  virtual absl::StatusOr<uint64_t> LinkCount(const std::string& path) = 0;

  // Helpers built on the above.
  absl::Status WriteFileDurably(const std::string& path, std::string_view contents);
  absl::StatusOr<std::string> ReadFileToString(const std::string& path);
};

// Forwards every call to another Env (LevelDB's EnvWrapper): fault-injecting and test Envs
// override only what they change.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& p) override {
    return target_->NewWritableFile(p);
  }
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& p) override {
    return target_->NewRandomAccessFile(p);
  }
  absl::StatusOr<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& p) override {
    return target_->NewSequentialFile(p);
  }
  bool FileExists(const std::string& p) override { return target_->FileExists(p); }
  absl::StatusOr<uint64_t> GetFileSize(const std::string& p) override { return target_->GetFileSize(p); }
  absl::Status DeleteFile(const std::string& p) override { return target_->DeleteFile(p); }
  absl::Status CreateDirs(const std::string& p) override { return target_->CreateDirs(p); }
  absl::Status DeleteDir(const std::string& p) override { return target_->DeleteDir(p); }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& p) override { return target_->ListDir(p); }
  absl::Status ReplaceFile(const std::string& from, const std::string& to) override {
    return target_->ReplaceFile(from, to);
  }
  absl::Status Truncate(const std::string& p, uint64_t size) override { return target_->Truncate(p, size); }
  absl::Status SyncDir(const std::string& dir) override { return target_->SyncDir(dir); }
  absl::Status RemoveTree(const std::string& p) override { return target_->RemoveTree(p); }
  absl::Status LinkFile(const std::string& from, const std::string& to) override {
    return target_->LinkFile(from, to);
  }
  absl::StatusOr<uint64_t> LinkCount(const std::string& p) override { return target_->LinkCount(p); }

 private:
  Env* target_;
};

// Forwards every call to another WritableFile.
class WritableFileWrapper : public WritableFile {
 public:
  explicit WritableFileWrapper(std::unique_ptr<WritableFile> target) : target_(std::move(target)) {}
  absl::Status Append(std::string_view data) override { return target_->Append(data); }
  absl::Status Sync() override { return target_->Sync(); }
  absl::Status Close() override { return target_->Close(); }
  uint64_t Size() const override { return target_->Size(); }

 private:
  std::unique_ptr<WritableFile> target_;
};

}  // namespace basalt
