// A program a test runs beside it (a basalt-master), its stdout and stderr appended to a file;
// SIGKILLed when the object goes, unless it was stopped before.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

extern char** environ;

namespace basalt::testing {

// Sends `sig` to *pid and waits for it; returns the exit code (-signal if one ended it; -1 if
// there was no process), and marks *pid gone.
inline int SignalAndReap(pid_t* pid, int sig) {
  if (*pid <= 0) return -1;
  ::kill(*pid, sig);
  int status = 0;
  ::waitpid(*pid, &status, 0);
  *pid = -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -1;
}

class ChildProcess {
 public:
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(std::vector<std::string> argv, const std::string& log) {
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
    ::posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return absl::InternalError(absl::StrCat("spawn ", argv[0], ": error ", rc));
    return std::unique_ptr<ChildProcess>(new ChildProcess(pid));
  }
  ~ChildProcess() { Stop(SIGKILL); }

  // Sends `sig` and waits; the exit code (-signal if one ended it; -1 if it had stopped).
  int Stop(int sig) { return SignalAndReap(&pid_, sig); }
  // Waits up to `limit` for it to end on its own: its exit code (-signal if one ended it), or
  // nullopt while it runs on.
  std::optional<int> WaitForExit(absl::Duration limit) {
    for (absl::Time end = absl::Now() + limit;; absl::SleepFor(absl::Milliseconds(10))) {
      if (pid_ <= 0) return -1;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        if (WIFEXITED(status)) return WEXITSTATUS(status);
        if (WIFSIGNALED(status)) return -WTERMSIG(status);
        return -1;
      }
      if (absl::Now() >= end) return std::nullopt;
    }
  }
  pid_t pid() const { return pid_; }

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_;
};

}  // namespace basalt::testing
