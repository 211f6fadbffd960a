// A standalone server's replication peers (peers.h) on real catalogues and a real loopback sink
// port: what add_peer, enable_peer, disable_peer, remove_peer and list_peers keep and do, the
// families and tables shipped, and the cluster keys taken.
#include "src/replication/peers.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "proto/hbase/hbase_replication.pb.h"
#include "src/front/hbase/wire_client.h"
#include "src/replication/test_nodes.h"
#include "tests/util/temp_dir.h"

namespace basalt::replication {
namespace {

using testing::Eventually;
using testing::Node;

TEST(ClusterKeyTest, HBasesFormIsTakenAndAnythingElseRefused) {
  absl::StatusOr<ClusterKey> k = ParseClusterKey("zk1,zk2,zk3:2181:/hbase");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->quorum, "zk1:2181,zk2:2181,zk3:2181");
  EXPECT_EQ(k->parent, "/hbase");
  k = ParseClusterKey("zk1:2182,zk2:2181:/basalt/b");  // a host with its own port, as HBase 2 takes
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->quorum, "zk1:2182,zk2:2181");
  EXPECT_EQ(k->parent, "/basalt/b");
  for (const char* bad : {"", "zk1", "zk1:2181", "zk1:99999,zk2:2181:/hbase", "a:b:c:2181:/hbase", "zk1:x:/hbase",
                          "zk1:0:/hbase", ":2181:/hbase", "zk1:2181:hbase", "zk1:2181:/", "zk1,,zk2:2181:/hbase",
                          "zk1:2181:/hbase/"}) {
    absl::Status s = ParseClusterKey(bad).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("cluster key"), std::string::npos) << s;
  }
}

class PeersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    source_ = std::make_unique<Node>(dir_.path() + "/a");
    sink_ = std::make_unique<Node>(dir_.path() + "/b");
    front_ = testing::StartSinkPort(sink_.get(), 0);
    ASSERT_NO_FATAL_FAILURE(OpenPeers());
  }
  void TearDown() override {
    peers_.reset();
    front_->Shutdown();
  }
  void OpenPeers() {
    Peers::Options o;
    o.log = source_->catalog->server_log();
    o.state_dir = state_dir();
    o.cluster_id = testing::kSourceId;
    o.tables = source_->catalog.get();
    o.find_sink = [port = front_->port()](const rpc::ReplicationPeer&) -> absl::StatusOr<LogShipper::Sink> {
      return LogShipper::Sink{absl::StrCat("127.0.0.1:", port), testing::kSinkId};
    };
    o.idle_poll = absl::Milliseconds(5);
    o.say = [](std::string_view) {};
    absl::StatusOr<std::unique_ptr<Peers>> p = Peers::Open(o);
    ASSERT_TRUE(p.ok()) << p.status();
    peers_ = *std::move(p);
  }
  std::string state_dir() const { return dir_.path() + "/a/replication"; }
  static rpc::ReplicationPeer Peer(const std::string& id, bool enabled) {
    rpc::ReplicationPeer p;
    p.set_id(id);
    p.set_cluster_key("127.0.0.1:2181:/basalt-b");
    p.set_enabled(enabled);
    return p;
  }
  rpc::ListPeersResponse List() {
    rpc::ListPeersResponse all;
    EXPECT_TRUE(peers_->ListPeers(&all).ok());
    return all;
  }

  testing::TempDir dir_;
  std::unique_ptr<Node> source_, sink_;
  std::unique_ptr<hbase::HBaseFront> front_;
  std::unique_ptr<Peers> peers_;
};

