// The programs' log (docs/DESIGN.md §11): one place every line of a server goes through. A line goes to
// stderr as "PROGRAM: text" (systemd's journal stamps and keeps it), or, with a log directory,
// to PROGRAM.log there with a timestamp and level, rolled past a size (errors to stderr too);
// and the last lines stay in memory for the HTTP port's /logs and status page. Lines below the
// set level are dropped.
//
// Thread-safety: every function, from any thread (one mutex, taken per line: not for the data
// path, which logs nothing per request).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace basalt::log {

enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// "debug", "info", "warning" (or "warn"), "error"; InvalidArgument otherwise.
absl::Status ParseLevel(std::string_view text, Level* level);
std::string_view LevelName(Level level);  // "INFO", ...

struct Options {
  std::string program = "basalt";  // the prefix of every line
  Level level = Level::kInfo;      // lines below are dropped
  // Empty: stderr. Else PROGRAM.log in this directory (made if missing), renamed to
  // PROGRAM.log.1 (.1 to .2, ...) past max_file_bytes, keeping max_files old ones.
  std::string dir;
  uint64_t max_file_bytes = 64ull << 20;
  int max_files = 5;
  size_t keep_lines = 500;  // kept in memory for Recent()
};

// Sets where lines go from now on. Error (with the directory) when the log file cannot be
// opened: lines then go to stderr.
absl::Status Configure(const Options& options);

void Write(Level level, std::string_view text);
// As Write, but not to stderr: for what a program says on stdout already (its start-up facts),
// kept for /logs and written to the log file when there is one.
void Record(Level level, std::string_view text);
inline void Debug(std::string_view text) { Write(Level::kDebug, text); }
inline void Info(std::string_view text) { Write(Level::kInfo, text); }
inline void Warning(std::string_view text) { Write(Level::kWarning, text); }
inline void Error(std::string_view text) { Write(Level::kError, text); }

struct Line {
  absl::Time time;
  Level level;
  std::string text;
};
// The last `max` lines written (at or above the level), oldest first.
std::vector<Line> Recent(size_t max);

}  // namespace basalt::log
