// The shell's table, region, security, quota and status commands (HBase shell syntax).
#include "src/tools/shell/command_args.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "basalt/family_values.h"
#include "common/status.h"
#include "src/tools/shell/escape.h"

namespace basalt::shell::internal {

namespace {

// ---------------------------------------------------------------------------------------------
// DDL

using KeptList = std::vector<std::pair<std::string, std::string>>;

// A kept setting's value as HBase's shell writes it: a string's bytes, a number, true or false.
absl::StatusOr<std::string> KeptValue(const Ctx& c, const Value& v) {
  if (v.kind == Value::Kind::kBool) return std::string(v.boolean ? "true" : "false");
  return Bytes(c, v, "a string, a number or true/false");
}

// Sets `key` in `kept` (replacing its value, or appended).
void SetKept(KeptList* kept, std::string key, std::string value) {
  for (auto& [k, v] : *kept) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  kept->emplace_back(std::move(key), std::move(value));
}

// METADATA => {'key' => 'value', ...} or CONFIGURATION => {...}: settings the server keeps and
// gives back (HBase's), each set as in `kept`.
absl::Status KeptFromHash(const Ctx& c, const Value& h, std::string_view what, KeptList* kept) {
  if (!h.is_hash()) return ArgError(c, h, absl::StrCat("a hash: ", AV(what), " => {'key' => 'value'}"));
  for (const auto& [k, v] : h.entries) {
    BASALT_ASSIGN_OR_RETURN(std::string key, Bytes(c, k, absl::StrCat("a ", AV(what), " key"), false));
    BASALT_ASSIGN_OR_RETURN(std::string value, KeptValue(c, v));
    SetKept(kept, std::move(key), std::move(value));
  }
  return absl::OkStatus();
}

absl::StatusOr<FamilySettings> FamilyFromHash(const Ctx& c, const Value& h, FamilySettings base = {}) {
  BASALT_RETURN_IF_ERROR(CheckKeys(c, h,
                                   {"NAME", "VERSIONS", "MIN_VERSIONS", "TTL", "BLOCKSIZE", "DATA_BLOCK_ENCODING",
                                    "COMPRESSION", "BLOOMFILTER", "CHECKSUM_TYPE", "BYTES_PER_CHECKSUM",
                                    "BLOCKCACHE", "CACHE_ENCODED", "IN_MEMORY", "KEEP_DELETED_CELLS",
                                    "REPLICATION_SCOPE", "NEW_VERSION_BEHAVIOR", "METADATA", "CONFIGURATION"}));
  FamilySettings f = std::move(base);
  const Value* name = h.Find("NAME");
  if (name == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(AV(c.cmd.name), ": a column family hash needs NAME => 'cf' (got ",
                                                   h.ToString(), ")"));
  }
  BASALT_ASSIGN_OR_RETURN(f.name, Bytes(c, *name, "a family name for NAME", false));
  for (const auto& [k, v] : h.entries) {
    const std::string& key = k.str;
    if (key == "NAME") continue;
    if (key == "VERSIONS") {
      BASALT_ASSIGN_OR_RETURN(int64_t n, IntInRange(c, v, "VERSIONS", 1, INT32_MAX));
      f.max_versions = static_cast<int>(n);
    } else if (key == "MIN_VERSIONS") {
      BASALT_ASSIGN_OR_RETURN(int64_t n, IntInRange(c, v, "MIN_VERSIONS", 0, INT32_MAX));
      f.min_versions = static_cast<int>(n);
    } else if (key == "TTL") {
      if (v.is_string() && absl::AsciiStrToUpper(v.str) == "FOREVER") {
        f.ttl_seconds = 0;
      } else {
        BASALT_ASSIGN_OR_RETURN(f.ttl_seconds, IntInRange(c, v, "TTL (seconds)", 0, INT32_MAX));
        if (f.ttl_seconds == INT32_MAX) f.ttl_seconds = 0;  // HBase's FOREVER
      }
    } else if (key == "BLOCKSIZE") {
      BASALT_ASSIGN_OR_RETURN(int64_t n, IntInRange(c, v, "BLOCKSIZE", 1, UINT32_MAX));
      f.block_size = static_cast<uint32_t>(n);
    } else if (key == "DATA_BLOCK_ENCODING") {
      BASALT_ASSIGN_OR_RETURN(f.encoding, Enum(c, v, FamilySetting::kEncoding));
    } else if (key == "COMPRESSION") {
      BASALT_ASSIGN_OR_RETURN(f.compression, Enum(c, v, FamilySetting::kCompression));
    } else if (key == "BLOOMFILTER") {
      BASALT_ASSIGN_OR_RETURN(f.bloom, Enum(c, v, FamilySetting::kBloom));
    } else if (key == "CHECKSUM_TYPE") {
      BASALT_ASSIGN_OR_RETURN(f.checksum, Enum(c, v, FamilySetting::kChecksum));
    } else if (key == "BYTES_PER_CHECKSUM") {
      BASALT_ASSIGN_OR_RETURN(int64_t n, IntInRange(c, v, "BYTES_PER_CHECKSUM", 1, UINT32_MAX));
      f.bytes_per_checksum = static_cast<uint32_t>(n);
    } else if (key == "BLOCKCACHE") {
      BASALT_ASSIGN_OR_RETURN(f.block_cache, Bool(c, v, "true or false for BLOCKCACHE"));
    } else if (key == "CACHE_ENCODED") {
      BASALT_ASSIGN_OR_RETURN(f.cache_encoded, Bool(c, v, "true or false for CACHE_ENCODED"));
    } else if (key == "METADATA") {
      BASALT_RETURN_IF_ERROR(KeptFromHash(c, v, "METADATA", &f.metadata));
    } else if (key == "CONFIGURATION") {
      BASALT_RETURN_IF_ERROR(KeptFromHash(c, v, "CONFIGURATION", &f.configuration));
    } else {
      // HBase settings Basalt has none for (IN_MEMORY, REPLICATION_SCOPE, ...): kept as HBase's
      // shell writes them; the server refuses the ones whose meaning it would not honour.
      BASALT_ASSIGN_OR_RETURN(std::string value, KeptValue(c, v));
      if (key == "KEEP_DELETED_CELLS") value = absl::AsciiStrToUpper(value);
      SetKept(&f.metadata, key, std::move(value));
    }
  }
  return f;
}

// create's table options (HBase's shell): SPLITS => ['g', 'n'], or NUMREGIONS => 16 with
// SPLITALGO => 'HexStringSplit' or 'UniformSplit'; MAX_FILESIZE => bytes; TRANSACTIONAL => true;
// METADATA => {'k' => 'v'} and CONFIGURATION => {...} (kept for the client, not acted on).
absl::Status TableOptionsFromHash(Ctx& c, const Value& h, std::vector<std::string>* split_keys, TableInfo* info) {
  const Value* splits = h.Find("SPLITS");
  const Value* num = h.Find("NUMREGIONS");
  const Value* algo = h.Find("SPLITALGO");
  for (const auto& [k, v] : h.entries) {
    if (k.str == "METADATA") {
      BASALT_RETURN_IF_ERROR(KeptFromHash(c, v, "METADATA", &info->metadata));
    } else if (k.str == "CONFIGURATION") {
      BASALT_RETURN_IF_ERROR(KeptFromHash(c, v, "CONFIGURATION", &info->configuration));
    } else if (k.str != "SPLITS" && k.str != "NUMREGIONS" && k.str != "SPLITALGO" && k.str != "MAX_FILESIZE" &&
               k.str != "TRANSACTIONAL") {
      return absl::InvalidArgumentError(
          absl::StrCat("create: table option ", ToStringBinary(k.str),
                       " is not supported (SPLITS, NUMREGIONS, SPLITALGO, MAX_FILESIZE, TRANSACTIONAL, METADATA and "
                       "CONFIGURATION are); a family is 'cf' or {NAME => 'cf', ...}"));
    }
  }
  if (splits == nullptr && num == nullptr && algo == nullptr && h.Find("MAX_FILESIZE") == nullptr &&
      h.Find("TRANSACTIONAL") == nullptr) {
    return absl::OkStatus();  // METADATA or CONFIGURATION alone
  }
  if (const Value* tx = h.Find("TRANSACTIONAL"); tx != nullptr) {
    // Basalt's: the table is written and read in transactions (docs/DESIGN.md §7).
    BASALT_ASSIGN_OR_RETURN(info->transactional, Bool(c, *tx, "true or false for TRANSACTIONAL"));
    if (splits == nullptr && num == nullptr && algo == nullptr && h.Find("MAX_FILESIZE") == nullptr) {
      return absl::OkStatus();
    }
  }
  if (const Value* max = h.Find("MAX_FILESIZE"); max != nullptr) {
    // HBase's shell takes the number or its string.
    int64_t n = 0;
    if (max->is_int()) {
      n = max->number;
    } else if (!max->is_string() || !absl::SimpleAtoi(max->str, &n)) {
      return ArgError(c, *max, "a size in bytes: MAX_FILESIZE => 10737418240");
    }
    if (n <= 0) return ArgError(c, *max, "a size in bytes above 0");
    info->max_file_size = static_cast<uint64_t>(n);
    if (splits == nullptr && num == nullptr && algo == nullptr) return absl::OkStatus();
  }
  if (splits != nullptr && (num != nullptr || algo != nullptr)) {
    return absl::InvalidArgumentError("create: give SPLITS, or NUMREGIONS with SPLITALGO, not both");
  }
  if (splits != nullptr) {
    if (!splits->is_array()) return ArgError(c, *splits, "an array of split keys: SPLITS => ['g', 'n']");
    for (const Value& k : splits->items) {
      BASALT_ASSIGN_OR_RETURN(std::string key, Bytes(c, k, "a split key", false));
      split_keys->push_back(std::move(key));
    }
    return absl::OkStatus();
  }
  if (num == nullptr || algo == nullptr) {
    return absl::InvalidArgumentError(
        "create: NUMREGIONS and SPLITALGO go together: {NUMREGIONS => 16, SPLITALGO => 'HexStringSplit'}");
  }
  if (!num->is_int()) return ArgError(c, *num, "a number of regions");
  BASALT_ASSIGN_OR_RETURN(std::string name, Bytes(c, *algo, "HexStringSplit or UniformSplit", false));
  if (num->number < 2 || num->number > 1000) {
    return absl::InvalidArgumentError(absl::StrCat("create: NUMREGIONS of ", num->number, " (2 to 1000)"));
  }
  absl::StatusOr<std::vector<std::string>> keys = SplitKeysFor(name, static_cast<int>(num->number));
  if (!keys.ok()) return absl::InvalidArgumentError(absl::StrCat("create: ", keys.status().message()));
  *split_keys = *std::move(keys);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Reply> CmdCreate(Ctx& c) {
  const auto& a = c.cmd.args;
  TableInfo info;
  BASALT_ASSIGN_OR_RETURN(info.name, Bytes(c, a[0], "a table name", false));
  std::vector<std::string> split_keys;
  for (size_t i = 1; i < a.size(); ++i) {
    if (a[i].is_string()) {
      FamilySettings f;
      f.name = a[i].str;
      info.families.push_back(std::move(f));
    } else if (a[i].is_hash()) {
      if (a[i].Find("NAME") == nullptr && !a[i].entries.empty()) {
        BASALT_RETURN_IF_ERROR(TableOptionsFromHash(c, a[i], &split_keys, &info));
        continue;
      }
      BASALT_ASSIGN_OR_RETURN(FamilySettings f, FamilyFromHash(c, a[i]));
      info.families.push_back(std::move(f));
    } else {
      return ArgError(c, a[i], "a column family ('cf' or {NAME => 'cf', ...})");
    }
  }
  if (info.families.empty()) {
    return absl::InvalidArgumentError("create: a table needs at least one column family: create 't1', 'cf'");
  }
  for (size_t i = 0; i < info.families.size(); ++i) {
    if (info.families[i].name.empty() || info.families[i].name.find(':') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("create: invalid family name '",
                                                     ToStringBinary(info.families[i].name),
                                                     "' (it must be non-empty and have no ':')"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (info.families[j].name == info.families[i].name) {
        return absl::InvalidArgumentError(
            absl::StrCat("create: family '", ToStringBinary(info.families[i].name), "' is given twice"));
      }
    }
  }
  BASALT_RETURN_IF_ERROR(Wrap(c, info.name, c.conn->GetAdmin()->CreateTable(info, split_keys)));
  Reply r = Done(c, info.name);
  r.messages.push_back(absl::StrCat("Created table ", ToStringBinary(info.name)));
  return r;
}

// HBase's alter: each argument changes the table as it is now, in order.
//   'cf' or {NAME => 'cf', VERSIONS => 5, ...}   adds the family, or changes the settings given of
//                                               one that exists (the others stay as they are)
//   {NAME => 'cf', METHOD => 'delete'}, 'delete' => 'cf'   drops the family
//   MAX_FILESIZE => bytes                       the table's split size
//   METADATA => {'k' => 'v'}, CONFIGURATION => {...}   the table's kept settings (set or replaced)
absl::StatusOr<Reply> CmdAlter(Ctx& c) {
  const auto& a = c.cmd.args;
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  absl::StatusOr<TableInfo> now = c.conn->GetAdmin()->DescribeTable(table);
  BASALT_RETURN_IF_ERROR(Wrap(c, table, now.status()));
  TableInfo info = *std::move(now);
  auto family = [&info](std::string_view name) {
    return std::find_if(info.families.begin(), info.families.end(), [&](const FamilySettings& f) { return f.name == name; });
  };
  auto drop = [&](const std::string& name) -> absl::Status {
    auto it = family(name);
    if (it == info.families.end()) {
      return absl::NotFoundError(absl::StrCat("alter: table ", ToStringBinary(table), " has no family '",
                                              ToStringBinary(name), "'"));
    }
    info.families.erase(it);
    return absl::OkStatus();
  };
  for (size_t i = 1; i < a.size(); ++i) {
    if (a[i].is_string()) {
      if (family(a[i].str) == info.families.end()) info.families.push_back(FamilySettings{a[i].str});
      continue;
    }
    if (!a[i].is_hash()) return ArgError(c, a[i], "a column family ('cf' or {NAME => 'cf', ...}) or a table option");
    Value h = a[i];
    if (const Value* del = h.Find("delete"); del != nullptr) {
      if (h.entries.size() != 1) return ArgError(c, a[i], "'delete' => 'cf' alone");
      BASALT_ASSIGN_OR_RETURN(std::string name, Bytes(c, *del, "a family name to delete", false));
      BASALT_RETURN_IF_ERROR(drop(name));
      continue;
    }
    const Value* name = h.Find("NAME");
    if (name == nullptr) {
      std::vector<std::string> no_splits;
      for (const auto& [k, v] : h.entries) {
        if (k.str != "MAX_FILESIZE" && k.str != "METADATA" && k.str != "CONFIGURATION") {
          return absl::InvalidArgumentError(absl::StrCat("alter: table option ", ToStringBinary(k.str),
                                                         " cannot change (MAX_FILESIZE, METADATA and CONFIGURATION can)"));
        }
      }
      BASALT_RETURN_IF_ERROR(TableOptionsFromHash(c, h, &no_splits, &info));
      continue;
    }
    BASALT_ASSIGN_OR_RETURN(std::string fname, Bytes(c, *name, "a family name for NAME", false));
    if (const Value* method = h.Find("METHOD"); method != nullptr) {
      if (!method->is_string() || method->str != "delete") return ArgError(c, *method, "METHOD => 'delete'");
      BASALT_RETURN_IF_ERROR(drop(fname));
      continue;
    }
    auto it = family(fname);
    BASALT_ASSIGN_OR_RETURN(FamilySettings f,
                            FamilyFromHash(c, h, it != info.families.end() ? *it : FamilySettings{}));
    if (it != info.families.end()) {
      *it = std::move(f);
    } else {
      info.families.push_back(std::move(f));
    }
  }
  if (info.families.empty()) return absl::InvalidArgumentError("alter: a table keeps at least one column family");
  BASALT_RETURN_IF_ERROR(Wrap(c, table, c.conn->GetAdmin()->ModifyTable(info)));
  Reply r = Done(c, table);
  r.messages.push_back("Updating all regions with the new schema...");
  r.messages.push_back("Done.");
  return r;
}

absl::StatusOr<Reply> CmdDescribe(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  auto info = c.conn->GetAdmin()->DescribeTable(table);
  BASALT_RETURN_IF_ERROR(Wrap(c, table, info.status()));
  Reply r = Done(c, table);
  r.kind = Reply::Kind::kDescribe;
  r.info = *std::move(info);
  if (r.info.name.empty()) r.info.name = table;
  return r;
}

absl::StatusOr<Reply> CmdListRegions(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  auto regions = c.conn->GetAdmin()->ListRegions(table);
  BASALT_RETURN_IF_ERROR(Wrap(c, table, regions.status()));
  Reply r = Done(c, table);
  r.kind = Reply::Kind::kRegions;
  r.regions = *std::move(regions);
  return r;
}

absl::StatusOr<Reply> CmdList(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(NamePattern pattern, NamePattern::Arg(c, 0));
  auto tables = c.conn->GetAdmin()->ListTables();
  BASALT_RETURN_IF_ERROR(Wrap(c, "", tables.status()));
  Reply r = Done(c, "");
  r.kind = Reply::Kind::kList;
  for (const TableInfo& t : *tables) {
    BASALT_ASSIGN_OR_RETURN(bool match, pattern.Matches(c, t.name));
    if (!match) continue;
    r.tables.push_back(t.name);
    if (!t.open_error.empty()) r.failed_open.insert(t.name);
  }
  std::sort(r.tables.begin(), r.tables.end());
  return r;
}

absl::StatusOr<Reply> CmdExists(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  auto info = c.conn->GetAdmin()->DescribeTable(table);
  if (!info.ok() && info.status().code() != absl::StatusCode::kNotFound) {
    return Wrap(c, table, info.status());
  }
  Reply r = Done(c, table);
  r.kind = Reply::Kind::kExists;
  r.flag = info.ok();
  return r;
}

absl::StatusOr<Reply> CmdIsEnabled(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  auto info = c.conn->GetAdmin()->DescribeTable(table);
  BASALT_RETURN_IF_ERROR(Wrap(c, table, info.status()));
  Reply r = Done(c, table);
  r.kind = Reply::Kind::kEnabled;
  r.flag = info->enabled;
  return r;
}

// split 't1' | split 't1', 'row' | split 'REGIONNAME' [, 'row'] | split 'ENCODED' [, 'row'].
absl::StatusOr<Reply> CmdSplit(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string name, Bytes(c, c.cmd.args[0], "a table or region name"));
  std::string row;
  if (c.cmd.args.size() > 1) {
    BASALT_ASSIGN_OR_RETURN(row, Bytes(c, c.cmd.args[1], "a split row"));
  }
  const std::string table = name.substr(0, name.find(','));
  BASALT_RETURN_IF_ERROR(Wrap(c, table, c.conn->GetAdmin()->Split(name, row)));
  return Done(c, table);
}

// merge_region 'ENCODED_A', 'ENCODED_B' (or full region names).
absl::StatusOr<Reply> CmdMergeRegion(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string a, Bytes(c, c.cmd.args[0], "a region name"));
  BASALT_ASSIGN_OR_RETURN(std::string b, Bytes(c, c.cmd.args[1], "a region name"));
  BASALT_RETURN_IF_ERROR(Wrap(c, a.substr(0, a.find(',')), c.conn->GetAdmin()->MergeRegions(a, b)));
  return Done(c, a);
}

// move 'ENCODED_REGIONNAME' [, 'SERVER_NAME'], as HBase's (a cluster's master only).
absl::StatusOr<Reply> CmdMove(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string region, Bytes(c, c.cmd.args[0], "a region name"));
  std::string server;
  if (c.cmd.args.size() > 1) {
    BASALT_ASSIGN_OR_RETURN(server, Bytes(c, c.cmd.args[1], "a server name"));
  }
  BASALT_RETURN_IF_ERROR(Wrap(c, "", c.conn->GetAdmin()->Move(region, server)));
  return Done(c, "");
}

