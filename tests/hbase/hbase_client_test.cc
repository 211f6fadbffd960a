// The unmodified HBase 2.6 client (tests/hbase/java/ClientSuite.java, run on Debian's Java)
// against a real basalt-server's HBase port: every Admin and Table call of the suite checked
// against what it must read, then the table it leaves read again with Basalt's own C++ client —
// both views must agree cell for cell.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "tests/integration/integration_util.h"
#include "common/status.h"
#include "common/test_services.h"
#include "common/zookeeper.h"
#include "proto/hbase/hbase_client.pb.h"
#include "proto/hbase/hbase_master.pb.h"
#include "src/front/hbase/cell_block.h"
#include "src/front/hbase/zk_records.h"
#include "src/front/hbase/region_names.h"
#include "tests/util/child_process.h"
#include "src/front/hbase/wire_client.h"
#include "tests/hbase/java_programs.h"

namespace basalt::testing {
namespace {

class HBaseClientTest : public ServerTest {
 protected:
  // Starts the server with its HBase port (and `extra` settings); returns "127.0.0.1:PORT".
  std::string StartWithHBasePort(std::vector<std::string> extra = {}) {
    const std::string port_file = dir_.path() + "/hbase.port";
    extra.insert(extra.begin(), {"--hbase_listen=127.0.0.1:0", "--hbase_port_file=" + port_file});
    StartServer(extra);
    std::string port;
    for (int i = 0; i < 200 && port.empty(); ++i) {
      port = ReadFile(port_file);
      if (port.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    while (!port.empty() && port.back() == '\n') port.pop_back();
    return "127.0.0.1:" + port;
  }

  // A server under auth=true whose HBase port takes TLS with client certificates: certificates
  // for admin (a superuser) and each of `users` (tests/security/make_certs.sh, which also makes
  // "rogue" and "expired" ones), each with HBase's PEM key store (the key, then the certificate),
  // and Basalt's own client as admin; `extra` flags too. Returns the port's address; the
  // certificates are in certs_.
  std::string StartSecure(const std::vector<std::string>& users, const std::vector<std::string>& extra = {}) {
    certs_ = dir_.path() + "/certs";
    std::string make = absl::StrCat(HBASE_TESTS_DIR, "/../security/make_certs.sh ", certs_, " admin");
    for (const std::string& u : users) absl::StrAppend(&make, " ", u);
    EXPECT_EQ(std::system(make.c_str()), 0) << make;
    std::vector<std::string> all = users;
    all.insert(all.end(), {"admin", "rogue", "expired"});
    for (const std::string& user : all) {
      std::ofstream(absl::StrCat(certs_, "/", user, "-keystore.pem"))
          << ReadFile(absl::StrCat(certs_, "/", user, ".key")) << ReadFile(absl::StrCat(certs_, "/", user, ".pem"));
    }
    security_.tls_ca = certs_ + "/ca.pem";
    security_.tls_cert = certs_ + "/admin.pem";
    security_.tls_key = certs_ + "/admin.key";
    std::vector<std::string> flags = {"--tls_cert=" + certs_ + "/server.pem", "--tls_key=" + certs_ + "/server.key",
                                      "--tls_ca=" + certs_ + "/ca.pem", "--auth=true", "--superusers=admin"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    return StartWithHBasePort(flags);
  }
  // HBase's client settings for TLS as `user` (HADOOP_USER_NAME) with `keystore`'s certificate
  // ("": none), as KEY=VALUE.
  std::vector<std::string> ClientTls(const std::string& user, const std::string& keystore) const {
    std::vector<std::string> settings = {"hbase.client.netty.tls.enabled=true", "hbase.rpc.tls.truststore.type=PEM",
                                         "hbase.rpc.tls.truststore.location=" + certs_ + "/ca.pem",
                                         "HADOOP_USER_NAME=" + user};
    if (!keystore.empty()) {
      settings.push_back("hbase.rpc.tls.keystore.type=PEM");
      settings.push_back("hbase.rpc.tls.keystore.location=" + certs_ + "/" + keystore + "-keystore.pem");
    }
    return settings;
  }

  // ClientSuite.java through `registry` (the HBase port's address, or zk:QUORUM@PARENT), then
  // the table it left read with Basalt's own client, then a table quota met by ReadProbe.java;
  // the Java client with `settings` (java_programs.h JavaCommand).
  void RunClientSuite(const std::string& registry, const std::string& address,
                      const std::vector<std::string>& settings = {});

  std::string certs_;  // StartSecure's certificates
};

TEST_F(HBaseClientTest, TheJavaClientsCallsAnswerAsHBaseAndBothViewsAgree) {
  const std::string address = StartWithHBasePort();
  ASSERT_NE(address, "127.0.0.1:");
  RunClientSuite(address, address);
}

// HBase 2.6's native TLS: under tls_cert the HBase port speaks TLS from the first byte, with the
// gRPC port's certificate and CA, and the unmodified client connects with its own settings
// (hbase.client.netty.tls.enabled, PEM trust and key stores) and runs the whole suite. A client
// in plain text, and one that trusts another CA, are refused.
TEST_F(HBaseClientTest, UnderTlsTheJavaClientConnectsWithItsOwnTlsSettings) {
  const std::string certs = dir_.path() + "/certs";
  const std::string make = absl::StrCat(HBASE_TESTS_DIR, "/../security/make_certs.sh ", certs, " alice");
  ASSERT_EQ(std::system(make.c_str()), 0) << make;
  // HBase's PEM key store is one file: the key, then the certificate.
  std::ofstream(certs + "/alice-keystore.pem") << ReadFile(certs + "/alice.key") << ReadFile(certs + "/alice.pem");
  security_.tls_ca = certs + "/ca.pem";
  security_.tls_cert = certs + "/alice.pem";
  security_.tls_key = certs + "/alice.key";
  const std::string address = StartWithHBasePort(
      {"--tls_cert=" + certs + "/server.pem", "--tls_key=" + certs + "/server.key", "--tls_ca=" + certs + "/ca.pem"});
  ASSERT_NE(address, "127.0.0.1:");
  auto tls = [&](const std::string& ca) {
    return std::vector<std::string>{"hbase.client.netty.tls.enabled=true",
                                    "hbase.rpc.tls.truststore.type=PEM",
                                    "hbase.rpc.tls.truststore.location=" + ca,
                                    "hbase.rpc.tls.keystore.type=PEM",
                                    "hbase.rpc.tls.keystore.location=" + certs + "/alice-keystore.pem"};
  };
  RunClientSuite(address, address, tls(certs + "/ca.pem"));

  // Plain text to the TLS port: the server takes its preamble for a broken handshake and closes.
  absl::StatusOr<ChildProcess::Finished> plain = RunJava("ReadProbe", {address, "hb_keep", "1"});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_NE(plain->output.find("REFUSED at 0:"), std::string::npos) << plain->output;
  // A client that trusts another CA refuses the server's certificate.
  absl::StatusOr<ChildProcess::Finished> rogue =
      RunJava("ReadProbe", {address, "hb_keep", "1"}, "classpath.txt", tls(certs + "/rogue-ca.pem"));
  ASSERT_TRUE(rogue.ok()) << rogue.status();
  EXPECT_NE(rogue->output.find("REFUSED at 0:"), std::string::npos) << rogue->output;
  EXPECT_NE(rogue->output.find("SSLHandshakeException"), std::string::npos) << rogue->output;
}

// auth=true on the HBase port: each connection is the user its client certificate names (and its
// header must say the same user), and each call passes the grants, as on the gRPC port. alice
// holds R on the table: her Get and Scan are served, she lists and describes only that table, and
// her Put, flush, snapshot and a table creation are refused with HBase's AccessDeniedException;
// carol holds C and A on it: she flushes and snapshots it and lists only her own snapshot, but
// reads nothing and creates no table; admin (a superuser) does all; bob, with no grant, reads
// and sees nothing; alice's certificate under another user's name, an "admin" certificate from
// another CA, an expired one, and a client without a certificate, are refused at the connection.
// A snapshot's owner restores it with A on its table and deletes it; no one else does without
// global A. A user holds at most max_scanners_per_user (here 2) scanners at once.
TEST_F(HBaseClientTest, UnderAuthTheJavaClientIsItsCertificatesUserAndEachCallPassesTheGrants) {
  const std::string address = StartSecure({"alice", "bob", "carol"}, {"--max_scanners_per_user=2"});
  ASSERT_NE(address, "127.0.0.1:");
  CreateTable("sec");
  CreateTable("other");
  ASSERT_TRUE(conn_->GetTable("sec")->Put(Put("r1").Add("cf", "q", "one")).ok());
  ASSERT_TRUE(conn_->GetAdmin()->Grant(Permission{"alice", "R", "", "sec", "", ""}).ok());
  ASSERT_TRUE(conn_->GetAdmin()->Grant(Permission{"carol", "CA", "", "sec", "", ""}).ok());

  // The Java client as `user` (HADOOP_USER_NAME), with `keystore`'s certificate ("": none).
  auto probe = [&](const std::string& user, const std::string& keystore, const std::string& new_table,
                   const std::string& table = "sec", const std::string& snapshot_to_delete = "") {
    std::vector<std::string> args = {address, table, new_table};
    if (!snapshot_to_delete.empty()) args.push_back(snapshot_to_delete);
    absl::StatusOr<ChildProcess::Finished> run = RunJava("AuthProbe", args, "classpath.txt", ClientTls(user, keystore));
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? run->output : std::string();
  };
  const std::string kDenied = "REFUSED org.apache.hadoop.hbase.security.AccessDeniedException";
  const std::string alice = probe("alice", "alice", "alice_t");
  EXPECT_NE(alice.find("GET OK one"), std::string::npos) << alice;
  EXPECT_NE(alice.find("SCAN OK 1"), std::string::npos) << alice;
  EXPECT_NE(alice.find("PUT " + kDenied), std::string::npos) << alice;
  EXPECT_NE(alice.find("user 'alice' may not"), std::string::npos) << alice;
  EXPECT_NE(alice.find("LIST OK sec\n"), std::string::npos) << alice;
  EXPECT_NE(alice.find("DESCRIBE OK 1\n"), std::string::npos) << alice;
  EXPECT_NE(alice.find("FLUSH " + kDenied), std::string::npos) << alice;
  // (A refused FlushTable is a DoNotRetryIOException, which makes the 2.6 client try the older
  // flush-table-proc procedure: its refusal is the one the client reports.)
  EXPECT_NE(alice.find("user 'alice' may not MasterService.ExecProcedure: it needs C or A on table sec"),
            std::string::npos)
      << alice;
  EXPECT_NE(alice.find("SNAPSHOT " + kDenied), std::string::npos) << alice;
  EXPECT_NE(alice.find("SNAPSHOTS OK\n"), std::string::npos) << alice;
  EXPECT_NE(alice.find("CREATE " + kDenied), std::string::npos) << alice;
  EXPECT_NE(alice.find("user 'alice' may not MasterService.CreateTable: it needs C or A on namespace default"),
            std::string::npos)
      << alice;
  // Her third scanner at once is one past her cap; the two she held are closed after.
  EXPECT_NE(alice.find("SCANNERS REFUSED"), std::string::npos) << alice;
  EXPECT_NE(alice.find("user 'alice' has 2 scanners open, its cap (max_scanners_per_user)"), std::string::npos)
      << alice;
  // (Refused at the restore's disable, which needs C or A: the restore's own rule, A on the
  // table for the snapshot's owner, is Security.ASnapshotNeedsAOnItsTableAndItsDeletionGlobalA's.)
  EXPECT_NE(alice.find("RESTORE " + kDenied), std::string::npos) << alice;

  const std::string admin = probe("admin", "admin", "admin_t");
  EXPECT_NE(admin.find("GET OK one"), std::string::npos) << admin;
  EXPECT_NE(admin.find("PUT OK"), std::string::npos) << admin;
  EXPECT_NE(admin.find("LIST OK other,sec\n"), std::string::npos) << admin;
  EXPECT_NE(admin.find("FLUSH OK"), std::string::npos) << admin;
  EXPECT_NE(admin.find("SNAPSHOT OK"), std::string::npos) << admin;
  EXPECT_NE(admin.find("SNAPSHOTS OK admin_t_snap/admin\n"), std::string::npos) << admin;
  EXPECT_NE(admin.find("CREATE OK"), std::string::npos) << admin;
  EXPECT_NE(admin.find("SCANNERS REFUSED"), std::string::npos) << admin;  // (a superuser's cap too)
  EXPECT_NE(admin.find("RESTORE OK"), std::string::npos) << admin;
  EXPECT_TRUE(conn_->GetAdmin()->DescribeTable("admin_t").ok());
  EXPECT_EQ(conn_->GetAdmin()->DescribeTable("alice_t").status().code(), absl::StatusCode::kNotFound);

  const std::string carol = probe("carol", "carol", "carol_t", "sec", "carol_t_snap");
  EXPECT_NE(carol.find("GET " + kDenied), std::string::npos) << carol;
  EXPECT_NE(carol.find("LIST OK sec\n"), std::string::npos) << carol;
  EXPECT_NE(carol.find("DESCRIBE OK 1\n"), std::string::npos) << carol;
  EXPECT_NE(carol.find("FLUSH OK"), std::string::npos) << carol;
  EXPECT_NE(carol.find("SNAPSHOT OK"), std::string::npos) << carol;
  EXPECT_NE(carol.find("SNAPSHOTS OK carol_t_snap/carol\n"), std::string::npos) << carol;  // not admin's
  EXPECT_NE(carol.find("CREATE " + kDenied), std::string::npos) << carol;
  // Her own snapshot: restored (she holds A on its table) and deleted.
  EXPECT_NE(carol.find("RESTORE OK"), std::string::npos) << carol;
  EXPECT_NE(carol.find("DELETE OK"), std::string::npos) << carol;

  const std::string bob = probe("bob", "bob", "bob_t", "sec", "admin_t_snap");
  EXPECT_NE(bob.find("GET " + kDenied), std::string::npos) << bob;
  EXPECT_NE(bob.find("user 'bob' may not Scan"), std::string::npos) << bob;
  EXPECT_NE(bob.find("LIST OK\n"), std::string::npos) << bob;
  EXPECT_NE(bob.find("DESCRIBE " + kDenied), std::string::npos) << bob;
  EXPECT_NE(bob.find("SNAPSHOTS OK\n"), std::string::npos) << bob;
  EXPECT_NE(bob.find("RESTORE " + kDenied), std::string::npos) << bob;  // (at its disable)
  // admin's snapshot is not his to delete.
  EXPECT_NE(bob.find("DELETE " + kDenied), std::string::npos) << bob;
  absl::StatusOr<std::vector<SnapshotDescription>> kept = conn_->GetAdmin()->ListSnapshots();
  ASSERT_TRUE(kept.ok()) << kept.status();
  std::vector<std::string> names;
  for (const SnapshotDescription& d : *kept) names.push_back(d.name);
  EXPECT_EQ(names, std::vector<std::string>({"admin_t_snap"}));

  // alice's certificate, calling as admin: refused before any call (the server ends the
  // connection; the client's exceptions say only that it could not reach the registry).
  const std::string posing = probe("admin", "alice", "posing_t");
  EXPECT_EQ(posing.find(" OK"), std::string::npos) << posing;
  EXPECT_NE(posing.find("GET REFUSED"), std::string::npos) << posing;
  // A certificate that says admin, signed by another CA: the handshake refuses it.
  const std::string forged = probe("admin", "rogue", "forged_t");
  EXPECT_EQ(forged.find(" OK"), std::string::npos) << forged;
  EXPECT_NE(forged.find("GET REFUSED"), std::string::npos) << forged;
  EXPECT_EQ(conn_->GetAdmin()->DescribeTable("forged_t").status().code(), absl::StatusCode::kNotFound);
  // A certificate that says admin, from the right CA, but expired.
  const std::string expired = probe("admin", "expired", "expired_t");
  EXPECT_EQ(expired.find(" OK"), std::string::npos) << expired;
  EXPECT_NE(expired.find("GET REFUSED"), std::string::npos) << expired;
  EXPECT_EQ(conn_->GetAdmin()->DescribeTable("expired_t").status().code(), absl::StatusCode::kNotFound);
  // No certificate at all.
  const std::string none = probe("alice", "", "none_t");
  EXPECT_EQ(none.find(" OK"), std::string::npos) << none;
  EXPECT_NE(none.find("GET REFUSED"), std::string::npos) << none;
  EXPECT_EQ(conn_->GetAdmin()->DescribeTable("posing_t").status().code(), absl::StatusCode::kNotFound);

  // A refused call spends none of a table's quota: bob's refused Get and Scan of `quota_t` (3
  // reads a minute) leave alice's Get and Scan within it.
  CreateTable("quota_t");
  ASSERT_TRUE(conn_->GetTable("quota_t")->Put(Put("r1").Add("cf", "q", "one")).ok());
  ASSERT_TRUE(conn_->GetAdmin()->Grant(Permission{"alice", "R", "", "quota_t", "", ""}).ok());
  ASSERT_TRUE(conn_->GetAdmin()->SetQuota(Quota{"", "", "quota_t", "READ", "3req/min"}).ok());
  const std::string bob_q = probe("bob", "bob", "bob_q", "quota_t");
  EXPECT_NE(bob_q.find("GET " + kDenied), std::string::npos) << bob_q;
  EXPECT_NE(bob_q.find("user 'bob' may not Scan"), std::string::npos) << bob_q;
  const std::string alice_q = probe("alice", "alice", "alice_q", "quota_t");
  EXPECT_NE(alice_q.find("GET OK one"), std::string::npos) << alice_q;
  EXPECT_NE(alice_q.find("SCAN OK 1"), std::string::npos) << alice_q;
}

// PerformanceEvaluation, unmodified, over TLS under auth=true, as carol, who holds R, W and C on
// the default namespace and nothing more: its sequentialWrite creates its table (C on the
// namespace) and writes it, its randomRead reads it back. (HBase's shell cannot be run so: the
// newest hbase-shell on Maven Central is 2.4.17, whose client has no TLS; tests/hbase/README.md.)
TEST_F(HBaseClientTest, PerformanceEvaluationRunsOverTlsUnderAuthAsANamespaceUser) {
  const std::string address = StartSecure({"carol"});
  ASSERT_NE(address, "127.0.0.1:");
  ASSERT_TRUE(conn_->GetAdmin()->Grant(Permission{"carol", "RWC", "default", "", "", ""}).ok());
  for (const std::vector<std::string>& step : std::vector<std::vector<std::string>>{
           {"--rows=1000", "--valueSize=100", "sequentialWrite", "1"}, {"--rows=1000", "randomRead", "1"}}) {
    // (PE takes its client settings as -D arguments; the user is the JVM's.)
    std::vector<std::string> args;
    for (const std::string& s : ClientTls("carol", "carol")) args.push_back("-D" + s);
    args.insert(args.end(), {"-Dhbase.client.registry.impl=org.apache.hadoop.hbase.client.RpcConnectionRegistry",
                             "-Dhbase.client.bootstrap.servers=" + address, "--nomapred"});
    args.insert(args.end(), step.begin(), step.end());
    absl::StatusOr<ChildProcess::Finished> pe = RunJava("org.apache.hadoop.hbase.PerformanceEvaluation", args,
                                                        "pe-classpath.txt", {"HADOOP_USER_NAME=carol"});
    ASSERT_TRUE(pe.ok()) << pe.status();
    const std::string& log = pe->output;
    ASSERT_EQ(pe->exit_code, 0) << log.substr(log.size() > 8000 ? log.size() - 8000 : 0);
    EXPECT_NE(log.find("Finished TestClient-0 in"), std::string::npos) << log;
  }
  absl::StatusOr<std::string> rows = DumpTable(conn_.get(), "TestTable", 1);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(std::count(rows->begin(), rows->end(), '\n'), 1000);
}

// HBase's snapshot calls with the unmodified Java client (SnapshotSuite.java): snapshot, list,
// clone, restore, delete and their exceptions; then Basalt's own client finds what it left.
TEST_F(HBaseClientTest, TheJavaClientsSnapshotCallsAnswerAsHBase) {
  const std::string address = StartWithHBasePort();
  ASSERT_NE(address, "127.0.0.1:");
  absl::StatusOr<ChildProcess::Finished> java = RunJava("SnapshotSuite", {address});
  ASSERT_TRUE(java.ok()) << java.status();
  const std::string& log = java->output;
  ASSERT_EQ(java->exit_code, 0) << log.substr(log.size() > 6000 ? log.size() - 6000 : 0);
  EXPECT_NE(log.find("checks passed"), std::string::npos) << log;
  absl::StatusOr<std::vector<SnapshotDescription>> left = conn_->GetAdmin()->ListSnapshots();
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_TRUE(left->empty());
  EXPECT_EQ(conn_->GetAdmin()->DescribeTable("hb_snap").status().code(), absl::StatusCode::kNotFound);
}

// HBase's default discovery: the client knows only ZooKeeper, where the server published its
// HBase port (hbase_zookeeper_quorum) under a parent of its own.
TEST_F(HBaseClientTest, TheJavaClientFindsTheServerInZooKeeper) {
  const std::string quorum = TestZkQuorum();
  ASSERT_FALSE(quorum.empty()) << kTestServicesHelp;
  const std::string parent = "/hbase-" + std::to_string(::getpid());
  const std::string address =
      StartWithHBasePort({"--hbase_zookeeper_quorum=" + quorum, "--hbase_znode_parent=" + parent});
  ASSERT_NE(address, "127.0.0.1:");
  RunClientSuite("zk:" + quorum + "@" + parent, address);

  // What an HBase replication source reads of a peer: the cluster id, as a UUID (the one kept
  // in the data directory), and the region servers under rs/, by HBase's "host,port,startcode".
  ZooKeeper::Options o;
  o.quorum = quorum;
  absl::StatusOr<std::unique_ptr<ZooKeeper>> zk = ZooKeeper::Connect(o);
  ASSERT_TRUE(zk.ok()) << zk.status();
  absl::StatusOr<std::optional<ZkNode>> id_record = (*zk)->Get(parent + "/hbaseid");
  ASSERT_TRUE(id_record.ok() && id_record->has_value()) << id_record.status();
  hbase::ClusterId id;
  ASSERT_TRUE(hbase::ParseZkRecord((*id_record)->data, &id).ok());
  EXPECT_EQ(id.cluster_id(), absl::StripAsciiWhitespace(ReadFile(dir_.path() + "/data/CLUSTER_ID")));
  EXPECT_TRUE(std::regex_match(id.cluster_id(), std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")))
      << id.cluster_id();
  absl::StatusOr<std::vector<std::string>> sinks = (*zk)->Children(parent + "/rs");
  ASSERT_TRUE(sinks.ok()) << sinks.status();
  ASSERT_EQ(sinks->size(), 1u);
  EXPECT_TRUE(absl::StartsWith((*sinks)[0], absl::StrReplaceAll(address, {{":", ","}}) + ",")) << (*sinks)[0];
}

// A server paused for longer than its ZooKeeper session (SIGSTOP, as a long stall would) lost
// its HBase records with the session; once it runs again it writes them in a new session, so
// new HBase clients find it again without a restart.
TEST_F(HBaseClientTest, ItsRecordsInZooKeeperComeBackAfterItsSessionExpired) {
  const std::string quorum = TestZkQuorum();
  ASSERT_FALSE(quorum.empty()) << kTestServicesHelp;
  const std::string parent = "/hbase-expiry-" + std::to_string(::getpid());
  const std::string address = StartWithHBasePort({"--hbase_zookeeper_quorum=" + quorum, "--hbase_znode_parent=" + parent,
                                                  "--zookeeper_session_timeout_ms=500"});
  ASSERT_NE(address, "127.0.0.1:");
  ZooKeeper::Options o;
  o.quorum = quorum;
  absl::StatusOr<std::unique_ptr<ZooKeeper>> zk = ZooKeeper::Connect(o);
  ASSERT_TRUE(zk.ok()) << zk.status();
  auto master_record = [&] { return (*zk)->Get(parent + "/master").value_or(std::nullopt); };
  auto eventually = [](const std::function<bool()>& cond) {
    for (int i = 0; i < 1000 && !cond(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return cond();
  };
  ASSERT_TRUE(eventually([&] { return master_record().has_value(); }));
  const std::string before = master_record()->data;
  server_->Signal(SIGSTOP);
  // The session expires while the server sleeps: its ephemeral records go.
  const bool gone = eventually([&] { return !master_record().has_value(); });
  server_->Signal(SIGCONT);
  ASSERT_TRUE(gone) << "the paused server's records outlived its session";
  ASSERT_TRUE(eventually([&] { return master_record().has_value(); })) << "the records were not written again";
  EXPECT_EQ(master_record()->data, before);
  EXPECT_TRUE((*zk)->Get(parent + "/meta-region-server").value_or(std::nullopt).has_value());
  // And the Java client finds the server through them.
  absl::StatusOr<ChildProcess::Finished> probe = RunJava("ReadProbe", {"zk:" + quorum + "@" + parent, "nosuch", "1"});
  ASSERT_TRUE(probe.ok()) << probe.status();
  EXPECT_NE(probe->output.find("TableNotFoundException"), std::string::npos) << probe->output;
}

void HBaseClientTest::RunClientSuite(const std::string& registry, const std::string& address,
                                     const std::vector<std::string>& settings) {
  const std::string dump = dir_.path() + "/hb_keep.dump";
  absl::StatusOr<ChildProcess::Finished> java = RunJava("ClientSuite", {registry, dump}, "classpath.txt", settings);
  ASSERT_TRUE(java.ok()) << java.status();
  const std::string& log = java->output;
  ASSERT_EQ(java->exit_code, 0) << log.substr(log.size() > 6000 ? log.size() - 6000 : 0);
  EXPECT_NE(log.find("checks passed"), std::string::npos) << log;

  // Basalt's own client reads the table the Java client left, every version kept (2).
  absl::StatusOr<std::string> ours = DumpTable(conn_.get(), "hb_keep", 2);
  ASSERT_TRUE(ours.ok()) << ours.status();
  const std::string theirs = ReadFile(dump);
  EXPECT_EQ(std::count(theirs.begin(), theirs.end(), '\n'), 81);  // 40 rows of 2 cells, and a second version
  EXPECT_EQ(*ours, theirs);
  // And the settings it kept for the Java client, as Basalt's client describes them.
  absl::StatusOr<TableInfo> info = conn_->GetAdmin()->DescribeTable("hb_keep");
  ASSERT_TRUE(info.ok()) << info.status();
  using Kept = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(info->metadata, (Kept{{"app.table", "keep"}}));
  ASSERT_EQ(info->families.size(), 1u);
  EXPECT_EQ(info->families[0].max_versions, 2);
  EXPECT_NE(std::find(info->families[0].metadata.begin(), info->families[0].metadata.end(),
                      std::pair<std::string, std::string>("IN_MEMORY", "true")),
            info->families[0].metadata.end());
  EXPECT_EQ(info->families[0].configuration, (Kept{{"hbase.hstore.blockingStoreFiles", "30"}}));
  // And the namespace it made, with the table it left there.
  absl::StatusOr<NamespaceInfo> app = conn_->GetAdmin()->DescribeNamespace("hb_app");
  ASSERT_TRUE(app.ok()) << app.status();
  EXPECT_EQ(app->tables, std::vector<std::string>{"hb_app:left"});
  absl::StatusOr<std::string> left = DumpTable(conn_.get(), "hb_app:left", 1);
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_EQ(left->rfind("72 f:71 ", 0), 0u) << *left;  // (row r, column f:q: the dump writes hex)
  EXPECT_NE(left->find("66726f6d2d6862617365"), std::string::npos) << *left;  // "from-hbase", in hex

  // The port is no way around the quotas: a table's read quota refuses the Java client's Gets
  // past it with HBase's RpcThrottlingException, as the gRPC front end refuses Basalt's client.
  ASSERT_TRUE(conn_->GetAdmin()->SetQuota(Quota{"", "", "hb_keep", "READ", "3req/min"}).ok());
  absl::StatusOr<ChildProcess::Finished> probe = RunJava("ReadProbe", {address, "hb_keep", "10"}, "classpath.txt", settings);
  ASSERT_TRUE(probe.ok()) << probe.status();
  EXPECT_NE(probe->output.find("REFUSED at 3:"), std::string::npos) << probe->output;
  EXPECT_NE(probe->output.find("org.apache.hadoop.hbase.quotas.RpcThrottlingException"), std::string::npos)
      << probe->output;
}

// What no well-behaved client sends, sent on the wire (tests/util/hbase_wire_client.h): each
// bad call gets the exception whose class tells the Java client what to do, and the connection
// goes on serving the next call.
TEST_F(HBaseClientTest, BadCallsGetHBasesExceptionsAndTheConnectionGoesOn) {
  const std::string address = StartWithHBasePort();
  ASSERT_NE(address, "127.0.0.1:");
  CreateTable("wire", {"f"});
  ASSERT_TRUE(conn_->GetTable("wire")->Put(Put("r1").Add("f", "q", "v1")).ok());
  absl::StatusOr<std::vector<RegionStatus>> regions = conn_->GetAdmin()->ListRegions("wire");
  ASSERT_TRUE(regions.ok() && regions->size() == 1) << regions.status();
  const std::string region = hbase::RegionNameOf("wire", "", (*regions)[0].id);
  hbase::WireClient c(std::stoi(address.substr(address.rfind(':') + 1)), "ClientService");
  ASSERT_TRUE(c.connected());
  uint32_t id = 0;
  auto call = [&](std::string_view method, const google::protobuf::MessageLite& req, std::string_view cells = {}) {
    EXPECT_TRUE(c.Call(++id, method, req, cells));
    absl::StatusOr<hbase::Answer> a = c.Read();
    EXPECT_TRUE(a.ok()) << a.status();
    if (!a.ok()) return hbase::Answer{};
    EXPECT_EQ(a->header.call_id(), id);
    return *a;
  };
  auto exception_of = [](const hbase::Answer& a) { return a.header.exception().exception_class_name(); };

  hbase::GetRequest get;
  get.mutable_region()->set_type(hbase::RegionSpecifier::REGION_NAME);
  get.mutable_region()->set_value("not a region name");
  get.mutable_get()->set_row("r1");
  EXPECT_EQ(exception_of(call("Get", get)), "org.apache.hadoop.hbase.DoNotRetryIOException");
  get.mutable_region()->set_value(hbase::RegionNameOf("nosuch", "", 1));
  EXPECT_EQ(exception_of(call("Get", get)), "org.apache.hadoop.hbase.TableNotFoundException");
  get.mutable_region()->set_value(region);
  hbase::Answer ok = call("Get", get);
  hbase::GetResponse got;
  ASSERT_TRUE(got.ParseFromString(ok.message)) << exception_of(ok);
  ASSERT_EQ(got.result().cell_size(), 1);
  EXPECT_EQ(got.result().cell(0).value(), "v1");
  // A region that is no longer there (a stale id): the client must look it up again.
  get.mutable_region()->set_value(hbase::RegionNameOf("wire", "", (*regions)[0].id + 1));
  EXPECT_EQ(exception_of(call("Get", get)), "org.apache.hadoop.hbase.NotServingRegionException");

  // hbase:meta is read-only.
  hbase::MutateRequest put;
  put.mutable_region()->set_type(hbase::RegionSpecifier::REGION_NAME);
  put.mutable_region()->set_value(hbase::kMetaRegionName);
  put.mutable_mutation()->set_row("x");
  put.mutable_mutation()->set_mutate_type(hbase::MutationProto::PUT);
  EXPECT_EQ(exception_of(call("Mutate", put)), "org.apache.hadoop.hbase.security.AccessDeniedException");
  // A mutation that claims more cells than its cell block holds.
  put.mutable_region()->set_value(region);
  put.mutable_mutation()->set_associated_cell_count(3);
  std::string block;
  ASSERT_TRUE(hbase::AppendCell({"x", "f", "q", 5, hbase::KeyValueType::kPut, "v"}, &block).ok());
  EXPECT_EQ(exception_of(call("Mutate", put, block)), "org.apache.hadoop.hbase.DoNotRetryIOException");
  // A cell block that is not one.
  EXPECT_EQ(exception_of(call("Mutate", put, std::string("\x00\x00\x00\x02zz", 6))),
            "org.apache.hadoop.hbase.DoNotRetryIOException");

  // Scanners: an unknown one, and a call out of sequence (the scanner is then closed).
  hbase::ScanRequest next;
  next.set_scanner_id(424242);
  next.set_number_of_rows(10);
  EXPECT_EQ(exception_of(call("Scan", next)), "org.apache.hadoop.hbase.UnknownScannerException");
  hbase::ScanRequest open;
  *open.mutable_region() = get.region();
  open.mutable_region()->set_value(region);
  open.mutable_scan();
  open.set_number_of_rows(0);  // open only
  hbase::Answer opened = call("Scan", open);
  hbase::ScanResponse scan;
  ASSERT_TRUE(scan.ParseFromString(opened.message)) << exception_of(opened);
  next.set_scanner_id(scan.scanner_id());
  next.set_next_call_seq(5);
  EXPECT_EQ(exception_of(call("Scan", next)), "org.apache.hadoop.hbase.exceptions.OutOfOrderScannerNextException");
  next.set_next_call_seq(0);
  EXPECT_EQ(exception_of(call("Scan", next)), "org.apache.hadoop.hbase.UnknownScannerException");

  // A retried Increment (the same nonce group and nonce, as the client sends it again after a
  // lost answer) applies once, and its retry answers with the value the first one wrote.
  hbase::MutateRequest inc;
  inc.mutable_region()->set_type(hbase::RegionSpecifier::REGION_NAME);
  inc.mutable_region()->set_value(region);
  inc.set_nonce_group(77);
  hbase::MutationProto* m = inc.mutable_mutation();
  m->set_row("ctr");
  m->set_mutate_type(hbase::MutationProto::INCREMENT);
  m->set_nonce(4242);
  hbase::MutationProto::ColumnValue* cv = m->add_column_value();
  cv->set_family("f");
  hbase::MutationProto::ColumnValue::QualifierValue* qv = cv->add_qualifier_value();
  qv->set_qualifier("n");
  qv->set_value(std::string("\0\0\0\0\0\0\0\x05", 8));
  for (int attempt = 0; attempt < 2; ++attempt) {
    hbase::Answer a = call("Mutate", inc);
    hbase::MutateResponse r;
    ASSERT_TRUE(r.ParseFromString(a.message)) << exception_of(a);
    ASSERT_EQ(r.result().cell_size(), 1);
    EXPECT_EQ(r.result().cell(0).value(), std::string("\0\0\0\0\0\0\0\x05", 8)) << "attempt " << attempt;
  }
  m->set_nonce(4243);  // another increment
  hbase::MutateResponse third;
  ASSERT_TRUE(third.ParseFromString(call("Mutate", inc).message));
  EXPECT_EQ(third.result().cell(0).value(), std::string("\0\0\0\0\0\0\0\x0a", 8));

  // A Multi whose first region is refused leaves the next region its own cells (each region's
  // actions take theirs from the one cell block, in order).
  {
    hbase::MultiRequest multi;
    std::string cells;
    for (const std::string& name : {hbase::RegionNameOf("hbase:acl", "", 1), region}) {  // (HBase's own: never Basalt's)
      hbase::RegionAction* ra = multi.add_regionaction();
      ra->mutable_region()->set_type(hbase::RegionSpecifier::REGION_NAME);
      ra->mutable_region()->set_value(name);
      hbase::Action* a = ra->add_action();
      a->set_index(0);
      a->mutable_mutation()->set_mutate_type(hbase::MutationProto::PUT);
      a->mutable_mutation()->set_associated_cell_count(1);
      const std::string value = name == region ? "mine" : "not mine";
      ASSERT_TRUE(hbase::AppendCell({"m1", "f", "q", 9, hbase::KeyValueType::kPut, value}, &cells).ok());
    }
    hbase::MultiResponse r;
    hbase::Answer a = call("Multi", multi, cells);
    ASSERT_TRUE(r.ParseFromString(a.message)) << exception_of(a);
    ASSERT_EQ(r.regionactionresult_size(), 2);
    EXPECT_EQ(r.regionactionresult(0).exception().name(), "org.apache.hadoop.hbase.NamespaceNotFoundException");
    ASSERT_EQ(r.regionactionresult(1).resultorexception_size(), 1);
    EXPECT_FALSE(r.regionactionresult(1).resultorexception(0).has_exception());
    absl::StatusOr<Result> m1 = conn_->GetTable("wire")->Get(Get("m1"));
    ASSERT_TRUE(m1.ok()) << m1.status();
    EXPECT_EQ(m1->Value("f", "q").value_or("(none)"), "mine");
  }

  // A renewed lease counts as a call of the scanner's sequence, as the client counts it.
  {
    hbase::ScanRequest reopen = open;
    hbase::ScanResponse s2;
    ASSERT_TRUE(s2.ParseFromString(call("Scan", reopen).message));
    hbase::ScanRequest renew;
    renew.set_scanner_id(s2.scanner_id());
    renew.set_renew(true);
    renew.set_next_call_seq(0);
    renew.set_number_of_rows(0);
    EXPECT_FALSE(call("Scan", renew).header.has_exception());
    hbase::ScanRequest after;
    after.set_scanner_id(s2.scanner_id());
    after.set_number_of_rows(10);
    after.set_next_call_seq(1);
    hbase::Answer rows = call("Scan", after);
    hbase::ScanResponse got_rows;
    ASSERT_TRUE(got_rows.ParseFromString(rows.message)) << exception_of(rows);
    EXPECT_GE(got_rows.results_size(), 1);
  }

  // A method that does not exist, and the connection still serves.
  EXPECT_EQ(exception_of(call("Frobnicate", get)), "org.apache.hadoop.hbase.DoNotRetryIOException");
  get.mutable_region()->set_value(region);
  EXPECT_FALSE(call("Get", get).header.has_exception());

  // A scanner left open does not hold its table: disabled and dropped, the table's scanners go
  // with it (as HBase closes a region's scanners), not after their 60 s lease.
  hbase::ScanRequest left_open = open;
  hbase::ScanResponse held;
  ASSERT_TRUE(held.ParseFromString(call("Scan", left_open).message));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(conn_->GetAdmin()->DisableTable("wire").ok());
  absl::Status dropped = conn_->GetAdmin()->DropTable("wire");
  EXPECT_TRUE(dropped.ok()) << dropped;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(8));
  hbase::ScanRequest after_drop;
  after_drop.set_scanner_id(held.scanner_id());
  after_drop.set_number_of_rows(10);
  after_drop.set_next_call_seq(0);
  EXPECT_EQ(exception_of(call("Scan", after_drop)), "org.apache.hadoop.hbase.UnknownScannerException");
}

// An admin call retried while its first attempt still runs (the client timed out and sent it
// again with the same nonce) gets the first attempt's procedure, not TableExistsException: as
// HBase's master, the retry waits for the first.
TEST_F(HBaseClientTest, AnAdminRetryWithTheSameNonceWaitsForTheFirstAttempt) {
  const std::string address = StartWithHBasePort();
  ASSERT_NE(address, "127.0.0.1:");
  const int port = std::stoi(address.substr(address.rfind(':') + 1));
  for (int round = 0; round < 5; ++round) {
    hbase::CreateTableRequest create;
    hbase::TableSchema* schema = create.mutable_table_schema();
    schema->mutable_table_name()->set_namespace_("default");
    schema->mutable_table_name()->set_qualifier("retried" + std::to_string(round));
    schema->add_column_families()->set_name("f");
    for (int k = 1; k < 8; ++k) create.add_split_keys(std::string(1, static_cast<char>('a' + 3 * k)));
    create.set_nonce_group(11);
    create.set_nonce(100 + round);
    // Both attempts in flight at once, on two connections.
    hbase::WireClient first(port, "MasterService");
    hbase::WireClient retry(port, "MasterService");
    ASSERT_TRUE(first.Call(1, "CreateTable", create));
    ASSERT_TRUE(retry.Call(1, "CreateTable", create));
    std::vector<uint64_t> procs;
    for (hbase::WireClient* c : {&first, &retry}) {
      absl::StatusOr<hbase::Answer> a = c->Read();
      ASSERT_TRUE(a.ok()) << a.status();
      ASSERT_FALSE(a->header.has_exception()) << "round " << round << ": " << a->header.exception().exception_class_name()
                                              << ": " << a->header.exception().stack_trace();
      hbase::CreateTableResponse r;
      ASSERT_TRUE(r.ParseFromString(a->message));
      procs.push_back(r.proc_id());
    }
    EXPECT_EQ(procs[0], procs[1]) << "round " << round;
  }
}

// A scanner its client abandoned is closed once its lease lapses (scanner_lease_ms), with no
// call needed to notice it, as HBase's lease thread does; the client is then told it is unknown.
TEST_F(HBaseClientTest, AnAbandonedScannerIsClosedWhenItsLeaseLapses) {
  const std::string address = StartWithHBasePort({"--scanner_lease_ms=300"});
  ASSERT_NE(address, "127.0.0.1:");
  CreateTable("lease", {"f"});
  ASSERT_TRUE(conn_->GetTable("lease")->Put(Put("r1").Add("f", "q", "v1")).ok());
  absl::StatusOr<std::vector<RegionStatus>> regions = conn_->GetAdmin()->ListRegions("lease");
  ASSERT_TRUE(regions.ok() && regions->size() == 1) << regions.status();
  hbase::WireClient c(std::stoi(address.substr(address.rfind(':') + 1)), "ClientService");
  hbase::ScanRequest open;
  open.mutable_region()->set_type(hbase::RegionSpecifier::REGION_NAME);
  open.mutable_region()->set_value(hbase::RegionNameOf("lease", "", (*regions)[0].id));
  open.mutable_scan();
  open.set_number_of_rows(0);  // open only
  ASSERT_TRUE(c.Call(1, "Scan", open));
  absl::StatusOr<hbase::Answer> a = c.Read();
  ASSERT_TRUE(a.ok()) << a.status();
  hbase::ScanResponse opened;
  ASSERT_TRUE(opened.ParseFromString(a->message)) << a->header.exception().stack_trace();
  EXPECT_EQ(opened.ttl(), 300u);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  hbase::ScanRequest next;
  next.set_scanner_id(opened.scanner_id());
  next.set_number_of_rows(10);
  next.set_next_call_seq(0);
  ASSERT_TRUE(c.Call(2, "Scan", next));
  a = c.Read();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->header.exception().exception_class_name(), "org.apache.hadoop.hbase.UnknownScannerException");
}

// A scan whose filter refuses row after row answers within half its call's timeout, rows or
// not, with heartbeat_message set (HBase's scan heartbeat), so a selective scan of a large
// region never outlasts its client's timeout; the calls after it go on from where it stopped,
// to the one row that passes. A client that does not handle heartbeats gets that row in one call.
TEST_F(HBaseClientTest, AScanWhoseFilterRefusesRowAfterRowSendsHeartbeats) {
  const std::string address = StartWithHBasePort();
  ASSERT_NE(address, "127.0.0.1:");
  CreateTable("beats", {"f"});
  {
    std::unique_ptr<BufferedMutator> m = conn_->GetBufferedMutator("beats");
    for (int i = 0; i < 60000; ++i) {
      char row[16];
      std::snprintf(row, sizeof(row), "r%06d", i);
      ASSERT_TRUE(m->Mutate(Put(row).Add("f", "q", i == 59999 ? "the needle" : "hay")).ok());
    }
    ASSERT_TRUE(m->Close().ok());
  }
  absl::StatusOr<std::vector<RegionStatus>> regions = conn_->GetAdmin()->ListRegions("beats");
  ASSERT_TRUE(regions.ok() && regions->size() == 1) << regions.status();
  hbase::SubstringComparator needle;
  needle.set_substr("needle");
  hbase::ValueFilter value;
  value.mutable_compare_filter()->set_compare_op(hbase::EQUAL);
  value.mutable_compare_filter()->mutable_comparator()->set_name("org.apache.hadoop.hbase.filter.SubstringComparator");
  value.mutable_compare_filter()->mutable_comparator()->set_serialized_comparator(needle.SerializeAsString());
  hbase::ScanRequest open;
  open.mutable_region()->set_type(hbase::RegionSpecifier::REGION_NAME);
  open.mutable_region()->set_value(hbase::RegionNameOf("beats", "", (*regions)[0].id));
  open.mutable_scan()->mutable_filter()->set_name("org.apache.hadoop.hbase.filter.ValueFilter");
  open.mutable_scan()->mutable_filter()->set_serialized_filter(value.SerializeAsString());
  open.set_number_of_rows(100);
  hbase::WireClient c(std::stoi(address.substr(address.rfind(':') + 1)), "ClientService");
  uint32_t id = 0;
  auto scan = [&](const hbase::ScanRequest& req, uint32_t timeout_ms) {
    EXPECT_TRUE(c.Call(++id, "Scan", req, {}, timeout_ms));
    absl::StatusOr<hbase::Answer> a = c.Read();
    EXPECT_TRUE(a.ok()) << a.status();
    hbase::ScanResponse resp;
    if (a.ok()) {
      EXPECT_TRUE(resp.ParseFromString(a->message)) << a->header.exception().stack_trace();
    }
    return resp;
  };

  // With heartbeats, a 2 ms timeout: answers every millisecond or so until the needle.
  open.set_client_handles_heartbeats(true);
  hbase::ScanResponse resp = scan(open, 2);
  int heartbeats = 0, calls = 1;
  std::vector<std::string> found;
  for (;;) {
    for (const hbase::Result& r : resp.results()) found.push_back(r.cell(0).row());
    if (resp.heartbeat_message()) {
      ++heartbeats;
      EXPECT_TRUE(resp.more_results_in_region());
    }
    if (!resp.more_results_in_region()) break;
    ASSERT_LT(calls, 100000) << "the scan does not end";
    hbase::ScanRequest next;
    next.set_scanner_id(resp.scanner_id());
    next.set_number_of_rows(100);
    next.set_next_call_seq(static_cast<uint64_t>(calls - 1));
    next.set_client_handles_heartbeats(true);
    resp = scan(next, 2);
    ++calls;
  }
  EXPECT_EQ(found, std::vector<std::string>{"r059999"});
  EXPECT_GT(heartbeats, 0) << "one scan call read 60,000 rows within a millisecond?";
  EXPECT_EQ(heartbeats, calls - 1);  // each call but the last answered with a heartbeat

  // Without: one call, however long it takes.
  open.set_client_handles_heartbeats(false);
  resp = scan(open, 2);
  EXPECT_FALSE(resp.heartbeat_message());
  ASSERT_EQ(resp.results_size(), 1);
  EXPECT_EQ(resp.results(0).cell(0).row(), "r059999");
  EXPECT_FALSE(resp.more_results_in_region());
}

// Every write the Java client saw acknowledged survives what the server goes through while the
// client writes: a split of the region it writes to, then a kill -9 and a restart on the same
// ports. The client rides through both (NotServingRegionException, then connection refused,
// then the server back) and its acknowledged rows are all read back by Basalt's own client.
TEST_F(HBaseClientTest, EveryAcknowledgedWriteSurvivesASplitAndAKill9) {
  const int hbase_port = FreePort();
  ASSERT_GT(hbase_port, 0);
  StartServer({absl::StrCat("--hbase_listen=127.0.0.1:", hbase_port)});
  CreateTable("hb_faults", {"f"});
  constexpr int kRows = 3000;
  BackgroundWriter writer(absl::StrCat("127.0.0.1:", hbase_port), "hb_faults", kRows, dir_.path());
  ASSERT_TRUE(writer.started().ok()) << writer.started();
  ASSERT_TRUE(writer.WaitFor(500)) << writer.log();
  ASSERT_TRUE(conn_->GetAdmin()->Split("hb_faults").ok());
  ASSERT_TRUE(writer.WaitFor(1200)) << writer.log();
  server_->Kill();
  const int at_kill = writer.acked();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_TRUE(server_->Start().ok());
  Connect();
  std::optional<int> exit = writer.WaitForExit(absl::Seconds(240));
  ASSERT_TRUE(exit.has_value()) << "the writer did not finish: " << writer.log();
  EXPECT_EQ(*exit, 0) << writer.log();
  const int total = writer.acked();
  EXPECT_GT(total, at_kill) << "no write was acknowledged after the restart: " << writer.log();
  std::cout << "acknowledged " << total << " of " << kRows << " (" << at_kill << " before the kill -9); writer: "
            << writer.log().substr(0, 2000) << std::endl;

  // Every acknowledged row is there with its value (Basalt's own client, a fresh connection).
  int checked = 0;
  EXPECT_EQ(LostWrites(conn_.get(), "hb_faults", writer.acked_file(), &checked), "");
  EXPECT_EQ(checked, total);
  absl::StatusOr<std::vector<RegionStatus>> regions = conn_->GetAdmin()->ListRegions("hb_faults");
  ASSERT_TRUE(regions.ok()) << regions.status();
  EXPECT_GE(regions->size(), 2u);
}

// HBase's own PerformanceEvaluation (hbase-mapreduce 2.6.0's tests jar, tests/hbase/pe-pom.xml)
// in --nomapred mode, at a small size: its five commands must finish without an error (PE stops
// at its first), and its rows are then all there for Basalt's own client.
TEST_F(HBaseClientTest, PerformanceEvaluationRunsItsCommandsWithoutAnError) {
  const std::string address = StartWithHBasePort();
  ASSERT_NE(address, "127.0.0.1:");
  const std::vector<std::string> base = {"-Dhbase.client.registry.impl=org.apache.hadoop.hbase.client.RpcConnectionRegistry",
                                         "-Dhbase.client.bootstrap.servers=" + address, "--nomapred"};
  struct Step {
    std::vector<std::string> args;
  };
  const std::vector<Step> steps = {
      {{"--rows=2000", "--presplit=4", "--valueSize=100", "sequentialWrite", "1"}},
      {{"--rows=1000", "--valueSize=100", "randomWrite", "2"}},
      {{"--rows=1000", "randomRead", "2"}},
      {{"--rows=2000", "scan", "1"}},
      {{"--rows=10", "filterScan", "1"}},
  };
  for (const Step& step : steps) {
    std::vector<std::string> args = base;
    args.insert(args.end(), step.args.begin(), step.args.end());
    absl::StatusOr<ChildProcess::Finished> pe = RunJava("org.apache.hadoop.hbase.PerformanceEvaluation", args, "pe-classpath.txt");
    ASSERT_TRUE(pe.ok()) << pe.status();
    const std::string& log = pe->output;
    const std::string command = step.args[step.args.size() - 2];
    ASSERT_EQ(pe->exit_code, 0) << command << ":\n" << log.substr(log.size() > 8000 ? log.size() - 8000 : 0);
    // PE judged by its own results: each client finished its rows, the summary has a timing per
    // client, and nothing was logged as an error. (Not by the word "Exception": Hadoop logs a WARN
    // with UnknownHostException on a machine whose own hostname does not resolve, a fresh Debian
    // chroot's, though PE runs cleanly there.)
    const std::string rows = step.args[0].substr(std::string("--rows=").size());
    const int clients = std::stoi(step.args.back());
    for (int c = 0; c < clients; ++c) {
      EXPECT_TRUE(std::regex_search(log, std::regex(absl::StrCat("Finished TestClient-", c, " in [0-9]+ms over ",
                                                                 rows, " rows"))))
          << command << ", client " << c << ":\n" << log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
    }
    std::smatch summary;
    ASSERT_TRUE(std::regex_search(log, summary, std::regex("Summary of timings \\(ms\\): \\[([0-9, ]*)\\]")))
        << command << ":\n" << log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
    EXPECT_EQ(std::count(summary[1].first, summary[1].second, ',') + 1, clients) << summary[0];
    std::smatch error;
    EXPECT_FALSE(std::regex_search(log, error, std::regex("\\] (ERROR|FATAL) [^\\n]*")))
        << command << ": " << error[0];
  }
  // sequentialWrite wrote rows 0..1999 (26-digit keys); randomWrite only rewrote some of them.
  std::unique_ptr<Table> table = conn_->GetTable("TestTable");
  absl::StatusOr<std::unique_ptr<ResultScanner>> scanner = table->GetScanner(Scan());
  ASSERT_TRUE(scanner.ok()) << scanner.status();
  int rows = 0;
  Result row;
  for (;;) {
    absl::StatusOr<bool> more = (*scanner)->Next(&row);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    ++rows;
  }
  EXPECT_EQ(rows, 2000);
}

// The HBase shell (hbase-shell 2.4.17 and JRuby, tests/hbase/shell-pom.xml) runs
// tests/hbase/shell_session.rb, reaching the server as HBase 2.4's MasterRegistry does
// (hbase.masters). Each command's answer is checked in the order the shell printed them; then
// Basalt's own client reads the regions and cells the shell left.
TEST_F(HBaseClientTest, TheHBaseShellRunsItsCommands) {
  const std::string address = StartWithHBasePort();
  ASSERT_NE(address, "127.0.0.1:");
  absl::StatusOr<ChildProcess::Finished> shell =
      RunJava("org.jruby.JarBootstrapMain",
              {"-Dhbase.client.registry.impl=org.apache.hadoop.hbase.client.MasterRegistry",
               "-Dhbase.masters=" + address, "-n", std::string(HBASE_TESTS_DIR) + "/shell_session.rb"},
              "shell-classpath.txt");
  ASSERT_TRUE(shell.ok()) << shell.status();
  const std::string& log = shell->output;
  ASSERT_EQ(shell->exit_code, 0) << log.substr(log.size() > 8000 ? log.size() - 8000 : 0);
  EXPECT_EQ(log.find("ERROR"), std::string::npos) << log;
  // What each command printed, in order (the shell echoes each command before its answer).
  const std::vector<std::string> expected = {
      "create 'sh_keep'", "Created table sh_keep",
      "list", "=> [\"sh_keep\"]",
      "describe 'sh_keep'", "Table sh_keep is ENABLED", "{NAME => 'f'", "VERSIONS => '3'",
      "alter 'sh_keep', NAME => 'f', VERSIONS => 5, IN_MEMORY", "alter 'sh_keep', 'extra'",
      "describe 'sh_keep'", "{NAME => 'extra'", "{NAME => 'f'", "VERSIONS => '5'",
      "alter 'sh_keep', 'delete' => 'extra'",
      "get 'sh_keep', 'kiwi'", "value=brown", "value=green", "1 row(s)",
      "scan 'sh_keep', {STARTROW", " kiwi ", "value=brown", " plum ", "2 row(s)",
      "count 'sh_keep'", "=> 4",
      "incr 'sh_keep', 'ctr', 'f:n', 5", "COUNTER VALUE = 5",
      "incr 'sh_keep', 'ctr', 'f:n', 2", "COUNTER VALUE = 7",
      "get_counter", "COUNTER VALUE = 7",
      "scan 'sh_keep'\n", " apple ", "value=red", " ctr ", "\\x07", " kiwi ", "value=brown", "3 row(s)",
      // What HBase's tools ask on an ordinary day: each region under its server, the splits,
      // where a row is, a count with a scanner cache, a flush, a compaction, the balancer.
      "status 'detailed'", "version 2.6.0", "1 live servers", "numberOfOnlineRegions=3",
      "list_regions 'sh_keep'", "REGION_NAME", "sh_keep,g,", " 3 rows",
      "get_splits 'sh_keep'", "Total number of splits = 3",
      "locate_region 'sh_keep', 'kiwi'", "{ENCODED => ", "1 row(s)",  // (its columns wrap)
      "count 'sh_keep', CACHE => 1000", "=> 3",
      "flush 'sh_keep'", "major_compact 'sh_keep'",
      "balancer", "=> false",
      "create 'sh_drop'", "Created table sh_drop",
      "count 'sh_drop'", "=> 2",
      "is_disabled 'sh_drop'", "=> true",
      "truncate 'sh_drop'", "Truncating table...",
      "count 'sh_drop'", "=> 0",
      "exists 'sh_drop'", "Table sh_drop does not exist", "=> false",
      "snapshot 'sh_snap', 'sh_snap_1'",
      "list_snapshots", " sh_snap_1 ", "sh_snap (", "1 row(s)",
      "clone_snapshot 'sh_snap_1', 'sh_snap_clone'",
      "get 'sh_snap_clone', 'r1'", "value=before", "1 row(s)",
      "restore_snapshot 'sh_snap_1'",
      "get 'sh_snap', 'r1'", "value=before", "1 row(s)",
      "delete_snapshot 'sh_snap_1'",
      "list_snapshots", "0 row(s)",
      "list", "=> [\"sh_keep\"]",
      // A namespace through its commands (Basalt's namespaces), and a table in it.
      "create_namespace 'sh_app'", "describe_namespace 'sh_app'",
      "{NAME => 'sh_app', hbase.namespace.quota.maxtables => '4', team => 'search'}",
      "list_namespace", "default", "hbase", "sh_app", "3 row(s)",
      "get 'sh_app:events', 'r1'", "value=in-ns", "1 row(s)",
      "list_namespace_tables 'sh_app'", "events", "1 row(s)",
      // A pattern keeps the names it matches whole (HBase's list 'pat').
      "list 'sh_app:.*'", "=> [\"sh_app:events\"]", "list 'sh_k.*'", "=> [\"sh_keep\"]",
      "drop_namespace 'sh_gone'", "list_namespace", "3 row(s)",
      // A replication peer through its commands (Basalt's peers, src/replication/peers.h).
      "list_peers", " sh_dr zk-b1,zk-b2:2181:/hbase-b  DISABLED false  default.sh_keep:f 0 false", "1 row(s)",
      "enable_peer 'sh_dr'", "set_peer_tableCFs 'sh_dr'",
      "show_peer_tableCFs 'sh_dr'", "=> \"default.sh_keep\"",
      "disable_peer 'sh_dr'", "get_peer_config 'sh_dr'", "Cluster Key          zk-b1,zk-b2:2181:/hbase-b",
      "remove_peer 'sh_dr'", "list_peers", "0 row(s)",
      // (The server's replication sink, as HBase's shell shows it: nothing applied yet.)
      "status 'replication'", "1 live servers", "SINK: TimeStampStarted=", "AgeOfLastAppliedOp=0",
  };
  size_t at = 0;
  for (const std::string& e : expected) {
    const size_t found = log.find(e, at);
    ASSERT_NE(found, std::string::npos) << "\"" << e << "\" not found after byte " << at << " of:\n" << log;
    at = found + e.size();
  }
  // The settings Basalt has none for, kept: the shell's second describe shows them back, and
  // Basalt's client reads them.
  EXPECT_NE(log.find("IN_MEMORY => 'true'"), std::string::npos) << log;  // (the command says: => true)
  EXPECT_NE(log.find("'app.key' => 'kept'"), std::string::npos) << log;
  absl::StatusOr<TableInfo> described = conn_->GetAdmin()->DescribeTable("sh_keep");
  ASSERT_TRUE(described.ok()) << described.status();
  ASSERT_EQ(described->families.size(), 1u);
  const auto& kept = described->families[0].metadata;
  EXPECT_NE(std::find(kept.begin(), kept.end(), std::pair<std::string, std::string>("IN_MEMORY", "true")), kept.end());
  EXPECT_NE(std::find(kept.begin(), kept.end(), std::pair<std::string, std::string>("app.key", "kept")), kept.end());

  // The namespace the shell made and changed, as Basalt's client describes it.
  absl::StatusOr<NamespaceInfo> app = conn_->GetAdmin()->DescribeNamespace("sh_app");
  ASSERT_TRUE(app.ok()) << app.status();
  EXPECT_EQ(app->configuration, (std::vector<std::pair<std::string, std::string>>{
                                    {"hbase.namespace.quota.maxtables", "4"}}));
  EXPECT_EQ(app->tables, std::vector<std::string>{"sh_app:events"});

  // Basalt's own view: the shell's SPLITS, and its cells (both versions of kiwi, the counter).
  absl::StatusOr<std::vector<RegionStatus>> regions = conn_->GetAdmin()->ListRegions("sh_keep");
  ASSERT_TRUE(regions.ok()) << regions.status();
  std::vector<std::string> starts;
  for (const RegionStatus& r : *regions) starts.push_back(r.start_key);
  std::sort(starts.begin(), starts.end());
  EXPECT_EQ(starts, (std::vector<std::string>{"", "g", "p"}));
  Scan scan;
  scan.SetMaxVersions(3);
  absl::StatusOr<std::unique_ptr<ResultScanner>> scanner = conn_->GetTable("sh_keep")->GetScanner(scan);
  ASSERT_TRUE(scanner.ok()) << scanner.status();
  std::string ours;
  Result row;
  for (;;) {
    absl::StatusOr<bool> more = (*scanner)->Next(&row);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    for (const KeyValue& kv : row.cells()) absl::StrAppend(&ours, row.row(), " ", kv.family, ":", kv.qualifier, "=", Hex(kv.value), "\n");
  }
  // (An increment writes a new version, as HBase's does: the family keeps 3, so 5 is still there.)
  EXPECT_EQ(ours,
            "apple f:q=726564\nctr f:n=0000000000000007\nctr f:n=0000000000000005\n"
            "kiwi f:q=62726f776e\nkiwi f:q=677265656e\n");
  absl::StatusOr<std::vector<TableInfo>> tables = conn_->GetAdmin()->ListTables();
  ASSERT_TRUE(tables.ok()) << tables.status();
  for (const TableInfo& t : *tables) EXPECT_NE(t.name, "sh_drop");
}

// What the shell's day-to-day commands ask that Basalt's port does not serve (the balancer's and
// the normalizer's switches, unassign, procedures and locks, the master's chores, HBCK): each is
// answered with an error naming the method it sent, and the shell (without -n, which would stop
// at the first) goes on to the next (tests/hbase/shell_refusals.rb).
TEST_F(HBaseClientTest, TheHBaseShellsCommandsNotServedAreRefusedByName) {
  const std::string address = StartWithHBasePort();
  ASSERT_NE(address, "127.0.0.1:");
  absl::StatusOr<ChildProcess::Finished> shell =
      RunJava("org.jruby.JarBootstrapMain",
              {"-Dhbase.client.registry.impl=org.apache.hadoop.hbase.client.MasterRegistry",
               "-Dhbase.masters=" + address, std::string(HBASE_TESTS_DIR) + "/shell_refusals.rb"},
              "shell-classpath.txt");
  ASSERT_TRUE(shell.ok()) << shell.status();
  const std::string& log = shell->output;
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"balance_switch true", "SetBalancerRunning"},
      {"normalize", "Normalize"},
      {"normalizer_switch true", "SetNormalizerRunning"},
      {"normalizer_enabled", "IsNormalizerEnabled"},
      {"unassign 'sh_ref,,1.0123456789abcdef0123456789abcdef.'", "UnassignRegion"},
      {"list_procedures", "GetProcedures"},
      {"list_locks", "GetLocks"},
      {"catalogjanitor_enabled", "IsCatalogJanitorEnabled"},
      {"cleaner_chore_enabled", "IsCleanerChoreEnabled"},
      {"splitormerge_enabled 'SPLIT'", "IsSplitOrMergeEnabled"},
  };
  size_t at = log.find("Created table sh_ref");
  ASSERT_NE(at, std::string::npos) << log;
  for (const auto& [command, method] : refused) {
    // The command echoed, then its error (list_procedures prints its header first).
    at = log.find("> " + command + "\n", at);
    ASSERT_NE(at, std::string::npos) << command << " not run:\n" << log;
    const size_t next = log.find("hbase:", at + 1);
    const std::string answer = log.substr(at, next == std::string::npos ? std::string::npos : next - at);
    EXPECT_NE(answer.find("ERROR: method " + method + " of MasterService is not served by Basalt's HBase port"),
              std::string::npos)
        << answer;
  }
  // HBCK's service is refused as a whole, naming the method too.
  at = log.find("> hbck_chore_run\n", at);
  ASSERT_NE(at, std::string::npos) << log;
  EXPECT_NE(log.find("ERROR: HbckService is not served here", at), std::string::npos) << log.substr(at);
  EXPECT_NE(log.find("method RunHbckChore refused", at), std::string::npos) << log.substr(at);
  // Nothing refused left a mark: the table is there, and the shell went on to its last command.
  EXPECT_NE(log.find("Table sh_ref does exist", at), std::string::npos) << log.substr(at);
  EXPECT_TRUE(conn_->GetAdmin()->DescribeTable("sh_ref").ok());
}

}  // namespace
}  // namespace basalt::testing
