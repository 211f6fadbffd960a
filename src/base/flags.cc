#include "src/base/flags.h"

#include <cctype>
#include <climits>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status.h"

namespace basalt::server {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Keys match with '-' and '_' alike (the shell's --tls-ca, the server's --tls_cert).
bool SameKey(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char x = a[i] == '-' ? '_' : a[i];
    const char y = b[i] == '-' ? '_' : b[i];
    if (x != y) return false;
  }
  return true;
}

}  // namespace

absl::Status BadValue(std::string_view key, std::string_view value, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("bad value '", AV(value), "' for ", AV(key), ": ", why));
}

absl::Status CheckHostPort(std::string_view key, std::string_view value) {
  std::string host;
  int port;
  absl::Status s = SplitHostPort(value, &host, &port);
  return s.ok() ? s : BadValue(key, value, s.message());
}

absl::StatusOr<uint64_t> ParseBytes(std::string_view key, std::string_view v) {
  std::string_view num = v;
  uint64_t mult = 1;
  std::string lower = absl::AsciiStrToLower(AV(v));
  struct Suffix {
    const char* s;
    uint64_t m;
  };
  static constexpr Suffix kSuffixes[] = {{"kib", 1ull << 10}, {"mib", 1ull << 20}, {"gib", 1ull << 30},
                                         {"kb", 1ull << 10},  {"mb", 1ull << 20},  {"gb", 1ull << 30},
                                         {"k", 1ull << 10},   {"m", 1ull << 20},   {"g", 1ull << 30},
                                         {"b", 1}};
  for (const Suffix& s : kSuffixes) {
    std::string_view suf(s.s);
    if (lower.size() > suf.size() && std::string_view(lower).substr(lower.size() - suf.size()) == suf) {
      num = Trim(v.substr(0, v.size() - suf.size()));
      mult = s.m;
      break;
    }
  }
  uint64_t n = 0;
  if (num.empty() || !std::isdigit(static_cast<unsigned char>(num[0])) || !absl::SimpleAtoi(AV(num), &n)) {
    return BadValue(key, v, "expected a byte count such as 1048576, 64KiB or 128MiB");
  }
  if (n > UINT64_MAX / mult) return BadValue(key, v, "too large");
  return n * mult;
}

absl::StatusOr<int64_t> ParseInt(std::string_view key, std::string_view v, int64_t min, int64_t max) {
  int64_t n = 0;
  if (!absl::SimpleAtoi(AV(v), &n)) return BadValue(key, v, "expected an integer");
  if (n < min || n > max) return BadValue(key, v, absl::StrCat("must be in [", min, ", ", max, "]"));
  return n;
}

absl::StatusOr<double> ParseDouble(std::string_view key, std::string_view v, double min, double max) {
  double d = 0;
  if (!absl::SimpleAtod(AV(v), &d)) return BadValue(key, v, "expected a number");
  if (!(d >= min && d <= max)) return BadValue(key, v, absl::StrCat("must be in [", min, ", ", max, "]"));
  return d;
}

absl::Status ParsePrincipals(std::string_view key, std::string_view v, std::vector<std::string>* out) {
  out->clear();
  for (absl::string_view part : absl::StrSplit(AV(v), ',', absl::SkipWhitespace())) {
    std::string name(absl::StripAsciiWhitespace(part));
    if (name == "@" || name.find(' ') != std::string::npos) return BadValue(key, v, "expected USER or @GROUP names");
    out->push_back(std::move(name));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> ParseBool(std::string_view key, std::string_view v) {
  std::string l = absl::AsciiStrToLower(AV(v));
  if (l == "true" || l == "1" || l == "yes" || l == "on") return true;
  if (l == "false" || l == "0" || l == "no" || l == "off") return false;
  return BadValue(key, v, "expected true or false");
}

absl::Status SplitHostPort(std::string_view listen, std::string* host, int* port) {
  size_t colon;
  if (!listen.empty() && listen.front() == '[') {
    size_t close = listen.find(']');
    if (close == std::string_view::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      return absl::InvalidArgumentError("expected [IPV6]:PORT");
    }
    *host = std::string(listen.substr(0, close + 1));
    colon = close + 1;
  } else {
    colon = listen.rfind(':');
    if (colon == std::string_view::npos) return absl::InvalidArgumentError("expected HOST:PORT");
    *host = std::string(listen.substr(0, colon));
    if (host->find(':') != std::string::npos) return absl::InvalidArgumentError("IPv6 hosts go in brackets: [::1]:PORT");
  }
  if (host->empty()) return absl::InvalidArgumentError("expected HOST:PORT (host is empty)");
  std::string_view p = listen.substr(colon + 1);
  int n = 0;
  if (p.empty() || p.size() > 5 || !absl::SimpleAtoi(AV(p), &n) || n < 0 || n > 65535 ||
      !std::isdigit(static_cast<unsigned char>(p[0]))) {
    return absl::InvalidArgumentError(absl::StrCat("port '", AV(p), "' is not in [0, 65535]"));
  }
  *port = n;
  return absl::OkStatus();
}

absl::Status ForEachConfigLine(std::string_view text, const std::string& path,
                               const std::function<absl::Status(std::string_view key, std::string_view value)>& set) {
  int line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = Trim(line);
    if (line.empty()) continue;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": expected 'key = value', got '", AV(line), "'"));
    }
    absl::Status s = set(Trim(line.substr(0, eq)), Trim(line.substr(eq + 1)));
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": ", s.message()));
  }
  return absl::OkStatus();
}