// unassign 'REGION' [, force]: HBase 2's (force, accepted as HBase's, changes nothing: the close
// always flushes).
absl::StatusOr<Reply> CmdUnassign(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string region, Bytes(c, c.cmd.args[0], "a region name"));
  if (c.cmd.args.size() > 1) BASALT_RETURN_IF_ERROR(Bool(c, c.cmd.args[1], "true or false for force").status());
  BASALT_RETURN_IF_ERROR(Wrap(c, "", c.conn->GetAdmin()->Unassign(region)));
  return Done(c, "");
}

// assign 'REGION' (HBase's) | assign 't1' (Basalt's: every FAILED_OPEN region of a table).
absl::StatusOr<Reply> CmdAssign(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string name, Bytes(c, c.cmd.args[0], "a region or table name"));
  std::unique_ptr<Admin> admin = c.conn->GetAdmin();
  if (admin->DescribeTable(name).ok()) {
    BASALT_RETURN_IF_ERROR(Wrap(c, name, admin->AssignTable(name)));
    return Done(c, name);
  }
  BASALT_RETURN_IF_ERROR(Wrap(c, "", admin->AssignRegion(name)));
  return Done(c, "");
}

// balancer: runs the balancer once; prints true when it moved regions (HBase prints whether it ran).
absl::StatusOr<Reply> CmdBalancer(Ctx& c) {
  absl::StatusOr<BalanceResult> done = c.conn->GetAdmin()->Balance();
  BASALT_RETURN_IF_ERROR(Wrap(c, "", done.status()));
  Reply r = Done(c, "");
  r.messages.push_back(done->moves > 0 ? "true" : "false");
  r.messages.push_back(done->moves > 0 ? absl::StrCat(done->moves, " region(s) moved", done->reason.empty() ? "" : "; ",
                                                      done->reason)
                                       : done->reason);
  return r;
}

