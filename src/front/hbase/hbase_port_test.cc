#include "src/front/hbase/hbase_port.h"

#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "proto/hbase/hbase_registry.pb.h"
#include "src/front/hbase/wire_client.h"

namespace basalt::hbase {
namespace {


// A port whose handler answers "Echo" at once (the request's cluster id back), keeps "Hold"
// calls for the test to answer, answers "Big" with a large reply, and drops "Drop".
class PortTest : public ::testing::Test {
 protected:
  void StartPort(HBasePort::Options o) {
    o.log = [](std::string_view) {};
    absl::StatusOr<std::unique_ptr<HBasePort>> port =
        HBasePort::Start(o, [this](Call call, std::unique_ptr<Responder> r) { Handle(std::move(call), std::move(r)); });
    ASSERT_TRUE(port.ok()) << port.status();
    port_ = *std::move(port);
  }

  void Handle(Call call, std::unique_ptr<Responder> r) {
    const std::string& method = call.header.method_name();
    GetClusterIdResponse resp;
    if (method == "Hold") {
      absl::MutexLock l(&mu_);
      held_.push_back(std::move(r));
      return;
    }
    if (method == "Drop") return;
    if (method == "Big") {
      resp.set_cluster_id(std::string(512 << 10, 'b'));
    } else {
      GetClusterIdResponse req;
      req.ParseFromString(call.param);
      resp.set_cluster_id(absl::StrCat(method, ":", req.cluster_id(), ":", r->connection_header().service_name()));
    }
    r->Send(EncodeResponse(r->call_id(), resp));
  }

  size_t Held() {
    absl::MutexLock l(&mu_);
    return held_.size();
  }
  void AnswerHeld(size_t i, const std::string& text) {
    absl::MutexLock l(&mu_);
    GetClusterIdResponse resp;
    resp.set_cluster_id(text);
    held_[i]->Send(EncodeResponse(held_[i]->call_id(), resp));
  }
  bool WaitFor(const std::function<bool()>& done) {
    for (int i = 0; i < 1000; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  static GetClusterIdResponse Text(const std::string& s) {
    GetClusterIdResponse m;
    m.set_cluster_id(s);
    return m;
  }
  static std::string ClusterIdOf(const Answer& a) {
    GetClusterIdResponse m;
    EXPECT_TRUE(m.ParseFromString(a.message));
    return m.cluster_id();
  }

  absl::Mutex mu_;
  std::vector<std::unique_ptr<Responder>> held_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<HBasePort> port_;
};

TEST_F(PortTest, PipelinedCallsAreAnsweredInAnyOrder) {
  StartPort({});
  WireClient c(port_->port(), "ClientService");
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Call(1, "Hold", Text("")));
  ASSERT_TRUE(c.Call(2, "Hold", Text("")));
  ASSERT_TRUE(c.Call(3, "Echo", Text("three")));
  absl::StatusOr<Answer> a = c.Read();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->header.call_id(), 3u);
  EXPECT_EQ(ClusterIdOf(*a), "Echo:three:ClientService");
  ASSERT_TRUE(WaitFor([&] { return Held() == 2; }));
  std::thread([&] { AnswerHeld(1, "second"); }).join();  // from another thread
  AnswerHeld(0, "first");
  a = c.Read();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->header.call_id(), 2u);
  EXPECT_EQ(ClusterIdOf(*a), "second");
  a = c.Read();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->header.call_id(), 1u);
  EXPECT_EQ(port_->counters().calls_in_flight.load(), 0u);
}

TEST_F(PortTest, CallsPastTheCapAreRefusedAsTooBusy) {
  HBasePort::Options o;
  o.max_calls_in_flight = 2;
  StartPort(o);
  WireClient c(port_->port(), "ClientService");
  ASSERT_TRUE(c.Call(1, "Hold", Text("")));
  ASSERT_TRUE(c.Call(2, "Hold", Text("")));
  ASSERT_TRUE(c.Call(3, "Echo", Text("x")));
  absl::StatusOr<Answer> a = c.Read();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->header.call_id(), 3u);
  ASSERT_TRUE(a->header.has_exception());
  EXPECT_EQ(a->header.exception().exception_class_name(), "org.apache.hadoop.hbase.CallQueueTooBigException");
  EXPECT_NE(a->header.exception().stack_trace().find("2 calls in flight"), std::string::npos)
      << a->header.exception().stack_trace();
  EXPECT_EQ(port_->counters().calls_refused_busy.load(), 1u);
  ASSERT_TRUE(WaitFor([&] { return Held() == 2; }));
  AnswerHeld(0, "one");
  ASSERT_TRUE(c.Read().ok());
  ASSERT_TRUE(c.Call(4, "Echo", Text("y")));
  a = c.Read();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(ClusterIdOf(*a), "Echo:y:ClientService");
}

