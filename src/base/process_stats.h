// The process's own figures (Status, the metrics).
#pragma once

#include <cstdint>

namespace basalt::server {

// The process, from /proc/self (Linux): resident bytes, open descriptors (less the reading's
// own), threads. 0 when /proc cannot be read.
uint64_t ResidentBytes();
uint64_t OpenDescriptors();
uint64_t ThreadCount();

}  // namespace basalt::server
