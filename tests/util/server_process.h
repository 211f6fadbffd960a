// A real basalt-server child process for integration tests: started on a port picked at run
// time (--listen=127.0.0.1:0 --port_file), stopped with SIGTERM (clean) or SIGKILL (crash),
// restarted on the same data directory. Not thread-safe; one test thread owns it. It is started
// as every test's program is (ChildProcess, child_process.h).
#pragma once

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tests/util/child_process.h"

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
    if (running()) return absl::FailedPreconditionError("server already running");
    const std::string port_file = data_dir_ + ".port";
    ::unlink(port_file.c_str());
    std::vector<std::string> args = launcher_;
    args.insert(args.end(), {binary_, "--data_dir=" + data_dir_, absl::StrCat("--listen=", host_, ":", port_),
                             "--port_file=" + port_file});
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    ChildProcess::Output output;
    if (!log_dir_.empty()) {
      output.stdout_path = log_dir_ + "/stdout";
      output.stderr_path = log_dir_ + "/stderr";
    }
    // A launcher is looked up in PATH; it must exec the server (so the pid stays the server's).
    output.search_path = !launcher_.empty();
    absl::StatusOr<std::unique_ptr<ChildProcess>> spawned = ChildProcess::Spawn(std::move(args), output);
    if (!spawned.ok()) return spawned.status();
    process_ = *std::move(spawned);
    for (int i = 0; i < 3000; ++i) {
      std::ifstream f(port_file);
      int port = 0;
      if (f >> port && port > 0) {
        port_ = port;
        return absl::OkStatus();
      }
      if (std::optional<int> code = process_->WaitForExit(absl::ZeroDuration())) {
        process_.reset();
        return absl::InternalError(absl::StrCat("basalt-server exited during start-up, exit code ", *code));
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
    if (running()) Stop(SIGKILL);
  }
  bool running() const { return process_ != nullptr && process_->running(); }
  // A command the server is started through, e.g. {"prlimit", "--nofile=256:256", "--"}.
  void set_launcher(std::vector<std::string> launcher) { launcher_ = std::move(launcher); }
  int port() const { return port_; }
  std::string address() const { return absl::StrCat(host_, ":", port_); }
  // The address it listens on (before the first Start; default 127.0.0.1).
  void set_host(std::string host) { host_ = std::move(host); }
  pid_t pid() const { return process_ != nullptr ? process_->pid() : -1; }

  // Sends `sig` without waiting (SIGSTOP, SIGCONT).
  // SIGSTOP returns once every thread of the server has stopped (up to 5 s): kill() returns
  // before a thread running on another core is stopped, and such a thread could still answer
  // a call the test sends next (ClientOps.CallsToAStoppedServerEndAtTheirDeadline saw it).
  void Signal(int sig) {
    if (!running()) return;
    process_->Signal(sig);
    if (sig != SIGSTOP) return;
    for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
         !AllThreadsStopped() && std::chrono::steady_clock::now() < end;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  // Every thread in /proc/<pid>/task is in state T (stopped) or t (traced).
  bool AllThreadsStopped() const {
    std::error_code ec;
    for (const auto& t : std::filesystem::directory_iterator("/proc/" + std::to_string(pid()) + "/task", ec)) {
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
    if (!running()) return -1;
    return process_->WaitForExit(absl::FromChrono(limit)).value_or(-1000);
  }

  // Sends `sig` and waits; returns the exit code (-signal if killed by one; -1 if not running).
  int Stop(int sig) { return running() ? process_->Stop(sig) : -1; }

 private:

  std::string binary_;
  std::string data_dir_;
  std::vector<std::string> extra_args_;
  std::string log_dir_;
  std::vector<std::string> launcher_;
  std::string host_ = "127.0.0.1";
  std::unique_ptr<ChildProcess> process_;
  int port_ = 0;
};

}  // namespace basalt::testing
