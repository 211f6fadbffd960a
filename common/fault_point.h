// Fault points for crash tests: a test starts a server with BASALT_FAULT_POINT=<name> in its
// environment, and the server kills itself with SIGKILL (as kill -9 would) the first time it
// reaches the point of that name. Without the variable a point does nothing but compare a
// cached empty string.
#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace basalt {

void FaultPoint(std::string_view name);

// Fail points, for tests of error paths: with BASALT_FAIL_POINT=<name> in the environment, the
// point of that name returns an Internal error each time it is reached (else OK).
absl::Status FailPoint(std::string_view name);

// Arms the point of that name in this process, as BASALT_FAULT_POINT would have (for a death
// test's child, which runs the test's set-up again before it reaches the statement).
void ArmFaultPoint(std::string_view name);

}  // namespace basalt