namespace {

// The scope arguments of grant, revoke and user_permission from args[first]: none (global),
// '@ns', or 'table' [, 'family' [, 'qualifier']], as HBase's shell takes them.
absl::Status ScopeArgs(const Ctx& c, size_t first, Permission* p) {
  if (c.cmd.args.size() <= first) return absl::OkStatus();
  BASALT_ASSIGN_OR_RETURN(std::string name, Bytes(c, c.cmd.args[first], "'@namespace' or a table name", false));
  if (!name.empty() && name[0] == '@') {
    if (c.cmd.args.size() > first + 1) {
      return ArgError(c, c.cmd.args[first + 1], "nothing after a namespace", "(a family needs a table)");
    }
    p->ns = name.substr(1);
    return absl::OkStatus();
  }
  p->table = name;
  if (c.cmd.args.size() > first + 1) {
    BASALT_ASSIGN_OR_RETURN(p->family, Bytes(c, c.cmd.args[first + 1], "a column family", false));
  }
  if (c.cmd.args.size() > first + 2) {
    BASALT_ASSIGN_OR_RETURN(p->qualifier, Bytes(c, c.cmd.args[first + 2], "a column qualifier"));
  }
  return absl::OkStatus();
}

// HBase's way of printing a scope in user_permission: "namespace,table,family,qualifier".
std::string ScopeText(const Permission& p) {
  const std::string ns = !p.ns.empty() ? p.ns : p.table.empty() ? "" : (p.table.find(':') != std::string::npos
                                                                           ? p.table.substr(0, p.table.find(':'))
                                                                           : "default");
  return absl::StrCat(ns, ",", p.table.empty() ? (p.ns.empty() ? "basalt:acl" : "") : ToStringBinary(p.table), ",",
                      p.family, ",", ToStringBinary(p.qualifier));
}

// HBase's names of the actions: READ,WRITE,EXEC,CREATE,ADMIN.
std::string ActionNames(std::string_view letters) {
  std::vector<std::string> names;
  for (char ch : letters) {
    switch (ch) {
      case 'R': names.push_back("READ"); break;
      case 'W': names.push_back("WRITE"); break;
      case 'X': names.push_back("EXEC"); break;
      case 'C': names.push_back("CREATE"); break;
      case 'A': names.push_back("ADMIN"); break;
      default: names.push_back(std::string(1, ch)); break;
    }
  }
  return absl::StrJoin(names, ",");
}

}  // namespace

