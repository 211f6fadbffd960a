// Status helpers shared by every module. Debian's Abseil (20220623) predates Abseil's own
// return-if-error macros, so Basalt carries two small ones.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include <string_view>

namespace basalt {
// Debian's Abseil is built with its own absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW 0),
// which does not convert from std::string_view. Wrap a std::string_view for absl::StrCat etc.
inline absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }
}  // namespace basalt

#define BASALT_CONCAT_INNER_(a, b) a##b
#define BASALT_CONCAT_(a, b) BASALT_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` (an absl::Status) is not OK.
#define BASALT_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::absl::Status basalt_status_ = (expr);          \
    if (!basalt_status_.ok()) return basalt_status_; \
  } while (0)

// `lhs = value of expr` (an absl::StatusOr<T>), or returns its error.
#define BASALT_ASSIGN_OR_RETURN(lhs, expr) \
  BASALT_ASSIGN_OR_RETURN_IMPL_(BASALT_CONCAT_(basalt_statusor_, __LINE__), lhs, expr)
#define BASALT_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).status();      \
  lhs = std::move(tmp).value()
