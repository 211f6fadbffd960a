// The one way tests start a program (a basalt-master, basalt-server through ServerProcess, the
// shell, a crash writer, Chromium): posix_spawn with its stdout and stderr sent to files, to a
// pipe the test reads, or left as the test's; SIGKILLed when the object goes, unless it was
// stopped before.
//
//   auto master = ChildProcess::Spawn({BASALT_MASTER_BINARY, "--zookeeper_quorum=..."}, dir + "/master.log");
//   absl::StatusOr<ChildProcess::Finished> shell = ChildProcess::Run({BASALT_SHELL_BINARY, "-e", "list"});
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

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

// The exit code a waitpid status says: the program's, -signal if one ended it, -1 otherwise.
inline int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -1;
}

// Sends `sig` to *pid and waits for it; returns the exit code (-signal if one ended it; -1 if
// there was no process), and marks *pid gone.
inline int SignalAndReap(pid_t* pid, int sig) {
  if (*pid <= 0) return -1;
  ::kill(*pid, sig);
  int status = 0;
  ::waitpid(*pid, &status, 0);
  *pid = -1;
  return ExitCodeOf(status);
}

class ChildProcess {
 public:
  struct Output {
    std::string stdout_path;  // appended to (truncated first with `truncate`); empty: the test's
    std::string stderr_path;  // likewise; empty: where stdout goes (the test's when that is too)
    bool truncate = false;
    // stdout, and stderr unless stderr_path is set, into a pipe the test reads (read_fd()); it
    // must be drained, or the program blocks once it is full.
    bool pipe = false;
    bool keep_stderr = false;  // stderr stays the test's whatever stdout does
    bool search_path = false;  // argv[0] is looked up in PATH (a launcher such as prlimit)
  };

  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(std::vector<std::string> argv, const Output& output) {
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    int fds[2] = {-1, -1};
    if (output.pipe && ::pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError(absl::StrCat("pipe2: errno ", errno));
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    const int flags = O_WRONLY | O_CREAT | (output.truncate ? O_TRUNC : O_APPEND);
    if (output.pipe) {
      ::posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    } else if (!output.stdout_path.empty()) {
      ::posix_spawn_file_actions_addopen(&actions, 1, output.stdout_path.c_str(), flags, 0644);
    }
    if (!output.stderr_path.empty()) {
      ::posix_spawn_file_actions_addopen(&actions, 2, output.stderr_path.c_str(), flags, 0644);
    } else if (!output.keep_stderr && (output.pipe || !output.stdout_path.empty())) {
      ::posix_spawn_file_actions_adddup2(&actions, 1, 2);
    }
    pid_t pid = -1;
    const int rc = output.search_path ? ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ)
                                      : ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
    ::posix_spawn_file_actions_destroy(&actions);
    if (output.pipe) ::close(fds[1]);
    if (rc != 0) {
      if (output.pipe) ::close(fds[0]);
      return absl::InternalError(absl::StrCat("spawn ", argv[0], ": error ", rc));
    }
    return std::unique_ptr<ChildProcess>(new ChildProcess(pid, fds[0]));
  }
  // Its stdout and stderr appended to `log`.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(std::vector<std::string> argv, const std::string& log) {
    Output output;
    output.stdout_path = log;
    return Spawn(std::move(argv), output);
  }

  struct Finished {
    int exit_code = -1;  // -signal if one ended it
    std::string output;  // what it printed on stdout (and stderr, with_stderr)
  };
  // Runs a program to its end (no shell between: each argument is one argv entry).
  static absl::StatusOr<Finished> Run(std::vector<std::string> argv, bool with_stderr = true) {
    Output output;
    output.pipe = true;
    if (!with_stderr) output.stderr_path = "/dev/null";
    absl::StatusOr<std::unique_ptr<ChildProcess>> p = Spawn(std::move(argv), output);
    if (!p.ok()) return p.status();
    Finished f;
    f.output = (*p)->ReadAll();
    f.exit_code = (*p)->Wait();
    return f;
  }

  ~ChildProcess() {
    Stop(SIGKILL);
    if (read_fd_ >= 0) ::close(read_fd_);
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Sends `sig` and waits; the exit code (-signal if one ended it; -1 if it had stopped).
  int Stop(int sig) { return SignalAndReap(&pid_, sig); }
  // Sends `sig` without waiting (SIGSTOP, SIGCONT).
  void Signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  // Waits for it to end on its own: its exit code (-signal if one ended it; -1 if it had stopped).
  int Wait() {
    if (pid_ <= 0) return -1;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return ExitCodeOf(status);
  }
  // Waits up to `limit` for it to end on its own: its exit code (-signal if one ended it), or
  // nullopt while it runs on.
  std::optional<int> WaitForExit(absl::Duration limit) {
    for (absl::Time end = absl::Now() + limit;; absl::SleepFor(absl::Milliseconds(10))) {
      if (pid_ <= 0) return -1;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return ExitCodeOf(status);
      }
      if (absl::Now() >= end) return std::nullopt;
    }
  }
  // The pipe's reading end (Output::pipe), else -1. The object closes it.
  int read_fd() const { return read_fd_; }
  // Everything left in the pipe, to its end (the program's exit, or its closing stdout).
  std::string ReadAll() {
    std::string out;
    char buf[65536];
    for (ssize_t n; read_fd_ >= 0 && (n = ::read(read_fd_, buf, sizeof(buf))) != 0;) {
      if (n < 0) {
        if (errno == EINTR) continue;
        break;
      }
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }

 private:
  ChildProcess(pid_t pid, int read_fd) : pid_(pid), read_fd_(read_fd) {}
  pid_t pid_;
  int read_fd_;
};

}  // namespace basalt::testing
