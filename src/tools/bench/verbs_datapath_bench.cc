// The verbs transport's per-call cost with the wire taken out (BENCHMARKS.md §7.3: ≤ 2 µs for the client's
// serialise, post, poll and deliver). Google Benchmark; runs on a host without an RDMA device.
//
// The wire is replaced where verbs itself dispatches: ibv_post_send, ibv_post_recv and
// ibv_poll_cq call through qp->context->ops / cq->context->ops, so a loopback ibv_context whose
// ops deliver a posted send to an in-memory "server" and queue the completions lets the real
// client code run unchanged: VerbsClient::Call (pool take/give, EncodeGetRequest into the
// endpoint's send half, Endpoint::PostSend with inline/selective signalling, batched receives,
// CompletionQueue::Wait, DecodeGetReply in place into an rpc::GetResponse, Endpoint::Replenish).
//
//   ClientGet / ClientPut: the server is a copy of a pre-encoded reply into the receive buffer
//     (what the peer's NIC DMA would do) with the request id patched in: the client's overhead.
//   RoundTripGet: the server runs the server's frame work too (DecodeRequest, a GetResponse of
//     one cell, EncodeGetReply): client and server datapath, engine and wire excluded.
//   ProtobufGet: the side-by-side reference, the least gRPC's client does for the same call
//     (serialise the GetRequest, parse the GetResponse), without gRPC's own machinery.
//
//   build/src/tools/bench/verbs-datapath-bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <infiniband/verbs.h>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "proto/basalt.pb.h"
#include "common/coding.h"
#include "transport/grpc/grpc_settings.h"
#include "transport/verbs/client.h"
#include "transport/verbs/frame.h"
#include "transport/verbs/datapath.h"

namespace basalt::verbs {
namespace {

// One endpoint's loopback wire: a fake device context whose ops are these functions.
struct Loopback {
  ibv_context ctx{};
  ibv_qp qp{};
  ibv_cq cq{};
  std::vector<uint8_t> buf;  // the endpoint's slice: [recv half | send half]
  uint64_t recv_addr = 0;
  uint32_t recv_len = 0;
  uint64_t recv_wr_id = 0;
  int recv_posted = 0;  // receives posted, all on the same buffer
  std::deque<ibv_wc> completions;
  // The peer: serves the request at (p, n) into (out, cap), returns the reply length.
  std::function<size_t(const uint8_t* p, size_t n, uint8_t* out, size_t cap)> serve;

  static Loopback* Of(ibv_qp* qp) { return static_cast<Loopback*>(qp->qp_context); }

  static int PostSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
    Loopback* l = Of(qp);
    const auto* req = reinterpret_cast<const uint8_t*>(wr->sg_list[0].addr);
    if (wr->send_flags & IBV_SEND_SIGNALED) {
      ibv_wc wc{};
      wc.wr_id = wr->wr_id;
      wc.status = IBV_WC_SUCCESS;
      wc.opcode = IBV_WC_SEND;
      l->completions.push_back(wc);
    }
    if (l->recv_posted == 0) {
      *bad = wr;
      return EINVAL;  // a real RC peer would RNR-retry; the client always pre-posts
    }
    size_t n = l->serve(req, wr->sg_list[0].length, reinterpret_cast<uint8_t*>(l->recv_addr), l->recv_len);
    --l->recv_posted;
    ibv_wc wc{};
    wc.wr_id = l->recv_wr_id;
    wc.status = IBV_WC_SUCCESS;
    wc.opcode = IBV_WC_RECV;
    wc.byte_len = static_cast<uint32_t>(n);
    l->completions.push_back(wc);
    return 0;
  }
  static int PostRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr**) {
    Loopback* l = Of(qp);
    l->recv_addr = wr->sg_list[0].addr;
    l->recv_len = wr->sg_list[0].length;
    l->recv_wr_id = wr->wr_id;
    for (; wr != nullptr; wr = wr->next) ++l->recv_posted;
    return 0;
  }
  static int PollCq(ibv_cq* cq, int n, ibv_wc* wc) {
    auto* l = static_cast<Loopback*>(cq->cq_context);
    int k = 0;
    while (k < n && !l->completions.empty()) {
      wc[k++] = l->completions.front();
      l->completions.pop_front();
    }
    return k;
  }

