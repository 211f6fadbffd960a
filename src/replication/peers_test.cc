// A standalone server's replication peers (peers.h) on real catalogues and a real loopback sink
// port: what add_peer, enable_peer, disable_peer, remove_peer and list_peers keep and do, the
// families and tables shipped, and the cluster keys taken.
#include "src/replication/peers.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
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
  for (const char* bad : {"", "zk1", "zk1:2181", "zk1:x:/hbase", "zk1:0:/hbase", ":2181:/hbase", "zk1:2181:hbase",
                          "zk1:2181:/", "zk1,,zk2:2181:/hbase", "zk1:2181:/hbase/"}) {
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
    o.find_sink = [port = front_->port()](const rpc::ReplicationPeer&) -> absl::StatusOr<std::string> {
      return absl::StrCat("127.0.0.1:", port);
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

}  // namespace
}  // namespace basalt::replication
