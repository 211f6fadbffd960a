// The server's work for one Get over verbs, wire taken out (no RDMA device needed): a request
// frame decoded, the store's Get from its memstore, the reply frame encoded from the engine's
// row, into the buffer the request came in (as a helper thread serves it from its shared
// receive buffer). Two ways side by side, the same request in the same run:
//
//   InPlace:  the server's path (verbs_front.h): the frame read in place (GetRequestView), the
//             store called from the view.
//   Protobuf: a GetRequest built from the frame on the way (GetRequestFromView, the same
//             set_* calls the decoder made before, then DataService::GetRow of the message):
//             the path before the frame was read in place.
//
// Arg: the columns the Get names (0: the whole row of 10 columns of 100 bytes, YCSB's record).
//
//   build/src/tools/bench/verbs-front-bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
//   valgrind --tool=callgrind --toggle-collect='*ServeInPlace*' --toggle-collect='*ServeProtobuf*'
//     --toggle-collect='basalt::verbs::DecodeRequest*' build/src/tools/bench/verbs-front-bench
//     --benchmark_filter='BM_InPlace/0$' --benchmark_min_time=0.3   (one line), then
//   callgrind_annotate --inclusive=yes --tree=caller: instructions per Get = the Serve function's
//     and DecodeRequest's inclusive Ir over their calls, which repeat exactly run to run.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "src/services/service.h"
#include "src/front/verbs_front.h"
#include "transport/verbs/frame.h"

namespace basalt::server {
namespace {

constexpr int kColumns = 10;

// A standalone server's services over a temporary data directory, one table "usertable" with
// one record.
class Rig {
 public:
  Rig() {
    char tmpl[] = "/tmp/verbs-front-bench-XXXXXX";
    dir_ = mkdtemp(tmpl) != nullptr ? tmpl : "";
    Catalog::Options o;
    o.data_dir = dir_ + "/data";
    auto tm = Catalog::Open(o);
    if (!tm.ok()) {
      error_ = tm.status().ToString();
      return;
    }
    tables_ = *std::move(tm);
    data_ = std::make_unique<DataService>(tables_.get(), ServerConfig{});
    std::unique_ptr<AdminService> admin = AdminService::ForStandalone(tables_.get(), &counters_);
    rpc::CreateTableRequest create;
    create.mutable_table()->set_name("usertable");
    create.mutable_table()->add_families()->set_name("f");
    rpc::CreateTableResponse created;
    if (absl::Status s = admin->CreateTable(create, &created); !s.ok()) {
      error_ = s.ToString();
      return;
    }
    rpc::MutateRequest put;
    put.set_table("usertable");
    put.mutable_mutation()->set_row("user6284781860667377211");
    for (int i = 0; i < kColumns; ++i) {
      rpc::Mutation* m = put.mutable_mutation()->add_mutations();
      m->set_family("f");
      m->set_qualifier(absl::StrCat("field", i));
      m->set_value(std::string(100, static_cast<char>('a' + i)));
    }
    rpc::MutateResponse unused;
    if (absl::Status s = data_->Mutate(put, &unused); !s.ok()) error_ = s.ToString();
    handlers_ = VerbsHandlersFor(data_.get(), nullptr);
  }
  ~Rig() {
    data_.reset();
    tables_.reset();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  const std::string& error() const { return error_; }
  DataService* data() { return data_.get(); }
  const verbs::VerbsHandlers& handlers() const { return handlers_; }

 private:
  std::string dir_, error_;
  ServerCounters counters_;
  std::unique_ptr<Catalog> tables_;
  std::unique_ptr<DataService> data_;
  verbs::VerbsHandlers handlers_;
};

// The request frame: the record's row, `columns` of its qualifiers named (0: the whole row).
std::vector<uint8_t> Frame(int columns) {
  rpc::GetRequest req;
  req.set_table("usertable");
  req.set_row("user6284781860667377211");
  req.mutable_read();
  if (columns > 0) {
    rpc::ColumnSelection* c = req.mutable_read()->add_columns();
    c->set_family("f");
    for (int i = 0; i < columns; ++i) c->add_qualifiers(absl::StrCat("field", i));
  }
  std::vector<uint8_t> frame(8192);
  absl::StatusOr<size_t> n = verbs::EncodeGetRequest(1, req, absl::MakeSpan(frame));
  frame.resize(n.ok() ? *n : 0);
  return frame;
}

template <class Serve>
void Run(benchmark::State& state, Serve serve) {
  Rig rig;
  if (!rig.error().empty()) {
    state.SkipWithError(rig.error().c_str());
    return;
  }
  const std::vector<uint8_t> frame = Frame(static_cast<int>(state.range(0)));
  std::vector<uint8_t> buffer(64 << 10);  // the shared receive buffer: request in, reply out
  verbs::DecodedRequest decoded;           // reused, as by a helper thread
  size_t reply_bytes = 0;
  for (auto _ : state) {
    std::copy(frame.begin(), frame.end(), buffer.begin());  // what the NIC's DMA does
    if (!verbs::DecodeRequest({buffer.data(), frame.size()}, &decoded).ok()) {
      state.SkipWithError("decode");
      break;
    }
    reply_bytes = serve(rig, decoded, absl::MakeSpan(buffer));
    benchmark::DoNotOptimize(buffer.data());
  }
  // A reply of the whole record (or the columns named) and nothing else: the two ways agree.
  state.counters["reply_bytes"] = static_cast<double>(reply_bytes);
}

// One Get each way, past the decode (named, and not inlined, for callgrind's --toggle-collect).
[[gnu::noinline]] size_t ServeInPlace(Rig& rig, const verbs::DecodedRequest& d, absl::Span<uint8_t> out) {
  return rig.handlers().get(nullptr, d.header.request_id, d.get, out, nullptr);
}

[[gnu::noinline]] size_t ServeProtobuf(Rig& rig, const verbs::DecodedRequest& d, absl::Span<uint8_t> out) {
  thread_local rpc::GetRequest req;  // reused, as the decoder reused the message it held
  verbs::GetRequestFromView(d.get, &req);
  const RowResult* row = nullptr;
  absl::Status s = rig.data()->GetRow(req, &row);
  const RowReply reply(row);
  return verbs::EncodeGetReplyRow(d.header.request_id, s, s.ok() ? &reply : nullptr, out);
}

void BM_InPlace(benchmark::State& state) { Run(state, ServeInPlace); }
BENCHMARK(BM_InPlace)->Arg(0)->Arg(1)->Arg(kColumns);

void BM_Protobuf(benchmark::State& state) { Run(state, ServeProtobuf); }
BENCHMARK(BM_Protobuf)->Arg(0)->Arg(1)->Arg(kColumns);

}  // namespace
}  // namespace basalt::server

BENCHMARK_MAIN();
