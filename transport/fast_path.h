// What the fast paths share (the verbs path, transport/verbs/path.h, and the TCP path,
// transport/tcp/path.h): a client opened lazily by the first call that finds none, the "down"
// timer that is the only owner of the fallback decision (a transport failure marks the path
// down for `retry`; meanwhile calls take gRPC; then the path is tried again), the counters, and
// the factory's rule (a server that offers no such path leaves it to the next path in the
// selector's order, unless the path is required).
//
// Thread-safety: safe to use from many threads; a path's client, once opened, stays for the
// path's life.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "transport/async_runner.h"
#include "transport/grpc/path.h"
#include "transport/path.h"
#include "transport/selector.h"

namespace basalt {

template <class Client>
class FastPath : public DataPath {
 public:
  // The client goes first, while the rest is whole: its calls still in flight fail as it closes,
  // and their callbacks count, mark the path down and hand the call to gRPC.
  ~FastPath() override {
    std::unique_ptr<Client> c;
    {
      absl::MutexLock l(&mu_);
      c = std::move(client_);
    }
    ready_.store(nullptr, std::memory_order_release);
    c.reset();
  }

  // Makes the path's client (asks the server for a session, connects).
  virtual absl::StatusOr<std::unique_ptr<Client>> OpenClient() = 0;

  // Opens the client now (the factory's first try). A client opened meanwhile by another call
  // stays: one in use is never replaced (this one is dropped).
  absl::Status OpenNow() {
    absl::StatusOr<std::unique_ptr<Client>> c = OpenClient();
    if (!c.ok()) return c.status();
    absl::MutexLock l(&mu_);
    if (client_ != nullptr) return absl::OkStatus();
    client_ = std::move(*c);
    ready_.store(client_.get(), std::memory_order_release);
    return absl::OkStatus();
  }

  void MarkDown(const absl::Status& why) {
    down_until_ns_.store(absl::GetCurrentTimeNanos() + absl::ToInt64Nanoseconds(retry_), std::memory_order_relaxed);
    absl::MutexLock l(&mu_);
    last_error_ = std::string(why.message());
  }

 protected:
  FastPath(std::string server, GrpcPath* grpc, absl::Duration retry, int async_threads)
      : server_(std::move(server)), grpc_(grpc), retry_(retry), async_(async_threads) {}

  bool Down() const { return absl::GetCurrentTimeNanos() < down_until_ns_.load(std::memory_order_relaxed); }
  // The client once opened (whether or not the path is down); nullptr before.
  Client* Opened() const { return ready_.load(std::memory_order_acquire); }

  // The client when the path is up; nullptr while it is down or being opened (by this call,
  // when no other is opening it: a failure marks the path down).
  Client* Usable() {
    if (Down()) return nullptr;
    if (Client* c = Opened(); c != nullptr) return c;
    {
      absl::MutexLock l(&mu_);
      if (client_ != nullptr) return client_.get();  // opened since Opened() was read
      if (opening_) return nullptr;
      opening_ = true;
    }
    absl::Status st = OpenNow();
    {
      absl::MutexLock l(&mu_);
      opening_ = false;
    }
    if (!st.ok()) {
      MarkDown(st);
      return nullptr;
    }
    return Opened();
  }

  // Whether the path answered the call; otherwise (too large for its frames, or a transport
  // failure, which marks the path down) it goes to gRPC. Counts either.
  bool Answered(const absl::Status& st, bool oversized, bool failed) {
    if (oversized) {
      oversized_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (failed) {
      MarkDown(st);
      fallbacks_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    calls_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  void CountFallback() { fallbacks_.fetch_add(1, std::memory_order_relaxed); }

  // The path's counters into `out`: its calls into `*calls`; its state "up" or "down: <why>".
  void AddCounters(TransportStats* out, uint64_t* calls, std::string* state) const {
    *calls += calls_.load(std::memory_order_relaxed);
    out->grpc_fallbacks += fallbacks_.load(std::memory_order_relaxed);
    out->oversized += oversized_.load(std::memory_order_relaxed);
    absl::MutexLock l(&mu_);
    *state = Down() || Opened() == nullptr ? absl::StrCat("down: ", last_error_) : "up";
  }

  // Runs a call as a sync call on the path's small pool.
  template <class Sync>
  void RunSync(Sync sync_call, PathCallback done) {
    async_.Run([sync_call = std::move(sync_call), done = std::move(done)] { done(sync_call()); });
  }

  const std::string server_;
  GrpcPath* const grpc_;

 private:
  const absl::Duration retry_;
  mutable absl::Mutex mu_;
  std::unique_ptr<Client> client_ ABSL_GUARDED_BY(mu_);  // set once
  std::atomic<Client*> ready_{nullptr};                   // client_, published
  bool opening_ ABSL_GUARDED_BY(mu_) = false;
  std::string last_error_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> down_until_ns_{0};
  std::atomic<uint64_t> calls_{0}, fallbacks_{0}, oversized_{0};
  AsyncRunner async_;  // last: its threads stop before the rest goes
};

// The answer of a server that offers no such path: it said so (FailedPrecondition: no device,
// switched off, under TLS), it predates the path, or the call does not exist.
inline bool NoSuchPathHere(absl::StatusCode code) {
  return code == absl::StatusCode::kFailedPrecondition || code == absl::StatusCode::kUnimplemented ||
         code == absl::StatusCode::kNotFound || code == absl::StatusCode::kInvalidArgument;
}

// The factory of a fast path: the path opened now; none (and why) when the server offers no
// such path; an error when the path is `required` and cannot be had; a path marked down when
// the server could not be reached (tried again after the path's retry).
template <class Path, class Options>
FastPathFactory MakeFastPathFactory(const Options& options) {
  return [options](const std::string& server, GrpcPath* grpc) -> absl::StatusOr<FastPathResult> {
    auto path = std::make_unique<Path>(server, grpc, options);
    absl::Status st = path->OpenNow();
    if (!st.ok()) {
      if (options.required) return st;
      if (NoSuchPathHere(st.code())) return FastPathResult{nullptr, std::string(st.message())};
      path->MarkDown(st);
    }
    return FastPathResult{std::move(path), ""};
  };
}

}  // namespace basalt
