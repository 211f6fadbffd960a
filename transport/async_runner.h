// A few threads for a path's async calls that must run as sync calls (started on first use):
// the verbs and TCP paths' (transport/verbs/path.cc, transport/tcp/path.cc).
//
// Thread-safety: Run from any thread; the destructor runs what is queued, then joins.
#pragma once

#include <algorithm>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace basalt {

// A few threads for the async calls (started on first use).
class AsyncRunner {
 public:
  explicit AsyncRunner(int threads) : want_(std::max(1, threads)) {}
  ~AsyncRunner() {
    {
      absl::MutexLock l(&mu_);
      stop_ = true;
    }
    for (auto& t : threads_) t.join();
  }
  void Run(std::function<void()> task) {
    absl::MutexLock l(&mu_);
    if (threads_.empty()) {
      for (int i = 0; i < want_; ++i) threads_.emplace_back([this] { Loop(); });
    }
    tasks_.push_back(std::move(task));
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> task;
      {
        absl::MutexLock l(&mu_);
        mu_.Await(absl::Condition(
            +[](AsyncRunner* r) ABSL_NO_THREAD_SAFETY_ANALYSIS { return r->stop_ || !r->tasks_.empty(); }, this));
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }
  const int want_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt
