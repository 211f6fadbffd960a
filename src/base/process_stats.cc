#include "src/base/process_stats.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace basalt::server {

uint64_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

// Descriptors the process has open (entries of /proc/self/fd, less the directory's own).
uint64_t OpenDescriptors() {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  uint64_t n = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n > 0 ? n - 1 : 0;
}

uint64_t ThreadCount() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  unsigned long threads = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "Threads: %lu", &threads) == 1) break;
  }
  std::fclose(f);
  return threads;
}

}  // namespace basalt::server
