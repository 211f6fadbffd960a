#include "src/tools/shell/fake_connection.h"

#include <algorithm>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/string_binary.h"

namespace basalt::shell {
namespace {

bool Wanted(const std::vector<ColumnRef>& columns, const KeyValue& kv) {
  if (columns.empty()) return true;
  for (const ColumnRef& c : columns) {
    if (c.family != kv.family) continue;
    if (c.qualifiers.empty()) return true;
    if (std::find(c.qualifiers.begin(), c.qualifiers.end(), kv.qualifier) != c.qualifiers.end()) return true;
  }
  return false;
}

std::vector<KeyValue> Select(const std::vector<KeyValue>& cells, const std::vector<ColumnRef>& columns,
                             int64_t min_ts, int64_t max_ts, int max_versions) {
  std::vector<KeyValue> out;
  int versions = 0;
  const KeyValue* prev = nullptr;
  for (const KeyValue& kv : cells) {
    if (prev == nullptr || prev->family != kv.family || prev->qualifier != kv.qualifier) versions = 0;
    prev = &kv;
    if (!Wanted(columns, kv) || kv.timestamp < min_ts || kv.timestamp >= max_ts) continue;
    if (versions++ >= max_versions) continue;
    out.push_back(kv);
  }
  return out;
}

void Insert(std::vector<KeyValue>* cells, KeyValue kv) {
  auto less = [](const KeyValue& a, const KeyValue& b) {
    if (a.family != b.family) return a.family < b.family;
    if (a.qualifier != b.qualifier) return a.qualifier < b.qualifier;
    return a.timestamp > b.timestamp;
  };
  for (auto it = cells->begin(); it != cells->end(); ++it) {
    if (it->family == kv.family && it->qualifier == kv.qualifier && it->timestamp == kv.timestamp) {
      *it = std::move(kv);
      return;
    }
  }
  cells->insert(std::upper_bound(cells->begin(), cells->end(), kv, less), std::move(kv));
}

class FakeScanner : public ResultScanner {
 public:
  explicit FakeScanner(std::vector<Result> rows) : rows_(std::move(rows)) {}
  absl::StatusOr<bool> Next(Result* row) override {
    if (next_ >= rows_.size()) return false;
    *row = rows_[next_++];
    return true;
  }
  void Close() override {}

 private:
  std::vector<Result> rows_;
  size_t next_ = 0;
};

class FakeTable : public Table {
 public:
  FakeTable(FakeServer* s, std::string name) : s_(s), name_(std::move(name)) {}
  const std::string& name() const override { return name_; }

  absl::StatusOr<FakeServer::TableData*> Data() {
    if (!s_->fail_next.ok()) {
      absl::Status st = s_->fail_next;
      s_->fail_next = absl::OkStatus();
      return st;
    }
    auto it = s_->tables.find(name_);
    if (it == s_->tables.end()) return absl::NotFoundError(absl::StrCat("table ", name_, " does not exist"));
    if (!it->second.info.enabled) return absl::FailedPreconditionError(absl::StrCat("table ", name_, " is disabled"));
    return &it->second;
  }

