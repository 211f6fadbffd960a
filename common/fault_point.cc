#include "common/fault_point.h"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace basalt {
namespace {

std::atomic<const std::string*>& Armed() {
  static std::atomic<const std::string*> armed{[] {
    const char* v = std::getenv("BASALT_FAULT_POINT");
    return new std::string(v == nullptr ? "" : v);
  }()};
  return armed;
}

}  // namespace

void FaultPoint(std::string_view name) {
  const std::string* armed = Armed().load(std::memory_order_acquire);
  if (armed->empty() || *armed != name) return;
  ::kill(::getpid(), SIGKILL);
  ::pause();  // SIGKILL cannot be caught: never returns
}

absl::Status FailPoint(std::string_view name) {
  static const std::string* const armed = [] {
    const char* v = std::getenv("BASALT_FAIL_POINT");
    return new std::string(v == nullptr ? "" : v);
  }();
  if (armed->empty() || *armed != name) return absl::OkStatus();
  return absl::InternalError(std::string("injected failure at ") + std::string(name) + " (BASALT_FAIL_POINT)");
}

void ArmFaultPoint(std::string_view name) {
  // The old name stays allocated: a point on another thread may be comparing it right now.
  Armed().store(new std::string(name), std::memory_order_release);
}

}  // namespace basalt