// grant 'user', 'RWXCA' [, '@ns' | 'table' [, 'family' [, 'qualifier']]]
absl::StatusOr<Reply> CmdGrant(Ctx& c) {
  Permission p;
  BASALT_ASSIGN_OR_RETURN(p.principal, Bytes(c, c.cmd.args[0], "a user or @group", false));
  BASALT_ASSIGN_OR_RETURN(p.actions, Bytes(c, c.cmd.args[1], "permissions (letters of RWXCA)", false));
  BASALT_RETURN_IF_ERROR(ScopeArgs(c, 2, &p));
  BASALT_RETURN_IF_ERROR(Wrap(c, p.table, c.conn->GetAdmin()->Grant(p)));
  return Done(c, p.table);
}

// revoke 'user' [, '@ns' | 'table' [, 'family' [, 'qualifier']]]
absl::StatusOr<Reply> CmdRevoke(Ctx& c) {
  Permission p;
  BASALT_ASSIGN_OR_RETURN(p.principal, Bytes(c, c.cmd.args[0], "a user or @group", false));
  BASALT_RETURN_IF_ERROR(ScopeArgs(c, 1, &p));
  BASALT_RETURN_IF_ERROR(Wrap(c, p.table, c.conn->GetAdmin()->Revoke(p)));
  return Done(c, p.table);
}