  absl::StatusOr<Result> Get(const basalt::Get& get) override {
    s_->last_get = get;
    auto d = Data();
    if (!d.ok()) return d.status();
    auto it = (*d)->rows.find(get.row);
    if (it == (*d)->rows.end()) return Result();
    std::vector<KeyValue> cells = Select(it->second, get.columns, get.min_ts, get.max_ts, get.max_versions);
    if (cells.empty()) return Result();
    return Result(get.row, std::move(cells));
  }
  absl::StatusOr<std::vector<Result>> Get(const std::vector<basalt::Get>&) override {
    return absl::UnimplementedError("fake");
  }
  absl::Status Put(const basalt::Put& put) override { return Apply(put); }
  absl::Status Delete(const basalt::Delete& del) override { return Apply(del); }
  absl::Status MutateRow(const RowMutations& m) override { return Apply(m); }
  absl::StatusOr<std::vector<absl::Status>> Batch(const std::vector<RowMutationsBase>&) override {
    return absl::UnimplementedError("fake");
  }
  absl::StatusOr<Result> Increment(const basalt::Increment&) override { return absl::UnimplementedError("fake"); }
  absl::StatusOr<int64_t> IncrementColumnValue(std::string row, std::string family, std::string qualifier,
                                               int64_t amount) override {
    auto d = Data();
    if (!d.ok()) return d.status();
    std::vector<KeyValue>& cells = (*d)->rows[row];
    int64_t v = 0;
    for (const KeyValue& kv : cells) {
      if (kv.family == family && kv.qualifier == qualifier) {
        uint64_t u = 0;
        for (char ch : kv.value) u = (u << 8) | static_cast<unsigned char>(ch);
        v = static_cast<int64_t>(u);
        break;
      }
    }
    v += amount;
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(static_cast<uint64_t>(v) >> (56 - 8 * i));
    Insert(&cells, KeyValue{family, qualifier, s_->clock++, bytes});
    return v;
  }
  absl::StatusOr<Result> Append(const basalt::Append& app) override {
    auto d = Data();
    if (!d.ok()) return d.status();
    std::vector<KeyValue>& cells = (*d)->rows[app.row];
    std::vector<KeyValue> out;
    for (const auto& col : app.columns) {
      std::string v;
      for (const KeyValue& kv : cells) {
        if (kv.family == col.family && kv.qualifier == col.qualifier) {
          v = kv.value;
          break;
        }
      }
      v += col.value;
      KeyValue kv{col.family, col.qualifier, s_->clock++, v};
      Insert(&cells, kv);
      out.push_back(kv);
    }
    return Result(app.row, out);
  }
  absl::StatusOr<bool> CheckAndMutate(const basalt::CheckAndMutate&) override {
    return absl::UnimplementedError("fake");
  }
  absl::StatusOr<std::unique_ptr<ResultScanner>> GetScanner(const basalt::Scan& scan) override {
    s_->last_scan = scan;
    auto d = Data();
    if (!d.ok()) return d.status();
    std::vector<Result> rows;
    for (const auto& [row, cells] : (*d)->rows) {
      if (row < scan.start_row || (!scan.stop_row.empty() && row >= scan.stop_row)) continue;
      std::vector<KeyValue> sel = Select(cells, scan.columns, scan.min_ts, scan.max_ts, scan.max_versions);
      if (sel.empty()) continue;
      rows.emplace_back(row, std::move(sel));
    }
    return std::unique_ptr<ResultScanner>(new FakeScanner(std::move(rows)));
  }
  void GetAsync(basalt::Get get, Callback<absl::StatusOr<Result>> done) override { done(Get(get)); }
  void PutAsync(basalt::Put put, Callback<absl::Status> done) override { done(Put(put)); }
  void DeleteAsync(basalt::Delete del, Callback<absl::Status> done) override { done(Delete(del)); }

 private:
  absl::Status Apply(const RowMutationsBase& m) {
    s_->last_mutation = m;
    auto d = Data();
    if (!d.ok()) return d.status();
    std::vector<KeyValue>& cells = (*d)->rows[m.row];
    if (m.mutations.empty()) cells.clear();
    for (const CellMutation& cm : m.mutations) {
      int64_t ts = cm.timestamp == kLatestTimestamp ? s_->clock++ : cm.timestamp;
      auto erase_if = [&](auto pred) { cells.erase(std::remove_if(cells.begin(), cells.end(), pred), cells.end()); };
      switch (cm.kind) {
        case CellMutation::Kind::kPut:
          Insert(&cells, KeyValue{cm.family, cm.qualifier, ts, cm.value});
          break;
        case CellMutation::Kind::kDelete: {
          auto it = std::find_if(cells.begin(), cells.end(), [&](const KeyValue& kv) {
            return kv.family == cm.family && kv.qualifier == cm.qualifier &&
                   (cm.timestamp == kLatestTimestamp || kv.timestamp == cm.timestamp);
          });
          if (it != cells.end()) cells.erase(it);
          break;
        }
        case CellMutation::Kind::kDeleteColumn:
          erase_if([&](const KeyValue& kv) {
            return kv.family == cm.family && kv.qualifier == cm.qualifier && kv.timestamp <= ts;
          });
          break;
        case CellMutation::Kind::kDeleteFamily:
          erase_if([&](const KeyValue& kv) { return kv.family == cm.family && kv.timestamp <= ts; });
          break;
        case CellMutation::Kind::kDeleteRow:
          erase_if([&](const KeyValue& kv) { return kv.timestamp <= ts; });
          break;
      }
    }
    if (cells.empty()) (*d)->rows.erase(m.row);
    return absl::OkStatus();
  }