TEST_F(PeersTest, APeerAddedDisabledGetsEveryEditMadeSinceItWasAddedOnceEnabled) {
  source_->Put(0, 10);  // before the peer: never shipped (copied another way)
  ASSERT_TRUE(peers_->AddPeer(Peer("b", false)).ok());
  source_->Put(10, 60);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(sink_->Have(0, 60), 0);  // disabled: nothing shipped
  ASSERT_EQ(List().peers(0).state(), "DISABLED");

  ASSERT_TRUE(peers_->SetPeerEnabled("b", true).ok());
  ASSERT_TRUE(Eventually([&] { return sink_->Have(10, 60) == 50; })) << sink_->Have(10, 60);
  EXPECT_EQ(sink_->Have(0, 10), 0);
  rpc::PeerStatus st = List().peers(0);
  EXPECT_EQ(st.state(), "SHIPPING");
  EXPECT_EQ(st.entries(), 50u);
  EXPECT_EQ(st.cells(), 50u);  // family `local` has no REPLICATION_SCOPE: not shipped
  EXPECT_TRUE(Eventually([&] { return List().peers(0).lag_bytes() == 0; }));

  // Disabled again, then the server restarts: the edits of the meantime arrive once enabled.
  ASSERT_TRUE(peers_->SetPeerEnabled("b", false).ok());
  source_->Put(60, 80);
  peers_.reset();
  ASSERT_NO_FATAL_FAILURE(OpenPeers());
  EXPECT_GT(List().peers(0).lag_bytes(), 0u);
  EXPECT_EQ(sink_->Have(60, 80), 0);
  ASSERT_TRUE(peers_->SetPeerEnabled("b", true).ok());
  ASSERT_TRUE(Eventually([&] { return sink_->Have(60, 80) == 20; })) << sink_->Have(60, 80);
}

TEST_F(PeersTest, AConsistencyTokenIsConsistentOnceEveryPeerHasWhatWasAcknowledgedBeforeIt) {
  ASSERT_TRUE(peers_->AddPeer(Peer("b", false)).ok());
  source_->Put(0, 30);
  absl::StatusOr<rpc::ConsistencyToken> token = peers_->ConsistencyToken();
  ASSERT_TRUE(token.ok()) << token.status();
  ASSERT_EQ(token->ends_size(), 1);
  // A disabled peer has none of it, and says so.
  absl::StatusOr<std::string> waiting = peers_->NotReplicated("t", *token);
  ASSERT_TRUE(waiting.ok()) << waiting.status();
  EXPECT_NE(waiting->find("peer b has the log up to"), std::string::npos) << *waiting;
  EXPECT_NE(waiting->find("disabled"), std::string::npos) << *waiting;
  // A table no peer replicates (the peer names another): consistent at once.
  rpc::ReplicationPeer other = Peer("b", false);
  other.add_tables()->set_table("u");
  ASSERT_TRUE(peers_->UpdatePeer(other).ok());
  EXPECT_EQ(peers_->NotReplicated("t", *token).value_or("?"), "");
  ASSERT_TRUE(peers_->UpdatePeer(Peer("b", false)).ok());

  // Enabled: consistent once shipped, and then every row of the token is on the sink.
  ASSERT_TRUE(peers_->SetPeerEnabled("b", true).ok());
  ASSERT_TRUE(Eventually([&] { return peers_->NotReplicated("t", *token).value_or("?").empty(); }));
  EXPECT_EQ(sink_->Have(0, 30), 30);
  // Later writes are another token's.
  source_->Put(30, 40);
  token = peers_->ConsistencyToken();
  ASSERT_TRUE(token.ok());
  ASSERT_TRUE(Eventually([&] { return peers_->NotReplicated("t", *token).value_or("?").empty(); }));
  EXPECT_EQ(sink_->Have(30, 40), 10);
}