// user_permission ['@ns' | 'table'], printed as HBase's shell prints it.
absl::StatusOr<Reply> CmdUserPermission(Ctx& c) {
  Permission scope;
  BASALT_RETURN_IF_ERROR(ScopeArgs(c, 0, &scope));
  absl::StatusOr<std::vector<Permission>> perms = c.conn->GetAdmin()->UserPermissions(scope);
  BASALT_RETURN_IF_ERROR(Wrap(c, scope.table, perms.status()));
  Reply r = Done(c, scope.table);
  r.messages.push_back(absl::StrCat(absl::StrFormat("%-24s", "User"), " Namespace,Table,Family,Qualifier:Permission"));
  for (const Permission& p : *perms) {
    r.messages.push_back(absl::StrCat(" ", absl::StrFormat("%-23s", p.principal), " ", ScopeText(p),
                                      ": [Permission: actions=", ActionNames(p.actions), "]"));
  }
  r.messages.push_back(absl::StrCat(perms->size(), " row(s)"));
  return r;
}

namespace {

// A word HBase's shell writes as a constant (THROTTLE, READ, NONE) or a string, upper-cased.
absl::StatusOr<std::string> Word(const Ctx& c, const Value& v, std::string_view key) {
  if (v.kind == Value::Kind::kName || v.is_string()) return absl::AsciiStrToUpper(v.str);
  return ArgError(c, v, absl::StrCat("a word for ", AV(key)));
}

}  // namespace