  FakeServer* s_;
  std::string name_;
};

class FakeAdmin : public Admin {
 public:
  explicit FakeAdmin(FakeServer* s) : s_(s) {}
  using Admin::CreateTable;
  absl::Status CreateTable(const TableInfo& t, const std::vector<std::string>& split_keys) override {
    s_->admin_calls.push_back("create " + t.name);
    if (s_->tables.count(t.name)) return absl::AlreadyExistsError("table " + t.name + " exists");
    s_->tables[t.name].info = t;
    s_->tables[t.name].info.regions = static_cast<uint32_t>(split_keys.size() + 1);
    s_->tables[t.name].split_keys = split_keys;
    std::sort(s_->tables[t.name].split_keys.begin(), s_->tables[t.name].split_keys.end());
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<RegionStatus>> ListRegions(const std::string& name) override {
    auto* t = Find(name);
    if (t == nullptr) return absl::NotFoundError("table " + name + " does not exist");
    std::vector<RegionStatus> out;
    std::string start;
    for (size_t i = 0; i <= t->split_keys.size(); ++i) {
      RegionStatus r;
      r.start_key = start;
      r.end_key = i < t->split_keys.size() ? t->split_keys[i] : "";
      r.id = 1700000000000;
      r.name = absl::StrCat(name, ",", ToStringBinary(r.start_key), ",", r.id);  // as the server names it
      r.encoded_name = absl::StrCat("e", i);
      r.state = t->info.enabled ? "OPEN" : "CLOSED";
      r.server = "127.0.0.1:16020";
      r.store_file_bytes = 1000 * i;
      r.store_files = i;
      r.read_requests = 10 * i;
      r.write_requests = 20 * i;
      start = r.end_key;
      out.push_back(std::move(r));
    }
    return out;
  }
  absl::StatusOr<TableInfo> DescribeTable(const std::string& name) override {
    auto* t = Find(name);
    if (t == nullptr) return absl::NotFoundError("table " + name + " does not exist");
    return t->info;
  }
  absl::StatusOr<std::vector<TableInfo>> ListTables() override {
    std::vector<TableInfo> out;
    for (const auto& [name, t] : s_->tables) out.push_back(t.info);
    return out;
  }
  absl::Status DisableTable(const std::string& name) override { return SetEnabled("disable", name, false); }
  absl::Status EnableTable(const std::string& name) override { return SetEnabled("enable", name, true); }
  absl::Status DropTable(const std::string& name) override {
    s_->admin_calls.push_back("drop " + name);
    auto* t = Find(name);
    if (t == nullptr) return absl::NotFoundError("table " + name + " does not exist");
    if (t->info.enabled) return absl::FailedPreconditionError("table " + name + " is enabled");
    s_->tables.erase(name);
    return absl::OkStatus();
  }
  absl::Status TruncateTable(const std::string& name, bool preserve_splits) override {
    s_->admin_calls.push_back(absl::StrCat(preserve_splits ? "truncate_preserve " : "truncate ", name));
    auto* t = Find(name);
    if (t == nullptr) return absl::NotFoundError("table " + name + " does not exist");
    if (t->info.enabled) return absl::FailedPreconditionError("table " + name + " is enabled");
    t->rows.clear();
    t->info.enabled = true;
    if (!preserve_splits) t->split_keys.clear();
    t->info.regions = static_cast<uint32_t>(t->split_keys.size() + 1);
    return absl::OkStatus();
  }
  absl::Status ModifyTable(const TableInfo& t) override {
    s_->admin_calls.push_back("modify " + t.name);
    auto* found = Find(t.name);
    if (found == nullptr) return absl::NotFoundError("table " + t.name + " does not exist");
    const bool enabled = found->info.enabled;
    const uint32_t regions = found->info.regions;
    found->info = t;
    found->info.enabled = enabled;
    found->info.regions = regions;
    return absl::OkStatus();
  }
  absl::Status Flush(const std::string& name) override { return Simple("flush", name); }
  absl::Status MajorCompact(const std::string& name) override { return Simple("major_compact", name); }
  absl::Status Split(const std::string& name, const std::string& split_row) override {
    s_->admin_calls.push_back("split " + name + (split_row.empty() ? "" : " at " + split_row));
    auto* t = Find(name.substr(0, name.find(',')));
    if (t == nullptr) return absl::NotFoundError("table " + name + " does not exist");
    if (split_row.empty()) return absl::FailedPreconditionError("the fake has no data to find a split point in");
    if (std::find(t->split_keys.begin(), t->split_keys.end(), split_row) != t->split_keys.end()) {
      return absl::InvalidArgumentError("split row is the start of a region");
    }
    t->split_keys.push_back(split_row);
    std::sort(t->split_keys.begin(), t->split_keys.end());
    return absl::OkStatus();
  }
  absl::Status MergeRegions(const std::string& first, const std::string& second) override {
    s_->admin_calls.push_back("merge_region " + first + " " + second);
    return absl::UnimplementedError("the fake has no regions to merge");
  }
  absl::Status AssignTable(const std::string& name) override {
    s_->admin_calls.push_back("assign " + name);
    auto* t = Find(name);
    if (t == nullptr) return absl::NotFoundError("table " + name + " does not exist");
    if (t->info.open_error.empty()) return absl::FailedPreconditionError("table " + name + " is open");
    t->info.open_error.clear();
    return absl::OkStatus();
  }
  absl::StatusOr<ServerStatus> Status() override {
    ServerStatus st;
    st.version = "0.1.0";
    st.mode = "standalone";
    st.uptime_seconds = 3725;
    st.requests = 42;
    st.block_cache_bytes = 2048;
    st.block_cache_capacity = 256u << 20;
    st.resident_bytes = 50u << 20;
    st.connections_accepted = 7;
    st.connections_refused = 1;
    st.open_descriptors = 40;
    st.descriptor_limit = 1024;
    st.verbs = s_->verbs;
    st.verbs_enabled = s_->verbs_enabled;
    st.verbs_endpoints = s_->verbs_endpoints;
    st.verbs_requests = s_->verbs_requests;
    st.verbs_connects_accepted = s_->verbs_connects_accepted;
    st.verbs_connects_rejected = s_->verbs_connects_rejected;
    st.verbs_malformed_frames = s_->verbs_malformed_frames;
    st.verbs_sessions = s_->verbs_sessions;
    for (const auto& [name, t] : s_->tables) {
      TableStatus ts;
      ts.name = name;
      ts.enabled = t.info.enabled;
      ts.failed_open = !t.info.open_error.empty();
      ts.error = t.info.open_error;
      ts.store_files = 2;
      st.tables.push_back(ts);
    }
    return st;
  }
  absl::Status SetVerbs(bool enabled) override {
    s_->admin_calls.push_back(enabled ? "set_verbs on" : "set_verbs off");
    if (!s_->fail_next.ok()) {
      absl::Status st = s_->fail_next;
      s_->fail_next = absl::OkStatus();
      return st;
    }
    if (s_->verbs.empty() || s_->verbs.starts_with("off")) {
      return absl::FailedPreconditionError("this server serves no verbs transport (" + s_->verbs + ")");
    }
    s_->verbs_enabled = enabled;
    return absl::OkStatus();
  }
  // The fake is a standalone server: it refuses what only a cluster's master does.
  absl::Status Move(const std::string& region, const std::string& server) override {
    s_->admin_calls.push_back("move " + region + (server.empty() ? "" : " " + server));
    return absl::FailedPreconditionError("move is a cluster master's (basalt-master); this server is standalone");
  }
  absl::StatusOr<BalanceResult> Balance() override {
    s_->admin_calls.push_back("balancer");
    return absl::FailedPreconditionError("balancer is a cluster master's (basalt-master); this server is standalone");
  }
  absl::Status Unassign(const std::string& region) override {
    s_->admin_calls.push_back("unassign " + region);
    return absl::FailedPreconditionError("unassign is a cluster master's (basalt-master); this server is standalone");
  }
  absl::Status AssignRegion(const std::string& region) override {
    s_->admin_calls.push_back("assign " + region);
    return absl::FailedPreconditionError("assign is a cluster master's (basalt-master); this server is standalone");
  }
  // Access control: what the shell asked for, kept in a list (the server's rules are tested
  // against a real server, tests/integration/security_test.cc).
  absl::Status Grant(const Permission& p) override {
    s_->admin_calls.push_back("grant " + p.principal + " " + p.actions + " [" + p.ns + "|" + p.table + "|" + p.family +
                              "|" + p.qualifier + "]");
    permissions_.push_back(p);
    return absl::OkStatus();
  }
  absl::Status Revoke(const Permission& p) override {
    s_->admin_calls.push_back("revoke " + p.principal + " [" + p.ns + "|" + p.table + "|" + p.family + "|" +
                              p.qualifier + "]");
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<Permission>> UserPermissions(const Permission& scope) override {
    s_->admin_calls.push_back("user_permission " + scope.table);
    return permissions_;
  }
  absl::StatusOr<Identity> WhoAmI() override { return Identity{}; }
  absl::Status SetQuota(const Quota& q) override {
    s_->admin_calls.push_back("set_quota " + q.user + "|" + q.ns + "|" + q.table + "|" + q.throttle + "|" + q.limit);
    if (q.limit != "NONE") s_->quotas.push_back(q);
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<Quota>> ListQuotas() override { return s_->quotas; }
  absl::StatusOr<SnapshotDescription> Snapshot(const std::string& table, const std::string& name,
                                               int64_t ttl_seconds) override {
    s_->admin_calls.push_back("snapshot " + table + " " + name + " " + std::to_string(ttl_seconds));
    auto* t = Find(table);
    if (t == nullptr) return absl::NotFoundError("table " + table + " does not exist");
    if (s_->snapshots.count(name)) return absl::AlreadyExistsError("snapshot '" + name + "' exists");
    SnapshotDescription d{name, table, s_->clock++, ttl_seconds, static_cast<uint32_t>(t->split_keys.size() + 1),
                          t->rows.size(), 100 * t->rows.size(), 0, ""};
    s_->snapshots[name] = d;
    s_->snapshot_data[name] = *t;
    return d;
  }
  absl::StatusOr<std::vector<SnapshotDescription>> ListSnapshots(const std::string& table) override {
    std::vector<SnapshotDescription> out;
    for (const auto& [name, d] : s_->snapshots) {
      if (table.empty() || d.table == table) out.push_back(d);
    }
    return out;
  }
  absl::Status DeleteSnapshot(const std::string& name) override {
    s_->admin_calls.push_back("delete_snapshot " + name);
    if (s_->snapshots.erase(name) == 0) return absl::NotFoundError("no snapshot '" + name + "'");
    s_->snapshot_data.erase(name);
    return absl::OkStatus();
  }
  absl::Status CloneSnapshot(const std::string& snapshot, const std::string& table, bool restore_acl) override {
    s_->admin_calls.push_back("clone_snapshot " + snapshot + " " + table + (restore_acl ? " restore_acl" : ""));
    auto it = s_->snapshot_data.find(snapshot);
    if (it == s_->snapshot_data.end()) return absl::NotFoundError("no snapshot '" + snapshot + "'");
    if (Find(table) != nullptr) return absl::AlreadyExistsError("table '" + table + "' already exists");
    FakeServer::TableData copy = it->second;
    copy.info.name = table;
    copy.info.enabled = true;
    s_->tables[table] = std::move(copy);
    return absl::OkStatus();
  }
  absl::Status RestoreSnapshot(const std::string& snapshot, bool restore_acl) override {
    s_->admin_calls.push_back("restore_snapshot " + snapshot + (restore_acl ? " restore_acl" : ""));
    auto it = s_->snapshot_data.find(snapshot);
    if (it == s_->snapshot_data.end()) return absl::NotFoundError("no snapshot '" + snapshot + "'");
    const std::string table = it->second.info.name;
    auto* t = Find(table);
    if (t == nullptr) return CloneSnapshot(snapshot, table, restore_acl);
    if (t->info.enabled) return absl::FailedPreconditionError("table " + table + " is enabled: disable it first");
    *t = it->second;
    t->info.enabled = false;
    return absl::OkStatus();
  }
  absl::Status AddPeer(const ReplicationPeer& peer) override {
    std::string cfs;
    for (const auto& [t, fs] : peer.table_cfs) {
      cfs += " " + t + ":";
      for (const std::string& f : fs) cfs += f + ",";
    }
    s_->admin_calls.push_back("add_peer " + peer.id + " " + peer.cluster_key + (peer.enabled ? "" : " disabled") + cfs);
    if (s_->peers.count(peer.id)) return absl::AlreadyExistsError("replication peer " + peer.id + " exists already");
    s_->peers[peer.id].peer = peer;
    s_->peers[peer.id].state = peer.enabled ? "SHIPPING" : "DISABLED";
    return absl::OkStatus();
  }
  absl::Status RemovePeer(const std::string& id) override {
    s_->admin_calls.push_back("remove_peer " + id);
    return s_->peers.erase(id) ? absl::OkStatus() : absl::NotFoundError("replication peer " + id + " does not exist");
  }
  absl::Status EnablePeer(const std::string& id) override { return SetPeer(id, true); }
  absl::Status DisablePeer(const std::string& id) override { return SetPeer(id, false); }
  absl::StatusOr<std::vector<PeerStatus>> ListPeers() override {
    std::vector<PeerStatus> out;
    for (const auto& [id, p] : s_->peers) out.push_back(p);
    return out;
  }
  absl::StatusOr<std::string> GenerateConsistencyToken(const std::string&) override {
    return absl::UnimplementedError("the shell's fake server keeps no log");
  }
  absl::StatusOr<bool> CheckConsistency(const std::string&, const std::string&, std::string*) override {
    return absl::UnimplementedError("the shell's fake server keeps no log");
  }

 private:
  absl::Status SetPeer(const std::string& id, bool enabled) {
    s_->admin_calls.push_back((enabled ? "enable_peer " : "disable_peer ") + id);
    auto it = s_->peers.find(id);
    if (it == s_->peers.end()) return absl::NotFoundError("replication peer " + id + " does not exist");
    it->second.peer.enabled = enabled;
    it->second.state = enabled ? "SHIPPING" : "DISABLED";
    return absl::OkStatus();
  }
  FakeServer::TableData* Find(const std::string& name) {
    auto it = s_->tables.find(name);
    return it == s_->tables.end() ? nullptr : &it->second;
  }
  absl::Status SetEnabled(const char* op, const std::string& name, bool enabled) {
    s_->admin_calls.push_back(std::string(op) + " " + name);
    auto* t = Find(name);
    if (t == nullptr) return absl::NotFoundError("table " + name + " does not exist");
    t->info.enabled = enabled;
    return absl::OkStatus();
  }
  absl::Status Simple(const char* op, const std::string& name) {
    s_->admin_calls.push_back(std::string(op) + " " + name);
    if (Find(name) == nullptr) return absl::NotFoundError("table " + name + " does not exist");
    return absl::OkStatus();
  }

  FakeServer* s_;
  std::vector<Permission> permissions_;
};

class FakeConnection : public Connection {
 public:
  FakeConnection(FakeServer* s, std::string address) : s_(s) { options_.address = std::move(address); }
  std::unique_ptr<Table> GetTable(const std::string& name) override { return std::make_unique<FakeTable>(s_, name); }
  std::unique_ptr<Admin> GetAdmin() override { return std::make_unique<FakeAdmin>(s_); }
  std::unique_ptr<BufferedMutator> GetBufferedMutator(const std::string&, const BufferedMutatorOptions&) override {
    return nullptr;
  }
  const ConnectionOptions& options() const override { return options_; }
  TransportStats GetTransportStats() const override { return TransportStats{}; }
  std::map<std::string, TransportStats> GetServerTransportStats() const override { return {}; }

 private:
  FakeServer* s_;
  ConnectionOptions options_;
};

}  // namespace

std::unique_ptr<Connection> NewFakeConnection(FakeServer* server, std::string address) {
  return std::make_unique<FakeConnection>(server, std::move(address));
}

}  // namespace basalt::shell