TEST_F(PeersTest, PeersAreKeptOverARestartAndARemovedPeerLeavesNothingBehind) {
  rpc::ReplicationPeer b = Peer("b", true);
  rpc::PeerTable* t = b.add_tables();
  t->set_table("t");
  t->add_families("f");
  ASSERT_TRUE(peers_->AddPeer(b).ok());
  ASSERT_TRUE(peers_->AddPeer(Peer("c", false)).ok());
  EXPECT_EQ(peers_->AddPeer(Peer("c", true)).code(), absl::StatusCode::kAlreadyExists);
  rpc::ReplicationPeer bad = Peer("d", true);
  bad.set_cluster_key("127.0.0.1:/hbase");
  EXPECT_EQ(peers_->AddPeer(bad).code(), absl::StatusCode::kInvalidArgument);
  bad = Peer("../d", true);
  EXPECT_EQ(peers_->AddPeer(bad).code(), absl::StatusCode::kInvalidArgument);
  bad = Peer("d", true);
  bad.add_tables()->set_table("no such/name");
  EXPECT_EQ(peers_->AddPeer(bad).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(peers_->RemovePeer("d").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(peers_->SetPeerEnabled("d", true).code(), absl::StatusCode::kNotFound);

  peers_.reset();  // the server restarts
  ASSERT_NO_FATAL_FAILURE(OpenPeers());
  rpc::ListPeersResponse all = List();
  ASSERT_EQ(all.peers_size(), 2);
  EXPECT_EQ(all.peers(0).peer().SerializeAsString(), b.SerializeAsString());
  EXPECT_EQ(all.peers(1).peer().id(), "c");
  EXPECT_FALSE(all.peers(1).peer().enabled());
  EXPECT_EQ(all.peers(1).state(), "DISABLED");

  ASSERT_TRUE(Env::Default()->FileExists(state_dir() + "/c.position"));
  ASSERT_TRUE(peers_->RemovePeer("c").ok());
  EXPECT_FALSE(Env::Default()->FileExists(state_dir() + "/c.position"));
  peers_.reset();
  ASSERT_NO_FATAL_FAILURE(OpenPeers());
  ASSERT_EQ(List().peers_size(), 1);
}

TEST_F(PeersTest, OnlyTheReplicatedFamiliesOfThePeersTablesAreShipped) {
  rpc::ReplicationPeer other = Peer("other", true);
  other.add_tables()->set_table("other");  // not table t
  ASSERT_TRUE(peers_->AddPeer(other).ok());
  ASSERT_TRUE(peers_->AddPeer(Peer("all", true)).ok());
  source_->Put(0, 30);
  ASSERT_TRUE(Eventually([&] { return sink_->Have(0, 30) == 30; })) << sink_->Have(0, 30);
  rpc::ListPeersResponse all = List();
  ASSERT_EQ(all.peers_size(), 2);
  EXPECT_EQ(all.peers(0).peer().id(), "all");
  EXPECT_EQ(all.peers(0).cells(), 30u);  // f only: `local` has no REPLICATION_SCOPE
  EXPECT_EQ(all.peers(1).peer().id(), "other");
  EXPECT_TRUE(Eventually([&] { return List().peers(1).lag_bytes() == 0; }));
  EXPECT_EQ(List().peers(1).cells(), 0u);
}

// What HBase's Admin and shell send for peers (MasterService, src/front/hbase/master_peers.cc),
// on a real HBase port over a standalone server's peers.
class HBasePeerCallsTest : public PeersTest {
 protected:
  void SetUp() override {
    PeersTest::SetUp();
    source_->admin = server::AdminService::ForStandalone(source_->catalog.get(), &source_->counters, peers_.get());
    port_ = testing::StartSinkPort(source_.get(), 0);
    master_ = std::make_unique<hbase::WireClient>(port_->port(), "MasterService");
  }
  void TearDown() override {
    master_.reset();
    port_->Shutdown();
    PeersTest::TearDown();
  }
  struct Answer {
    std::string exception, text, message;
  };
  Answer Call(std::string_view method, const google::protobuf::MessageLite& req) {
    Answer a;
    const uint32_t id = next_++;
    if (!master_->Call(id, method, req)) return Answer{"(send failed)", "", ""};
    absl::StatusOr<hbase::Answer> got = master_->Read();
    if (!got.ok()) return Answer{"(no answer)", std::string(got.status().message()), ""};
    if (got->header.has_exception()) {
      return Answer{got->header.exception().exception_class_name(), got->header.exception().stack_trace(), ""};
    }
    a.message = got->message;
    return a;
  }
  static hbase::AddReplicationPeerRequest Add(const std::string& id) {
    hbase::AddReplicationPeerRequest req;
    req.set_peer_id(id);
    req.mutable_peer_config()->set_clusterkey("zk1,zk2:2181:/hbase-b");
    req.mutable_peer_config()->set_replicate_all(true);
    req.mutable_peer_state()->set_state(hbase::ReplicationState::ENABLED);
    return req;
  }
  template <typename T>
  static T Parsed(const Answer& a) {
    EXPECT_EQ(a.exception, "") << a.text;
    T t;
    EXPECT_TRUE(t.ParseFromString(a.message));
    return t;
  }

  std::unique_ptr<hbase::HBaseFront> port_;
  std::unique_ptr<hbase::WireClient> master_;
  uint32_t next_ = 1;
};

TEST_F(HBasePeerCallsTest, HBasesPeerCallsKeepBasaltsPeersAndRefuseWhatBasaltCannotHonour) {
  hbase::AddReplicationPeerRequest dr = Add("dr");
  dr.mutable_peer_config()->set_replicate_all(false);
  hbase::TableCF* cf = dr.mutable_peer_config()->add_table_cfs();
  cf->mutable_table_name()->set_namespace_("default");
  cf->mutable_table_name()->set_qualifier("t");
  cf->add_families("f");
  dr.mutable_peer_state()->set_state(hbase::ReplicationState::DISABLED);
  EXPECT_GT(Parsed<hbase::AddReplicationPeerResponse>(Call("AddReplicationPeer", dr)).proc_id(), 0u);
  // Basalt's own view: the same peer.
  rpc::ListPeersResponse basalt = List();
  ASSERT_EQ(basalt.peers_size(), 1);
  EXPECT_EQ(basalt.peers(0).peer().cluster_key(), "zk1,zk2:2181:/hbase-b");
  EXPECT_FALSE(basalt.peers(0).peer().enabled());
  ASSERT_EQ(basalt.peers(0).peer().tables_size(), 1);
  EXPECT_EQ(basalt.peers(0).peer().tables(0).table(), "t");
  // HBase's view of it.
  auto listed = Parsed<hbase::ListReplicationPeersResponse>(Call("ListReplicationPeers", hbase::ListReplicationPeersRequest()));
  ASSERT_EQ(listed.peer_desc_size(), 1);
  EXPECT_EQ(listed.peer_desc(0).id(), "dr");
  EXPECT_EQ(listed.peer_desc(0).state().state(), hbase::ReplicationState::DISABLED);
  EXPECT_FALSE(listed.peer_desc(0).config().replicate_all());
  ASSERT_EQ(listed.peer_desc(0).config().table_cfs_size(), 1);
  EXPECT_EQ(listed.peer_desc(0).config().table_cfs(0).table_name().qualifier(), "t");
  EXPECT_EQ(listed.peer_desc(0).config().table_cfs(0).families(0), "f");
  hbase::ListReplicationPeersRequest matching;
  matching.set_regex("x.*");
  EXPECT_EQ(Parsed<hbase::ListReplicationPeersResponse>(Call("ListReplicationPeers", matching)).peer_desc_size(), 0);
  matching.set_regex("(");
  EXPECT_EQ(Call("ListReplicationPeers", matching).exception, "org.apache.hadoop.hbase.DoNotRetryIOException");

  // Enabled, then every table (set_peer_tableCFs / update_peer_config), then removed.
  hbase::EnableReplicationPeerRequest enable;
  enable.set_peer_id("dr");
  Parsed<hbase::EnableReplicationPeerResponse>(Call("EnableReplicationPeer", enable));
  hbase::GetReplicationPeerStateRequest state;
  state.set_peer_id("dr");
  EXPECT_TRUE(Parsed<hbase::GetReplicationPeerStateResponse>(Call("IsReplicationPeerEnabled", state)).is_enabled());
  hbase::UpdateReplicationPeerConfigRequest update;
  update.set_peer_id("dr");
  *update.mutable_peer_config() = Add("dr").peer_config();
  Parsed<hbase::UpdateReplicationPeerConfigResponse>(Call("UpdateReplicationPeerConfig", update));
  hbase::GetReplicationPeerConfigRequest get;
  get.set_peer_id("dr");
  auto config = Parsed<hbase::GetReplicationPeerConfigResponse>(Call("GetReplicationPeerConfig", get));
  EXPECT_TRUE(config.peer_config().replicate_all());
  EXPECT_EQ(config.peer_config().table_cfs_size(), 0);
  EXPECT_EQ(List().peers(0).state(), "SHIPPING");  // still enabled after the update

  // Refusals, each by HBase's class: an id taken, a peer missing, what Basalt cannot honour.
  Answer taken = Call("AddReplicationPeer", Add("dr"));
  EXPECT_EQ(taken.exception, "org.apache.hadoop.hbase.DoNotRetryIOException");
  EXPECT_NE(taken.text.find("exists already"), std::string::npos) << taken.text;
  std::vector<std::pair<std::string, std::function<void(hbase::ReplicationPeer*)>>> cannot = {
      {"SERIAL", [](hbase::ReplicationPeer* p) { p->set_serial(true); }},
      {"BANDWIDTH", [](hbase::ReplicationPeer* p) { p->set_bandwidth(1 << 20); }},
      {"plug-in", [](hbase::ReplicationPeer* p) { p->set_replicationendpointimpl("com.example.Endpoint"); }},
      {"CONFIG", [](hbase::ReplicationPeer* p) {
         hbase::NameStringPair* c = p->add_configuration();
         c->set_name("k");
         c->set_value("v");
       }},
      {"EXCLUDE", [](hbase::ReplicationPeer* p) { p->add_exclude_namespaces("app"); }},
      {"no table", [](hbase::ReplicationPeer* p) { p->set_replicate_all(false); }},
      {"cluster key", [](hbase::ReplicationPeer* p) { p->set_clusterkey("zk1"); }},
  };
  for (const auto& [why, change] : cannot) {
    hbase::AddReplicationPeerRequest bad = Add("bad");
    change(bad.mutable_peer_config());
    Answer a = Call("AddReplicationPeer", bad);
    EXPECT_EQ(a.exception, "org.apache.hadoop.hbase.DoNotRetryIOException") << why;
    EXPECT_NE(a.text.find(why), std::string::npos) << why << ": " << a.text;
  }
  hbase::AddReplicationPeerRequest other_ns = Add("bad");
  other_ns.mutable_peer_config()->set_replicate_all(false);
  other_ns.mutable_peer_config()->add_namespaces("app");
  // (A namespace's tables: Basalt's peers follow named tables, or all of them.)
  const Answer ns = Call("AddReplicationPeer", other_ns);
  EXPECT_EQ(ns.exception, "org.apache.hadoop.hbase.DoNotRetryIOException");
  EXPECT_NE(ns.text.find("NAMESPACES is not built"), std::string::npos) << ns.text;
  EXPECT_EQ(List().peers_size(), 1);

  hbase::RemoveReplicationPeerRequest remove;
  remove.set_peer_id("dr");
  Parsed<hbase::RemoveReplicationPeerResponse>(Call("RemoveReplicationPeer", remove));
  EXPECT_EQ(Call("RemoveReplicationPeer", remove).exception, "org.apache.hadoop.hbase.ReplicationPeerNotFoundException");
  EXPECT_EQ(Call("GetReplicationPeerConfig", get).exception, "org.apache.hadoop.hbase.ReplicationPeerNotFoundException");
  EXPECT_EQ(List().peers_size(), 0);
}

}  // namespace
}  // namespace basalt::replication
