// Helpers shared by the libFuzzer targets: a scratch directory for targets that need real files,
// whole-file writes, and FUZZ_CHECK, which aborts (so libFuzzer reports a crash and saves the
// input) when an invariant the engine promises does not hold. Single-threaded, like libFuzzer.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "common/coding.h"
#include "common/crc.h"

namespace basalt::fuzz {

#define FUZZ_CHECK(cond, ...)                                                            \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, "  " __VA_ARGS__);                                            \
      std::fprintf(stderr, "\n");                                                        \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

// A fresh directory for this process, removed at exit (not after a crash; it is small). Lives
// on tmpfs (/dev/shm) when there is one, so file round trips stay cheap; BASALT_FUZZ_TMPDIR or
// TMPDIR override.
class ScratchDir {
 public:
  static const std::string& Get() {
    static ScratchDir* dir = new ScratchDir();
    return dir->path_;
  }

 private:
  ScratchDir() {
    std::string base;
    if (const char* e = std::getenv("BASALT_FUZZ_TMPDIR")) {
      base = e;
    } else if (::access("/dev/shm", W_OK) == 0) {
      base = "/dev/shm";
    } else if (const char* t = std::getenv("TMPDIR")) {
      base = t;
    } else {
      base = "/tmp";
    }
    std::string tmpl = base + "/basalt-fuzz-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    path_ = tmpl;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(Get(), ec);
    });
  }
  std::string path_;
};

// Replaces the file at path with exactly `data`; aborts on I/O failure (not an engine bug, but
// the run would be meaningless).
inline void WriteWholeFile(const std::string& path, std::string_view data) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  FUZZ_CHECK(f != nullptr, "cannot create %s", path.c_str());
  FUZZ_CHECK(data.empty() || std::fwrite(data.data(), 1, data.size(), f) == data.size(), "short write %s",
             path.c_str());
  FUZZ_CHECK(std::fclose(f) == 0, "close %s", path.c_str());
}

inline const char* CodeName(const absl::Status& s) {
  static thread_local std::string name;
  name = absl::StatusCodeToString(s.code());
  return name.c_str();
}

// For a format that ends in a masked CRC32C of every byte before it: `check` the input as it is
// (so the magic and CRC checks are fuzzed), and, when it has at least `min_size` bytes, again with
// its last four bytes replaced by the right CRC (so mutations reach the body).
template <typename Check>
void CheckAsIsAndWithTheCrcFixed(const uint8_t* data, size_t size, size_t min_size, Check check) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  check(std::string_view(bytes));
  if (bytes.size() >= min_size) {
    EncodeFixed32(bytes.data() + bytes.size() - 4, MaskCrc(Crc32c(bytes.data(), bytes.size() - 4)));
    check(std::string_view(bytes));
  }
}

}  // namespace basalt::fuzz