  Loopback() {
    ctx.ops.post_send = &PostSend;
    ctx.ops.post_recv = &PostRecv;
    ctx.ops.poll_cq = &PollCq;
    qp.context = &ctx;
    qp.qp_context = this;
    cq.context = &ctx;
    cq.cq_context = this;
    buf.resize(2 * kDefaultMessageBytes);
  }
};

// A client with one loopback endpoint (a single-threaded benchmark never needs two).
struct Rig {
  std::unique_ptr<Loopback> loop = std::make_unique<Loopback>();
  std::unique_ptr<VerbsClient> client;

  explicit Rig(decltype(Loopback::serve) serve) {
    loop->serve = std::move(serve);
    SharedChunk::Slice slice;
    slice.data = loop->buf.data();
    slice.size = loop->buf.size();
    auto ep = std::make_unique<Endpoint>(&loop->qp, slice, /*lkey=*/0, kWantedInline);
    if (!ep->Replenish(0).ok()) std::abort();
    std::vector<VerbsClient::LoopbackEndpoint> eps;
    eps.emplace_back(CompletionQueue::WrapUnowned(&loop->cq), std::move(ep));
    client = VerbsClient::WithEndpoints(std::move(eps), kDefaultMessageBytes, VerbsClientOptions{});
  }
};

rpc::GetRequest MakeGet() {
  rpc::GetRequest g;
  g.set_table("usertable");
  g.set_row("user4532187613214412");
  auto* c = g.mutable_read()->add_columns();
  c->set_family("cf");
  c->add_qualifiers("field0");
  return g;
}

rpc::GetResponse MakeGetResponse(size_t value_size) {
  rpc::GetResponse r;
  r.mutable_row()->set_row("user4532187613214412");
  auto* cell = r.mutable_row()->add_cells();
  cell->set_family("cf");
  cell->set_qualifier("field0");
  cell->set_timestamp(1763800000000);
  cell->set_value(std::string(value_size, 'v'));
  return r;
}

// The peer copies a reply encoded once and patches in the request's id.
decltype(Loopback::serve) CannedServer(std::string reply) {
  return [reply = std::move(reply)](const uint8_t* req, size_t, uint8_t* out, size_t) {
    std::memcpy(out, reply.data(), reply.size());
    std::memcpy(out + 8, req + 8, 8);  // the request id
    return reply.size();
  };
}

std::string EncodedGetReply(size_t value_size) {
  std::string out(2 * kDefaultMessageBytes, '\0');
  rpc::GetResponse r = MakeGetResponse(value_size);
  size_t n = EncodeGetReply(1, absl::OkStatus(), &r, {reinterpret_cast<uint8_t*>(out.data()), out.size()});
  out.resize(n);
  return out;
}

void BM_ClientGet(benchmark::State& state) {
  const size_t value_size = static_cast<size_t>(state.range(0));
  Rig rig(CannedServer(EncodedGetReply(value_size)));
  const rpc::GetRequest req = MakeGet();
  const absl::Time deadline = absl::InfiniteFuture();
  for (auto _ : state) {
    rpc::GetResponse resp;  // the caller's, as in Table::Get
    bool failed = false;
    absl::Status st = rig.client->Call(
        [&](uint64_t id, absl::Span<uint8_t> out) { return EncodeGetRequest(id, req, out); },
        [&](uint64_t id, absl::Span<const uint8_t> reply) { return DecodeGetReply(reply, id, &resp); }, deadline,
        &failed);
    if (!st.ok()) state.SkipWithError(std::string(st.message()).c_str());
    benchmark::DoNotOptimize(resp);
  }
}
BENCHMARK(BM_ClientGet)->Arg(1)->Arg(1024)->Arg(65536);

