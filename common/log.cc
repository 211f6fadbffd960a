#include "common/log.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"

namespace basalt::log {
namespace {

struct State {
  absl::Mutex mu;
  Options options ABSL_GUARDED_BY(mu);
  std::FILE* file ABSL_GUARDED_BY(mu) = nullptr;  // null: stderr
  uint64_t file_bytes ABSL_GUARDED_BY(mu) = 0;
  std::deque<Line> recent ABSL_GUARDED_BY(mu);

  // Renames PROGRAM.log to .1, .1 to .2, ..., dropping the oldest, and opens a new one.
  void RollLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
};

State& GetState() {
  static State* state = new State();  // never destroyed: threads may log during exit
  return *state;
}

std::string FilePath(const Options& o, int generation) {
  std::string path = absl::StrCat(o.dir, "/", o.program, ".log");
  if (generation > 0) absl::StrAppend(&path, ".", generation);
  return path;
}

void State::RollLocked() {
  if (file != nullptr) std::fclose(file);
  file = nullptr;
  std::remove(FilePath(options, options.max_files).c_str());
  for (int g = options.max_files - 1; g >= 0; --g) {
    std::rename(FilePath(options, g).c_str(), FilePath(options, g + 1).c_str());
  }
  file = std::fopen(FilePath(options, 0).c_str(), "a");
  file_bytes = 0;
}

}  // namespace

absl::Status ParseLevel(std::string_view text, Level* level) {
  const std::string t = absl::AsciiStrToLower(AV(text));
  if (t == "debug") *level = Level::kDebug;
  else if (t == "info") *level = Level::kInfo;
  else if (t == "warning" || t == "warn") *level = Level::kWarning;
  else if (t == "error") *level = Level::kError;
  else return absl::InvalidArgumentError(absl::StrCat("log level '", AV(text), "': expected debug, info, warning or error"));
  return absl::OkStatus();
}

std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kDebug: return "DEBUG";
    case Level::kInfo: return "INFO";
    case Level::kWarning: return "WARNING";
    case Level::kError: return "ERROR";
  }
  return "?";
}

absl::Status Configure(const Options& options) {
  State& s = GetState();
  absl::MutexLock l(&s.mu);
  if (s.file != nullptr) std::fclose(s.file);
  s.file = nullptr;
  s.options = options;
  if (s.options.max_files < 1) s.options.max_files = 1;
  while (s.recent.size() > s.options.keep_lines) s.recent.pop_front();
  if (options.dir.empty()) return absl::OkStatus();
  if (::mkdir(options.dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::UnavailableError(absl::StrCat("log_dir ", options.dir, ": ", std::strerror(errno)));
  }
  const std::string path = FilePath(options, 0);
  s.file = std::fopen(path.c_str(), "a");
  if (s.file == nullptr) return absl::UnavailableError(absl::StrCat("log file ", path, ": ", std::strerror(errno)));
  struct stat st{};
  s.file_bytes = ::fstat(fileno(s.file), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  return absl::OkStatus();
}

namespace {

void Emit(Level level, std::string_view text, bool to_stderr) {
  State& s = GetState();
  const absl::Time now = absl::Now();
  absl::MutexLock l(&s.mu);
  if (level < s.options.level) return;
  // stderr: "PROGRAM: text", as the programs always wrote (the journal, or the terminal, stamps
  // the time); with a log file, errors go there too, so that a start-up that fails says why where
  // it was started.
  if (to_stderr && (s.file == nullptr || level == Level::kError)) {
    const std::string out = absl::StrCat(s.options.program, ": ", AV(text), "\n");
    std::fwrite(out.data(), 1, out.size(), stderr);
  }
  if (s.file != nullptr) {
    const std::string out = absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", now, absl::UTCTimeZone()), " ",
                                         AV(LevelName(level)), " ", s.options.program, ": ", AV(text), "\n");
    if (s.file_bytes + out.size() > s.options.max_file_bytes && s.file_bytes > 0) s.RollLocked();
    if (s.file != nullptr) {
      std::fwrite(out.data(), 1, out.size(), s.file);
      std::fflush(s.file);
      s.file_bytes += out.size();
    }
  }
  s.recent.push_back(Line{now, level, std::string(text)});
  while (s.recent.size() > s.options.keep_lines) s.recent.pop_front();
}

}  // namespace

void Write(Level level, std::string_view text) { Emit(level, text, /*to_stderr=*/true); }
void Record(Level level, std::string_view text) { Emit(level, text, /*to_stderr=*/false); }

std::vector<Line> Recent(size_t max) {
  State& s = GetState();
  absl::MutexLock l(&s.mu);
  const size_t n = std::min(max, s.recent.size());
  return std::vector<Line>(s.recent.end() - static_cast<std::ptrdiff_t>(n), s.recent.end());
}

}  // namespace basalt::log
