// A real basalt-server child process for integration tests: started on a port picked at run
// time (--listen=127.0.0.1:0 --port_file), stopped with SIGTERM (clean) or SIGKILL (crash),
// restarted on the same data directory. Not thread-safe; one test thread owns it.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tests/util/child_process.h"

extern char** environ;

namespace basalt::testing {

class ServerProcess {
 public:
  // `binary`: path of basalt-server; `data_dir`: its data directory (kept across restarts);
  // `extra_args`: more --key=value flags; `log_dir`: when set, the server's stdout and stderr
  // are appended to log_dir/stdout and log_dir/stderr instead of the test's.
  ServerProcess(std::string binary, std::string data_dir, std::vector<std::string> extra_args = {},
                std::string log_dir = "")
      : binary_(std::move(binary)),
        data_dir_(std::move(data_dir)),
        extra_args_(std::move(extra_args)),
        log_dir_(std::move(log_dir)) {}
  ~ServerProcess() { Kill(); }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Starts the server and waits (up to 30 s) until it listens. The first start picks a free
  // port; restarts reuse it so clients reconnect to the same address.
  absl::Status Start() {
    if (pid_ > 0) return absl::FailedPreconditionError("server already running");
    const std::string port_file = data_dir_ + ".port";
    ::unlink(port_file.c_str());
    std::vector<std::string> args = launcher_;
    std::vector<std::string> server_args = {binary_, "--data_dir=" + data_dir_,
                                     absl::StrCat("--listen=", host_, ":", port_), "--port_file=" + port_file};
    server_args.insert(server_args.end(), extra_args_.begin(), extra_args_.end());
    args.insert(args.end(), server_args.begin(), server_args.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    if (!log_dir_.empty()) {
      ::posix_spawn_file_actions_addopen(&actions, 1, (log_dir_ + "/stdout").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::posix_spawn_file_actions_addopen(&actions, 2, (log_dir_ + "/stderr").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    }
    // A launcher is looked up in PATH; it must exec the server (so pid_ stays the server's).
    const int rc = launcher_.empty() ? ::posix_spawn(&pid_, binary_.c_str(), &actions, nullptr, argv.data(), environ)
                                     : ::posix_spawnp(&pid_, args[0].c_str(), &actions, nullptr, argv.data(), environ);
    ::posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      pid_ = -1;
      return absl::InternalError(absl::StrCat("spawn ", binary_, ": error ", rc));
    }
    for (int i = 0; i < 3000; ++i) {
      std::ifstream f(port_file);
      int port = 0;
      if (f >> port && port > 0) {
        port_ = port;
        return absl::OkStatus();
      }
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return absl::InternalError(absl::StrCat("basalt-server exited during start-up, status ", status));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    Kill();
    return absl::DeadlineExceededError("basalt-server did not start listening within 30 s");
  }

  // SIGTERM and wait; returns the exit code (-signal if killed by one).
  int Terminate() { return Stop(SIGTERM); }
  // SIGKILL and wait: a crash.
  void Kill() {
    if (pid_ > 0) Stop(SIGKILL);
  }
  bool running() const { return pid_ > 0; }
  // A command the server is started through, e.g. {"prlimit", "--nofile=256:256", "--"}.
  void set_launcher(std::vector<std::string> launcher) { launcher_ = std::move(launcher); }
  int port() const { return port_; }
  std::string address() const { return absl::StrCat(host_, ":", port_); }
  // The address it listens on (before the first Start; default 127.0.0.1).
  void set_host(std::string host) { host_ = std::move(host); }
  pid_t pid() const { return pid_; }

  // Sends `sig` without waiting (SIGSTOP, SIGCONT).
  // SIGSTOP returns once every thread of the server has stopped (up to 5 s): kill() returns
  // before a thread running on another core is stopped, and such a thread could still answer
  // a call the test sends next (ClientOps.CallsToAStoppedServerEndAtTheirDeadline saw it).
  void Signal(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    if (sig != SIGSTOP) return;
    for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
         !AllThreadsStopped() && std::chrono::steady_clock::now() < end;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  // Every thread in /proc/<pid>/task is in state T (stopped) or t (traced).
  bool AllThreadsStopped() const {
    std::error_code ec;
    for (const auto& t : std::filesystem::directory_iterator("/proc/" + std::to_string(pid_) + "/task", ec)) {
      std::ifstream in(t.path() / "stat");
      std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const size_t paren = stat.rfind(')');  // "pid (comm) S ...": comm may hold spaces
      if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
      const char state = stat[paren + 2];
      if (state != 'T' && state != 't') return false;
    }
    return !ec;
  }
  // Waits up to `limit` for the server to exit by itself; returns its exit code (-signal if a
  // signal ended it), or -1000 if it still runs.
  int WaitForExit(std::chrono::milliseconds limit) {
    for (auto end = std::chrono::steady_clock::now() + limit; pid_ > 0;) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() > end) return -1000;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

  // Sends `sig` and waits; returns the exit code (-signal if killed by one; -1 if not running).
  int Stop(int sig) { return SignalAndReap(&pid_, sig); }

 private:

  std::string binary_;
  std::string data_dir_;
  std::vector<std::string> extra_args_;
  std::string log_dir_;
  std::vector<std::string> launcher_;
  std::string host_ = "127.0.0.1";
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace basalt::testing