// set_quota TYPE => THROTTLE, USER => 'u' [, TABLE => 't' | NAMESPACE => 'ns'] [, THROTTLE_TYPE =>
// READ | WRITE], LIMIT => '10req/sec' | NONE; or TABLE or NAMESPACE alone in place of USER.
absl::StatusOr<Reply> CmdSetQuota(Ctx& c) {
  const Value& h = c.cmd.args[0];
  if (!h.is_hash()) return ArgError(c, h, "TYPE => THROTTLE, USER => 'u1', LIMIT => '10req/sec'");
  Quota q;
  bool typed = false, limited = false;
  for (const Value::Entry& e : h.entries) {
    const std::string key = absl::AsciiStrToUpper(e.first.str);
    if (key == "TYPE") {
      BASALT_ASSIGN_OR_RETURN(std::string type, Word(c, e.second, key));
      if (type != "THROTTLE") {
        return absl::InvalidArgumentError(absl::StrCat(
            "set_quota: TYPE => ", type, " is not supported: Basalt's quotas are THROTTLE (request and byte rates)"));
      }
      typed = true;
    } else if (key == "USER") {
      BASALT_ASSIGN_OR_RETURN(q.user, Bytes(c, e.second, "a user name for USER", false));
    } else if (key == "TABLE") {
      BASALT_ASSIGN_OR_RETURN(q.table, Bytes(c, e.second, "a table name for TABLE", false));
    } else if (key == "NAMESPACE") {
      BASALT_ASSIGN_OR_RETURN(q.ns, Bytes(c, e.second, "a namespace for NAMESPACE", false));
    } else if (key == "THROTTLE_TYPE") {
      BASALT_ASSIGN_OR_RETURN(q.throttle, Word(c, e.second, key));
    } else if (key == "LIMIT") {
      BASALT_ASSIGN_OR_RETURN(q.limit, Word(c, e.second, key));
      if (q.limit != "NONE") q.limit = e.second.str;  // as written: '10M/sec'
      limited = true;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("set_quota: unknown key ", e.first.str, " (TYPE, USER, TABLE, NAMESPACE, THROTTLE_TYPE, LIMIT)"));
    }
  }
  if (!typed || !limited) {
    return absl::InvalidArgumentError("set_quota: needs TYPE => THROTTLE and LIMIT => '10req/sec' (or NONE)");
  }
  BASALT_RETURN_IF_ERROR(Wrap(c, q.table, c.conn->GetAdmin()->SetQuota(q)));
  return Done(c, q.table);
}

