// For tests only: Prometheus text read by the Prometheus project's own Python parser (Debian's
// /usr/bin/python3 with python3-prometheus-client), as a scraper reads it. Each sample comes
// back as "name{label=value,...}" (labels sorted, values unescaped) → value.
#pragma once

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "tests/util/temp_dir.h"

namespace basalt::testing {

inline absl::StatusOr<std::map<std::string, double>> ParsePrometheusText(const std::string& text) {
  TempDir dir;
  const std::string in = dir.path() + "/metrics.txt";
  const std::string script = dir.path() + "/parse.py";
  std::ofstream(in) << text;
  // One sample a line: the key (repr-escaped, so a newline in a label cannot break the line) and
  // the value.
  std::ofstream(script) << "import sys\n"
                           "from prometheus_client.parser import text_string_to_metric_families\n"
                           "for f in text_string_to_metric_families(open(sys.argv[1]).read()):\n"
                           "    for s in f.samples:\n"
                           "        labels = ','.join('%s=%s' % kv for kv in sorted(s.labels.items()))\n"
                           "        key = '%s{%s}' % (s.name, labels)\n"
                           "        print(key.encode('unicode_escape').decode('ascii'), repr(s.value))\n";
  FILE* p = ::popen(absl::StrCat("/usr/bin/python3 ", script, " ", in, " 2>&1").c_str(), "r");
  if (p == nullptr) return absl::InternalError("cannot run /usr/bin/python3");
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  if (::pclose(p) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Prometheus' parser (/usr/bin/python3 with Debian's python3-prometheus-client) refused the text:\n", out));
  }
  std::map<std::string, double> samples;
  std::istringstream lines(out);
  std::string key, value;
  while (lines >> key >> value) samples[key] = value == "inf" ? 1.0 / 0.0 : std::stod(value);
  return samples;
}

}  // namespace basalt::testing