bool IsSecretSetting(std::string_view key) {
  const std::string k = absl::AsciiStrToLower(AV(key));
  for (std::string_view word : {"password", "secret", "token", "keyring", "credential", "private"}) {
    if (absl::StrContains(k, AV(word))) return true;
  }
  return absl::EndsWith(k, "_key") || k == "key";
}

const Flag* FlagSet::Find(std::string_view key) const {
  for (const Flag& f : flags_) {
    if (SameKey(f.key, key)) return &f;
  }
  return nullptr;
}

bool FlagSet::Reword(std::string_view key, std::string default_text, std::string help) {
  for (Flag& f : flags_) {
    if (!SameKey(f.key, key)) continue;
    f.default_text = std::move(default_text);
    f.help = std::move(help);
    return true;
  }
  return false;
}

absl::Status FlagSet::Set(std::string_view key, std::string_view value) {
  const Flag* f = Find(key);
  if (f == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown setting '", AV(key), "' (see --help)"));
  BASALT_RETURN_IF_ERROR(f->set(value));
  given_[f->key] = std::string(value);
  return absl::OkStatus();
}

absl::Status FlagSet::ApplyConfigText(std::string_view text, const std::string& path) {
  return ForEachConfigLine(text, path, [this](std::string_view key, std::string_view value) { return Set(key, value); });
}

absl::Status FlagSet::Parse(const std::vector<std::string>& args) {
  struct Given {
    std::string shown;  // as written: --tls-ca, -e
    std::string key;
    std::string value;
  };
  std::vector<Given> flags;  // applied after the config file, in order
  std::string config_file;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h" || a == "-help") {
      help_ = true;
      return absl::OkStatus();
    }
    const bool is_long = a.size() > 2 && a.compare(0, 2, "--") == 0;
    const bool is_short = !is_long && a.size() >= 2 && a[0] == '-' && a[1] != '-';
    if (!is_long && !is_short) {
      if (syntax_.positional && (a.empty() || a[0] != '-' || a == "-")) {
        positional_.push_back(a);
        continue;
      }
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", a, "' (flags are --key=value; see --help)"));
    }
    std::string_view body = std::string_view(a).substr(is_long ? 2 : 1);
    const size_t eq = body.find('=');
    Given g{std::string(is_long ? "--" : "-") + std::string(body.substr(0, eq)), std::string(body.substr(0, eq)), ""};
    const Flag* f = nullptr;
    if (is_short) {
      for (const Flag& candidate : flags_) {
        if (g.key.size() == 1 && candidate.short_name == g.key[0]) f = &candidate;
      }
      if (f == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown option ", g.shown, " (see --help)"));
      g.key = f->key;
    } else {
      f = Find(g.key);
    }
    const bool is_config = syntax_.config_file && g.key == "config";
    if (eq != std::string_view::npos) {
      g.value = std::string(body.substr(eq + 1));
    } else if (f != nullptr && !f->bare_value.empty()) {
      g.value = f->bare_value;
    } else if (syntax_.separate_values && i + 1 < args.size() && (f != nullptr || is_config)) {
      g.value = args[++i];
    } else if (f != nullptr || is_config) {
      return absl::InvalidArgumentError(absl::StrCat("flag ", g.shown, " needs a value: ", g.shown, "=VALUE"));
    }
    if (is_config) {
      if (g.value.empty()) return absl::InvalidArgumentError("--config needs a file name");
      config_file = g.value;
      continue;
    }
    flags.push_back(std::move(g));  // an unknown key is refused by Set, after the file's errors
  }
  if (!config_file.empty()) {
    std::ifstream in(config_file, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read config file ", config_file));
    std::stringstream ss;
    ss << in.rdbuf();
    BASALT_RETURN_IF_ERROR(ApplyConfigText(ss.str(), config_file));
  }
  for (const Given& g : flags) {
    absl::Status s = Set(g.key, g.value);
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(g.shown, ": ", s.message()));
  }
  return absl::OkStatus();
}

std::vector<SettingInForce> FlagSet::InForce() const {
  std::vector<SettingInForce> out;
  for (const Flag& f : flags_) {
    SettingInForce e;
    e.key = f.key;
    auto it = given_.find(f.key);
    e.given = it != given_.end();
    e.value = e.given ? it->second : f.default_text;
    if (IsSecretSetting(e.key) && !e.value.empty()) e.value = "******";
    out.push_back(std::move(e));
  }
  return out;
}

std::string FlagSet::Help(std::string_view usage) const {
  std::string s(usage);
  if (syntax_.config_file) absl::StrAppend(&s, "  --config=FILE\n      read settings from FILE\n");
  absl::StrAppend(&s, "  --help\n      this text\n");
  for (const Flag& f : flags_) {
    absl::StrAppend(&s, "  ", f.short_name != 0 ? absl::StrCat("-", std::string(1, f.short_name), ", ") : "", "--",
                    f.key, "=VALUE\n      ", f.help, " (default: ", f.default_text.empty() ? "unset" : f.default_text);
    if (!f.bare_value.empty()) absl::StrAppend(&s, "; --", f.key, " alone: ", f.bare_value);
    absl::StrAppend(&s, ")\n");
  }
  return s;
}

}  // namespace basalt::server