// list_quotas: every quota, printed as HBase's list_quotas prints it.
absl::StatusOr<Reply> CmdListQuotas(Ctx& c) {
  absl::StatusOr<std::vector<Quota>> quotas = c.conn->GetAdmin()->ListQuotas();
  BASALT_RETURN_IF_ERROR(Wrap(c, "", quotas.status()));
  Reply r = Done(c, "");
  r.messages.push_back(absl::StrCat(absl::StrFormat("%-40s", "OWNER"), " QUOTAS"));
  for (const Quota& q : *quotas) {
    std::vector<std::string> owner;
    if (!q.user.empty()) owner.push_back(absl::StrCat("USER => ", q.user));
    if (!q.ns.empty()) owner.push_back(absl::StrCat("NAMESPACE => ", q.ns));
    if (!q.table.empty()) owner.push_back(absl::StrCat("TABLE => ", ToStringBinary(q.table)));
    r.messages.push_back(absl::StrCat(" ", absl::StrFormat("%-39s", absl::StrJoin(owner, ", ")),
                                      " TYPE => THROTTLE, THROTTLE_TYPE => ", q.throttle, ", LIMIT => ", q.limit,
                                      ", SCOPE => MACHINE"));
  }
  r.messages.push_back(absl::StrCat(quotas->size(), " row(s)"));
  return r;
}

