#include "client/retry.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <optional>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::client_internal {

RetryPolicy RetryPolicy::From(const ConnectionOptions& o) {
  RetryPolicy p;
  p.max_attempts = o.max_attempts;
  p.initial_backoff = o.initial_backoff;
  p.max_backoff = std::max(o.max_backoff, o.initial_backoff);
  p.timeout = o.timeout;
  return p;
}

bool IsRetriable(absl::StatusCode code) {
  return code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kResourceExhausted;
}

absl::Duration BackoffDelay(const RetryPolicy& policy, int retry, double jitter01) {
  absl::Duration d = policy.initial_backoff;
  for (int i = 1; i < retry && d < policy.max_backoff; i++) d *= 2;
  d = std::min(d, policy.max_backoff);
  jitter01 = std::clamp(jitter01, 0.0, 1.0);
  return d / 2 + (d / 2) * jitter01;
}

absl::Duration JitteredBackoff(const RetryPolicy& policy, int retry) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> dist(0.0, 1.0);
  return BackoffDelay(policy, retry, dist(rng));
}

std::optional<absl::Duration> ThrottleWait(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kResourceExhausted) return std::nullopt;
  const std::string_view text(status.message().data(), status.message().size());
  size_t at = text.find(" - wait ");
  if (at == std::string_view::npos) return std::nullopt;
  at += 8;
  absl::Duration wait;
  bool any = false;
  // Parts "Nhrs, ", "Nmins, ", then "N.NNsec".
  while (at < text.size()) {
    size_t end = at;
    while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) ++end;
    double n = 0;
    if (end == at || !absl::SimpleAtod(absl::string_view(text.data() + at, end - at), &n)) break;
    const std::string_view unit = text.substr(end);
    if (unit.starts_with("hrs")) {
      wait += absl::Hours(n);
    } else if (unit.starts_with("mins")) {
      wait += absl::Minutes(n);
    } else if (unit.starts_with("sec")) {
      wait += absl::Seconds(n);
      any = true;
      break;
    } else {
      break;
    }
    at = text.find(", ", end);
    if (at == std::string_view::npos) break;
    at += 2;
  }
  if (!any) return std::nullopt;
  return wait;
}

bool IsMessageTooLarge(const absl::Status& status) {
  // gRPC's size filters: "Received message larger than max (N vs. M)" / "Sent message ...".
  return status.code() == absl::StatusCode::kResourceExhausted &&
         absl::StrContains(status.message(), "message larger than max");
}

std::optional<absl::Duration> NextRetry(const RetryPolicy& policy, bool retriable_op, const absl::Status& status,
                                        int attempts, absl::Time deadline, absl::Time now) {
  if (status.ok()) return std::nullopt;
  // A region that no longer serves the row applied nothing: any call may go again, after a
  // short pause (a split or merge keeps its regions closed for milliseconds).
  const bool not_serving = IsNotServingRegion(status);
  if (!not_serving && (!retriable_op || !IsRetriable(status.code()))) return std::nullopt;
  if (IsMessageTooLarge(status)) return std::nullopt;  // the same message fails the same way again
  if (attempts >= policy.max_attempts) return std::nullopt;
  RetryPolicy relocate = policy;
  relocate.initial_backoff = std::min(policy.initial_backoff, kRelocateBackoff);
  absl::Duration delay = JitteredBackoff(not_serving ? relocate : policy, attempts);
  // A quota refused the call: no sooner than it said (HBase's client waits likewise).
  if (std::optional<absl::Duration> wait = ThrottleWait(status); wait.has_value()) delay = std::max(delay, *wait);
  if (now + delay >= deadline) return std::nullopt;
  return delay;
}

absl::Status AfterAttempts(const absl::Status& s, int attempts) {
  if (s.ok() || attempts <= 1) return s;
  absl::Status out(s.code(), absl::StrCat(s.message(), " (after ", attempts, " attempts)"));
  // Payloads (a NotServingRegionError's region) stay.
  s.ForEachPayload([&](absl::string_view type_url, const absl::Cord& payload) { out.SetPayload(type_url, payload); });
  return out;
}

absl::Status RetryLoop(const RetryPolicy& policy, bool retriable_op, absl::Time deadline,
                       const std::function<absl::Status(absl::Time deadline)>& attempt) {
  for (int attempts = 1;; attempts++) {
    absl::Status s = attempt(deadline);
    if (s.ok()) return s;
    std::optional<absl::Duration> delay = NextRetry(policy, retriable_op, s, attempts, deadline, absl::Now());
    if (!delay.has_value()) return AfterAttempts(s, attempts);
    absl::SleepFor(*delay);
  }
}

}  // namespace basalt::client_internal