TEST_F(PortTest, AnotherProtocolGetsAFatalConnectionErrorAndIsClosed) {
  StartPort({});
  WireClient c(port_->port(), "");
  ASSERT_TRUE(c.Write("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  absl::StatusOr<Answer> a = c.Read();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->header.call_id(), kConnectionCallId);
  EXPECT_EQ(a->header.exception().exception_class_name(),
            "org.apache.hadoop.hbase.ipc.FatalConnectionException");
  EXPECT_TRUE(c.ClosedByServer());
  // The port goes on serving others.
  WireClient d(port_->port(), "ClientService");
  ASSERT_TRUE(d.Call(1, "Echo", Text("z")));
  EXPECT_TRUE(d.Read().ok());
}

TEST_F(PortTest, ConnectionsPastTheCapAreRefusedSayingWhy) {
  HBasePort::Options o;
  o.max_connections = 1;
  StartPort(o);
  WireClient c(port_->port(), "ClientService");
  ASSERT_TRUE(c.Call(1, "Echo", Text("a")));
  ASSERT_TRUE(c.Read().ok());
  WireClient d(port_->port(), "");
  absl::StatusOr<Answer> a = d.Read();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_NE(a->header.exception().stack_trace().find("1 connections open (max_connections)"), std::string::npos)
      << a->header.exception().stack_trace();
  EXPECT_TRUE(d.ClosedByServer());
  EXPECT_EQ(port_->counters().connections_refused.load(), 1u);
}

TEST_F(PortTest, AClientThatStopsReadingIsNoLongerReadUntilItCatchesUp) {
  HBasePort::Options o;
  o.max_queued_reply_bytes = 1 << 20;
  StartPort(o);
  WireClient c(port_->port(), "ClientService");
  constexpr int kCalls = 64;  // 32 MiB of answers, far more than the socket buffers hold
  std::thread sender([&] {
    for (uint32_t i = 1; i <= kCalls; ++i) ASSERT_TRUE(c.Call(i, "Big", Text("")));
  });
  ASSERT_TRUE(WaitFor([&] { return port_->counters().reads_paused.load() >= 1; }));
  int answered = 0;
  for (; answered < kCalls; ++answered) {
    absl::StatusOr<Answer> a = c.Read();
    ASSERT_TRUE(a.ok()) << a.status() << " after " << answered;
    EXPECT_EQ(a->header.call_id(), static_cast<uint32_t>(answered + 1));
  }
  sender.join();
  EXPECT_EQ(answered, kCalls);
}

TEST_F(PortTest, AMalformedCallInAWholeFrameIsAnsweredAndTheConnectionGoesOn) {
  StartPort({});
  WireClient c(port_->port(), "ClientService");
  RequestHeader h;
  h.set_call_id(4);
  h.set_method_name("Echo");
  h.set_request_param(true);
  h.mutable_cell_block_meta()->set_length(10);  // but 3 bytes follow
  ASSERT_TRUE(c.Write(EncodeCall(h, Text("x").SerializeAsString(), "abc")));
  ASSERT_TRUE(c.Call(5, "Echo", Text("y")));
  absl::StatusOr<Answer> a = c.Read();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->header.call_id(), 4u);
  EXPECT_EQ(a->header.exception().exception_class_name(), "org.apache.hadoop.hbase.DoNotRetryIOException");
  a = c.Read();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->header.call_id(), 5u);
  EXPECT_EQ(ClusterIdOf(*a), "Echo:y:ClientService");
}

TEST_F(PortTest, ItsCountersAreOnMetrics) {
  StartPort({});
  metrics::Registry registry;
  port_->RegisterMetrics(&registry);
  WireClient c(port_->port(), "ClientService");
  ASSERT_TRUE(c.Call(1, "Echo", Text("a")));
  ASSERT_TRUE(c.Read().ok());
  const std::string text = registry.Render();
  EXPECT_NE(text.find("basalt_hbase_connections 1"), std::string::npos) << text;
  EXPECT_NE(text.find("basalt_hbase_calls_total 1"), std::string::npos) << text;
  EXPECT_NE(text.find("basalt_hbase_calls_in_flight 0"), std::string::npos) << text;
}

TEST_F(PortTest, ACallDroppedUnansweredGetsAnIOException) {
  StartPort({});
  WireClient c(port_->port(), "ClientService");
  ASSERT_TRUE(c.Call(9, "Drop", Text("")));
  absl::StatusOr<Answer> a = c.Read();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->header.call_id(), 9u);
  EXPECT_EQ(a->header.exception().exception_class_name(), "java.io.IOException");
}

TEST_F(PortTest, AnswersGivenAfterShutdownAreDropped) {
  StartPort({});
  WireClient c(port_->port(), "ClientService");
  ASSERT_TRUE(c.Call(1, "Hold", Text("")));
  ASSERT_TRUE(WaitFor([&] { return Held() == 1; }));
  port_->Shutdown();
  EXPECT_TRUE(c.ClosedByServer());
  AnswerHeld(0, "late");  // the connection is gone: nothing to write to, nothing breaks
  port_.reset();
}

}  // namespace
}  // namespace basalt::hbase