// whoami: the user the server takes this connection for, and their groups (HBase's whoami).
absl::StatusOr<Reply> CmdWhoAmI(Ctx& c) {
  absl::StatusOr<Identity> id = c.conn->GetAdmin()->WhoAmI();
  BASALT_RETURN_IF_ERROR(Wrap(c, "", id.status()));
  Reply r = Done(c, "");
  if (!id->auth_enabled && id->user.empty()) {
    r.messages.push_back("(the server does not authenticate: auth=false)");
    return r;
  }
  r.messages.push_back(absl::StrCat(id->user, " (", id->authentication, id->superuser ? ", superuser" : "", ")"));
  r.messages.push_back(absl::StrCat("    groups: ", absl::StrJoin(id->groups, " ")));
  return r;
}

absl::StatusOr<Reply> CmdStatus(Ctx& c) {
  bool detailed = false;
  if (!c.cmd.args.empty()) {
    BASALT_ASSIGN_OR_RETURN(std::string kind, Enum(c, c.cmd.args[0], "the status format",
                                                   {"SIMPLE", "SUMMARY", "DETAILED", "REPLICATION"}));
    if (kind == "REPLICATION") return CmdReplicationStatus(c);
    detailed = kind == "DETAILED";
  }
  auto s = c.conn->GetAdmin()->Status();
  BASALT_RETURN_IF_ERROR(Wrap(c, "", s.status()));
  Reply r = Done(c, "");
  r.kind = Reply::Kind::kStatus;
  r.status = *std::move(s);
  r.detailed = detailed;
  return r;
}

// verbs_disable / verbs_enable: the server's verbs transport off for NIC maintenance (its
// endpoints are disconnected and clients send Get/Put over gRPC), then on again.
absl::StatusOr<Reply> CmdVerbsSwitch(Ctx& c) {
  const bool enable = c.cmd.name == "verbs_enable";
  BASALT_RETURN_IF_ERROR(Wrap(c, "", c.conn->GetAdmin()->SetVerbs(enable)));
  Reply r = Done(c, "");
  r.messages.push_back(enable ? "Verbs transport enabled: clients go back to it at their next verbs retry"
                              : "Verbs transport disabled: endpoints closed, clients send Get/Put over gRPC");
  return r;
}

}  // namespace basalt::shell::internal
