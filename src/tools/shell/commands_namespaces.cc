// The namespace commands (HBase shell's "namespace" group): create_namespace, alter_namespace,
// describe_namespace, drop_namespace, list_namespace, list_namespace_tables. A table "ns:t" is in
// namespace ns; docs/DESIGN.md "Namespaces" says what one is.
#include <regex>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "src/tools/shell/command_args.h"

namespace basalt::shell::internal {
namespace {

absl::StatusOr<std::string> NamespaceArg(const Ctx& c) {
  return Bytes(c, c.cmd.args[0], "a namespace name", /*allow_int=*/false);
}

// The namespace the command's first argument names, as the server describes it.
absl::StatusOr<NamespaceInfo> NamespaceNamed(const Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string name, NamespaceArg(c));
  absl::StatusOr<NamespaceInfo> ns = c.conn->GetAdmin()->DescribeNamespace(name);
  BASALT_RETURN_IF_ERROR(Wrap(c, "", ns.status()));
  return ns;
}

// HBase's rendering of a namespace: {NAME => 'ns', 'key' => 'value', ...}.
std::string Described(const NamespaceInfo& ns) {
  std::string out = absl::StrCat("{NAME => '", ns.name, "'");
  for (const auto& [k, v] : ns.configuration) absl::StrAppend(&out, ", '", k, "' => '", v, "'");
  return out + "}";
}

}  // namespace

// create_namespace 'ns' [, {'key' => 'value', ...}]
absl::StatusOr<Reply> CmdCreateNamespace(Ctx& c) {
  NamespaceInfo ns;
  BASALT_ASSIGN_OR_RETURN(ns.name, NamespaceArg(c));
  if (c.cmd.args.size() > 1) {
    const Value& h = c.cmd.args[1];
    if (!h.is_hash()) return ArgError(c, h, "settings such as {'hbase.namespace.quota.maxtables' => '5'}");
    for (const Value::Entry& e : h.entries) {
      BASALT_ASSIGN_OR_RETURN(std::string key, Bytes(c, e.first, "a setting's name", false));
      BASALT_ASSIGN_OR_RETURN(std::string value, Bytes(c, e.second, "a setting's value"));
      ns.configuration.emplace_back(std::move(key), std::move(value));
    }
  }
  BASALT_RETURN_IF_ERROR(Wrap(c, "", c.conn->GetAdmin()->CreateNamespace(ns)));
  return Done(c, "");
}

// alter_namespace 'ns', {METHOD => 'set', 'key' => 'value', ...}
// alter_namespace 'ns', {METHOD => 'unset', NAME => 'key'}
absl::StatusOr<Reply> CmdAlterNamespace(Ctx& c) {
  const Value& h = c.cmd.args[1];
  const Value* method = h.is_hash() ? h.Find("METHOD") : nullptr;
  if (method == nullptr) return ArgError(c, h, "{METHOD => 'set', 'key' => 'value'} or {METHOD => 'unset', NAME => 'key'}");
  BASALT_ASSIGN_OR_RETURN(std::string how, Enum(c, *method, "METHOD", {"SET", "UNSET"}));
  // (As HBase's shell: the whole descriptor read, changed and written back; an alter made
  // meanwhile by another is overwritten.)
  BASALT_ASSIGN_OR_RETURN(NamespaceInfo ns, NamespaceNamed(c));
  auto& conf = ns.configuration;
  for (const Value::Entry& e : h.entries) {
    // (METHOD and NAME are written bare, as HBase's shell constants; a setting's name quoted.)
    std::string key;
    if (e.first.kind == Value::Kind::kName) {
      key = absl::AsciiStrToUpper(e.first.str);
    } else {
      BASALT_ASSIGN_OR_RETURN(key, Bytes(c, e.first, "a setting's name", false));
    }
    if (key == "METHOD") continue;
    if (how == "UNSET") {
      if (key != "NAME") return ArgError(c, e.first, "NAME => 'key' (the setting to remove)");
      BASALT_ASSIGN_OR_RETURN(std::string gone, Bytes(c, e.second, "a setting's name", false));
      std::erase_if(conf, [&](const auto& kv) { return kv.first == gone; });
      continue;
    }
    BASALT_ASSIGN_OR_RETURN(std::string value, Bytes(c, e.second, "a setting's value"));
    auto it = std::find_if(conf.begin(), conf.end(), [&](const auto& kv) { return kv.first == key; });
    if (it != conf.end()) {
      it->second = std::move(value);
    } else {
      conf.emplace_back(std::move(key), std::move(value));
    }
  }
  BASALT_RETURN_IF_ERROR(Wrap(c, "", c.conn->GetAdmin()->ModifyNamespace(ns)));
  return Done(c, "");
}

// describe_namespace 'ns': its settings, as HBase prints them.
absl::StatusOr<Reply> CmdDescribeNamespace(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(NamespaceInfo ns, NamespaceNamed(c));
  Reply r = Done(c, "");
  r.messages.push_back("DESCRIPTION");
  r.messages.push_back(Described(ns));
  return r;
}

// drop_namespace 'ns': only an empty one.
absl::StatusOr<Reply> CmdDropNamespace(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string name, NamespaceArg(c));
  BASALT_RETURN_IF_ERROR(Wrap(c, "", c.conn->GetAdmin()->DropNamespace(name)));
  return Done(c, "");
}

// list_namespace ['regex']: the namespaces (whose whole name matches the regex).
absl::StatusOr<Reply> CmdListNamespace(Ctx& c) {
  std::optional<std::regex> pattern;
  if (!c.cmd.args.empty()) {
    BASALT_ASSIGN_OR_RETURN(std::string re, Bytes(c, c.cmd.args[0], "a regular expression", false));
    try {
      pattern.emplace(re);
    } catch (const std::regex_error&) {
      return ArgError(c, c.cmd.args[0], "a regular expression");
    }
  }
  absl::StatusOr<std::vector<NamespaceInfo>> all = c.conn->GetAdmin()->ListNamespaces();
  BASALT_RETURN_IF_ERROR(Wrap(c, "", all.status()));
  Reply r = Done(c, "");
  r.messages.push_back("NAMESPACE");
  size_t n = 0;
  for (const NamespaceInfo& ns : *all) {
    if (pattern && !std::regex_match(ns.name, *pattern)) continue;
    r.messages.push_back(ns.name);
    ++n;
  }
  r.messages.push_back(absl::StrCat(n, " row(s)"));
  return r;
}

// list_namespace_tables 'ns': its tables, by their names within it (HBase's).
absl::StatusOr<Reply> CmdListNamespaceTables(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(NamespaceInfo ns, NamespaceNamed(c));
  Reply r = Done(c, "");
  r.messages.push_back("TABLE");
  for (const std::string& t : ns.tables) {
    const size_t colon = t.find(':');
    r.messages.push_back(colon == std::string::npos ? t : t.substr(colon + 1));
  }
  r.messages.push_back(absl::StrCat(ns.tables.size(), " row(s)"));
  return r;
}

}  // namespace basalt::shell::internal