void BM_ClientPut(benchmark::State& state) {
  const size_t value_size = static_cast<size_t>(state.range(0));
  std::string reply(2 * kDefaultMessageBytes, '\0');
  reply.resize(EncodeMutateReply(1, absl::OkStatus(), {reinterpret_cast<uint8_t*>(reply.data()), reply.size()}));
  Rig rig(CannedServer(reply));
  rpc::MutateRequest req;
  req.set_table("usertable");
  req.mutable_mutation()->set_row("user4532187613214412");
  auto* m = req.mutable_mutation()->add_mutations();
  m->set_family("cf");
  m->set_qualifier("field0");
  m->set_value(std::string(value_size, 'v'));
  const absl::Time deadline = absl::InfiniteFuture();
  for (auto _ : state) {
    bool failed = false;
    absl::Status st = rig.client->Call(
        [&](uint64_t id, absl::Span<uint8_t> out) { return EncodeMutateRequest(id, req, out); },
        [&](uint64_t id, absl::Span<const uint8_t> r) { return DecodeMutateReply(r, id); }, deadline, &failed);
    if (!st.ok()) state.SkipWithError(std::string(st.message()).c_str());
  }
}
BENCHMARK(BM_ClientPut)->Arg(1)->Arg(1024)->Arg(65536);

void BM_RoundTripGet(benchmark::State& state) {
  const size_t value_size = static_cast<size_t>(state.range(0));
  const rpc::GetResponse canned = MakeGetResponse(value_size);
  Rig rig([&](const uint8_t* p, size_t n, uint8_t* out, size_t cap) -> size_t {
    DecodedRequest req;
    absl::Status st = DecodeRequest({p, n}, &req);
    rpc::GetResponse resp;
    if (st.ok()) resp = canned;  // the engine's answer (a copy, as the service builds one)
    return EncodeGetReply(req.header.request_id, st, &resp, {out, cap});
  });
  const rpc::GetRequest req = MakeGet();
  for (auto _ : state) {
    rpc::GetResponse resp;
    bool failed = false;
    absl::Status st = rig.client->Call(
        [&](uint64_t id, absl::Span<uint8_t> out) { return EncodeGetRequest(id, req, out); },
        [&](uint64_t id, absl::Span<const uint8_t> reply) { return DecodeGetReply(reply, id, &resp); },
        absl::InfiniteFuture(), &failed);
    if (!st.ok()) state.SkipWithError(std::string(st.message()).c_str());
    benchmark::DoNotOptimize(resp);
  }
}
BENCHMARK(BM_RoundTripGet)->Arg(1)->Arg(1024)->Arg(65536);

// The reference: protobuf serialise of the request and parse of the reply, nothing else.
void BM_ProtobufGet(benchmark::State& state) {
  const size_t value_size = static_cast<size_t>(state.range(0));
  const std::string reply_bytes = MakeGetResponse(value_size).SerializeAsString();
  const rpc::GetRequest req = MakeGet();
  std::string wire;
  for (auto _ : state) {
    wire.clear();
    req.SerializeToString(&wire);
    rpc::GetResponse resp;
    if (!resp.ParseFromString(reply_bytes)) state.SkipWithError("parse");
    benchmark::DoNotOptimize(wire);
    benchmark::DoNotOptimize(resp);
  }
}
BENCHMARK(BM_ProtobufGet)->Arg(1)->Arg(1024)->Arg(65536);

}  // namespace
}  // namespace basalt::verbs

int main(int argc, char** argv) {
  // As every Basalt binary does: Debian's Abseil checks lock order on every Mutex operation.
  basalt::DisableMutexDeadlockDetection();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
