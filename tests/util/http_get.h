// For tests only: one HTTP GET to a server's HTTP port (cpp-httplib's client, Debian's
// libcpp-httplib-dev), one sample read from Prometheus text without a parser (a gauge the test
// waits on; tests/util/prometheus_text.h reads a whole scrape as a scraper would), and a count of
// what a page holds.
#pragma once

#include <httplib.h>

#include <optional>
#include <sstream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace basalt::testing {

struct HttpReply {
  int status = 0;
  std::string content_type;
  std::string body;
};

// GET http://HOST:PORT`path`; Unavailable when nothing answers.
inline absl::StatusOr<HttpReply> HttpGet(const std::string& host_port, const std::string& path) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) return absl::InvalidArgumentError(absl::StrCat("not HOST:PORT: ", host_port));
  httplib::Client http(host_port.substr(0, colon), std::stoi(host_port.substr(colon + 1)));
  http.set_read_timeout(10, 0);
  httplib::Result res = http.Get(path);
  if (!res) {
    return absl::UnavailableError(
        absl::StrCat("no answer from http://", host_port, path, " (", httplib::to_string(res.error()), ")"));
  }
  return HttpReply{res->status, res->get_header_value("Content-Type"), res->body};
}

// The value of the sample `series` (its name and labels exactly as written, "name" alone for
// one without labels) in Prometheus text; nullopt when it is not there.
inline std::optional<double> SampleValue(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 && line[series.size()] == ' ') {
      double v = 0;
      if (absl::SimpleAtod(line.substr(series.size() + 1), &v)) return v;
    }
  }
  return std::nullopt;
}

// How many times `needle` occurs in `text` (overlapping ones too).
inline size_t Occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace basalt::testing
