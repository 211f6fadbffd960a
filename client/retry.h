// The client's retry policy (client.h, "Every call..."): which codes are retried, the backoff
// schedule with jitter, and the synchronous retry loop. Thread-safe (the jitter source is
// per thread).
#pragma once

#include <functional>
#include <optional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "basalt/client.h"

namespace basalt::client_internal {

// Defaults: ConnectionOptions' (client.h), the one place they are set.
struct RetryPolicy {
  int max_attempts = ConnectionOptions{}.max_attempts;  // attempts in all; 1: no retry
  absl::Duration initial_backoff = ConnectionOptions{}.initial_backoff;
  absl::Duration max_backoff = ConnectionOptions{}.max_backoff;
  absl::Duration timeout = ConnectionOptions{}.timeout;

  static RetryPolicy From(const ConnectionOptions& o);
};

// Unavailable and ResourceExhausted.
bool IsRetriable(absl::StatusCode code);
// A ResourceExhausted from gRPC's message-size cap (either side): a request or answer too big,
// which no retry can fix (unlike "server busy").
bool IsMessageTooLarge(const absl::Status& status);

// The wait a server's quota refusal names (ResourceExhausted "... - wait 1hrs, 2mins, 0.20sec",
// HBase's RpcThrottlingException wording); nullopt for any other status.
std::optional<absl::Duration> ThrottleWait(const absl::Status& status);

// The delay before retry number `retry` (1: the first retry): d = initial * 2^(retry-1) capped
// at max_backoff, then jittered to d/2 + jitter01 * d/2 (jitter01 in [0, 1]).
absl::Duration BackoffDelay(const RetryPolicy& policy, int retry, double jitter01);
// BackoffDelay with a random jitter.
absl::Duration JitteredBackoff(const RetryPolicy& policy, int retry);

// The first backoff after a region refused a call as not served (NotServingRegionError), then
// doubling as any backoff: the call goes again once the row is located afresh.
inline constexpr absl::Duration kRelocateBackoff = absl::Milliseconds(2);

// Decides what follows a failed attempt. Returns the delay before the next attempt (at least
// the wait a quota's refusal names), or
// nullopt when the call should end with `status`: not retriable (a message over the size cap
// included), `retriable_op` false (unless a region refused the call as not served: nothing was
// applied), out of attempts, or the delay would pass `deadline`. `attempts` is how many were
// made.
std::optional<absl::Duration> NextRetry(const RetryPolicy& policy, bool retriable_op, const absl::Status& status,
                                        int attempts, absl::Time deadline, absl::Time now);

// `s` after `attempts` attempts: with " (after N attempts)" appended when more than one.
absl::Status AfterAttempts(const absl::Status& s, int attempts);

// Runs attempt(deadline) until it succeeds or NextRetry says stop; sleeps between attempts.
// Returns the last status, annotated by AfterAttempts.
absl::Status RetryLoop(const RetryPolicy& policy, bool retriable_op, absl::Time deadline,
                       const std::function<absl::Status(absl::Time deadline)>& attempt);

}  // namespace basalt::client_internal
