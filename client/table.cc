// Table: the data operations over the network selector (Get/Mutate through a DataPath, the rest
// over gRPC), with the retry policy of client.h.
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/core.h"
#include "common/status.h"
#include "transport/grpc/stack_arena.h"

namespace basalt::client_internal {
namespace {

// Get t1/row1
std::string What(std::string_view op, const std::string& table, std::string_view row) {
  return absl::StrCat(AV(op), " ", table, "/", PrintableRow(row));
}

absl::Status EmptyRow() { return absl::InvalidArgumentError("empty row key"); }

// In a cluster, `done` after Core::NoteUnanswered for `region`.
PathCallback ForgetIfUnanswered(Core* core, std::string region, PathCallback done) {
  return [core, region = std::move(region), done = std::move(done)](absl::Status s) {
    core->NoteUnanswered(s, region);
    done(std::move(s));
  };
}

class TableImpl final : public Table {
 public:
  TableImpl(Core* core, std::string name) : core_(core), name_(std::move(name)) {}

  const std::string& name() const override { return name_; }

  absl::StatusOr<Result> Get(const basalt::Get& get) override {
    // Context strings are built only on failure: no allocation per successful call.
    auto what = [&] { return What("Get", name_, get.row); };
    if (get.row.empty()) return WithContext(EmptyRow(), what());
    rpc::GetRequest req;
    BuildGet(get, &req);
    StackArena<> arena;  // the reply's cells and strings; the values move into the Result
    rpc::GetResponse& resp = *arena.Create<rpc::GetResponse>();
    std::string to;
    absl::Status s = core_->Retry(true, [&](absl::Time deadline) -> absl::Status {
      BASALT_RETURN_IF_ERROR(core_->Route(name_, get.row, deadline, req.mutable_region(), &to));
      BASALT_ASSIGN_OR_RETURN(DataPath * path, core_->selector()->Select(OpKind::kGet, core_->Target(to)));
      resp.Clear();
      absl::Status got = path->Get(req, deadline, &resp);
      core_->NoteUnanswered(got, req.region());
      return got;
    });
    if (!s.ok()) return WithContext(s, what());
    return RowOf(std::move(*resp.mutable_row()), get.row);
  }

  absl::StatusOr<std::vector<Result>> Get(const std::vector<basalt::Get>& gets) override {
    // Up to kWindow Gets in flight through the async path; the state outlives this frame in
    // case a callback still holds it after the last Signal.
    constexpr int kWindow = 32;
    struct State {
      absl::Mutex mu;
      int in_flight ABSL_GUARDED_BY(mu) = 0;
      std::vector<absl::StatusOr<Result>> results;
    };
    auto state = std::make_shared<State>();
    state->results.resize(gets.size());
    for (size_t i = 0; i < gets.size(); i++) {
      {
        absl::MutexLock l(&state->mu);
        state->mu.Await(absl::Condition(
            +[](State* s) ABSL_NO_THREAD_SAFETY_ANALYSIS { return s->in_flight < kWindow; }, state.get()));
        state->in_flight++;
      }
      GetAsync(gets[i], [state, i](absl::StatusOr<Result> r) {
        absl::MutexLock l(&state->mu);
        state->results[i] = std::move(r);
        state->in_flight--;
      });
    }
    absl::MutexLock l(&state->mu);
    state->mu.Await(absl::Condition(
        +[](State* s) ABSL_NO_THREAD_SAFETY_ANALYSIS { return s->in_flight == 0; }, state.get()));
    std::vector<Result> out;
    out.reserve(gets.size());
    for (size_t i = 0; i < gets.size(); i++) {
      if (!state->results[i].ok()) {
        const absl::Status& s = state->results[i].status();
        return absl::Status(s.code(), absl::StrCat("Get #", i, " of ", gets.size(), ": ", s.message()));
      }
      out.push_back(std::move(*state->results[i]));
    }
    return out;
  }

  absl::Status Put(const basalt::Put& put) override { return Mutate("Put", put); }
  absl::Status Delete(const basalt::Delete& del) override { return Mutate("Delete", del); }
  absl::Status MutateRow(const RowMutations& mutations) override { return Mutate("MutateRow", mutations); }

  absl::StatusOr<std::vector<absl::Status>> Batch(const std::vector<RowMutationsBase>& rows) override {
    std::vector<absl::Status> statuses;
    std::vector<BatchPart> parts = SplitBatch(name_, rows, &statuses);
    for (size_t i = 0; i < rows.size(); i++) {
      if (!statuses[i].ok()) statuses[i] = WithContext(statuses[i], What("Batch", name_, rows[i].row));
    }
    bool answered = false;  // some part was answered
    for (BatchPart& part : parts) {
      const std::vector<size_t> sent = part.indices;
      // Each attempt sends the rows not yet answered, located afresh (SettleBatch keeps those a
      // region refused as not served).
      absl::Status s = core_->Retry(true, [&](absl::Time deadline) -> absl::Status {
        BASALT_RETURN_IF_ERROR(LocateBatch(core_, deadline, &part));
        BASALT_ASSIGN_OR_RETURN(GrpcPath * path, core_->Grpc(part.server));
        grpc::ClientContext ctx;
        SetDeadline(&ctx, deadline);
        rpc::BatchMutateResponse resp;
        absl::Status sent = FromGrpcStatus(path->data_stub()->BatchMutate(&ctx, part.request, &resp));
        if (!sent.ok()) return UnsentBatch(core_, &part, sent);
        return SettleBatch(core_, &part, resp, &statuses);
      });
      // Rows still refused keep their refusal. Any other failure fails the call while nothing of
      // it was applied; after that, it fails the rows not yet answered.
      if (!s.ok() && !IsNotServingRegion(s)) {
        if (!answered && part.indices.size() == sent.size()) {
          return WithContext(s, absl::StrCat("Batch ", name_, " (", rows.size(), " rows)"));
        }
        for (size_t i : part.indices) statuses[i] = s;
      }
      answered = true;
      for (size_t i : sent) {
        if (!statuses[i].ok()) statuses[i] = WithContext(statuses[i], What("Batch", name_, rows[i].row));
      }
    }
    return statuses;
  }

  absl::StatusOr<Result> Increment(const basalt::Increment& inc) override {
    return ReadModifyWrite<rpc::IncrementRequest, rpc::IncrementResponse>(
        "Increment", inc, "no columns to increment", &rpc::Basalt::Stub::Increment,
        [](const basalt::Increment::Column& c, rpc::IncrementRequest* req) {
          rpc::ColumnAmount* ca = req->add_columns();
          ca->set_family(c.family);
          ca->set_qualifier(c.qualifier);
          ca->set_amount(c.amount);
        });
  }

  absl::StatusOr<int64_t> IncrementColumnValue(std::string row, std::string family, std::string qualifier,
                                               int64_t amount) override {
    const std::string what = absl::StrCat(What("Increment", name_, row), " ", family, ":", qualifier);
    BASALT_ASSIGN_OR_RETURN(Result r, Increment(basalt::Increment(row).AddColumn(family, qualifier, amount)));
    std::optional<std::string_view> v = r.Value(family, qualifier);
    if (!v.has_value()) {
      return absl::InternalError(absl::StrCat(what, ": the server's answer lacks the column"));
    }
    return WithContextOr(DecodeCounter(*v), what);
  }

  absl::StatusOr<Result> Append(const basalt::Append& app) override {
    return ReadModifyWrite<rpc::AppendRequest, rpc::AppendResponse>(
        "Append", app, "no columns to append", &rpc::Basalt::Stub::Append,
        [](const basalt::Append::Column& c, rpc::AppendRequest* req) {
          rpc::ColumnValue* cv = req->add_columns();
          cv->set_family(c.family);
          cv->set_qualifier(c.qualifier);
          cv->set_value(c.value);
        });
  }

  absl::StatusOr<bool> CheckAndMutate(const basalt::CheckAndMutate& cam) override {
    const std::string what = What("CheckAndMutate", name_, cam.row);
    if (cam.row.empty()) return WithContext(EmptyRow(), what);
    if (cam.mutations.row != cam.row) {
      return WithContext(absl::InvalidArgumentError(absl::StrCat("the mutations are of row \"",
                                                                 PrintableRow(cam.mutations.row), "\"")),
                         what);
    }
    rpc::CheckAndMutateRequest req;
    req.set_table(name_);
    req.set_row(cam.row);
    rpc::Condition* cond = req.mutable_condition();
    cond->set_family(cam.family);
    cond->set_qualifier(cam.qualifier);
    cond->set_op(ToProto(cam.op));
    if (cam.op != CompareOp::kNotExists) cond->set_value(cam.value);
    absl::Status conv = ToProto(cam.mutations, req.mutable_mutation());
    if (!conv.ok()) return WithContext(conv, what);
    req.set_durability(ToProto(cam.mutations.durability));
    rpc::CheckAndMutateResponse resp;
    core_->SetNonce(req.mutable_nonce());
    absl::Status s = core_->CallRow(core_->RetryNonIdempotent(), name_, cam.row, req.mutable_region(),
                                    [&](GrpcPath* path, grpc::ClientContext* ctx) {
                                      resp.Clear();
                                      return path->data_stub()->CheckAndMutate(ctx, req, &resp);
                                    });
    if (!s.ok()) return WithContext(s, what);
    return resp.processed();
  }

  absl::StatusOr<std::unique_ptr<ResultScanner>> GetScanner(const basalt::Scan& scan) override {
    return OpenScanner(core_, name_, scan);
  }

  void GetAsync(basalt::Get get, Callback<absl::StatusOr<Result>> done) override {
    auto req = std::make_shared<rpc::GetRequest>();
    auto resp = std::make_shared<rpc::GetResponse>();
    BuildGet(get, req.get());
    absl::Status invalid = get.row.empty() ? EmptyRow() : absl::OkStatus();
    Core* core = core_;
    core_->RunAsync(
        true,
        [core, req, resp, invalid](absl::Time deadline, PathCallback on_done) -> absl::Status {
          BASALT_RETURN_IF_ERROR(invalid);
          std::string to;
          BASALT_RETURN_IF_ERROR(core->Route(req->table(), req->row(), deadline, req->mutable_region(), &to));
          BASALT_ASSIGN_OR_RETURN(DataPath * path, core->selector()->Select(OpKind::kGet, core->Target(to)));
          resp->Clear();
          if (core->cluster()) on_done = ForgetIfUnanswered(core, req->region(), std::move(on_done));
          path->GetAsync(req.get(), deadline, resp.get(), std::move(on_done));
          return absl::OkStatus();
        },
        [req, resp, done = std::move(done)](absl::Status s) {
          if (!s.ok()) {
            done(WithContext(s, What("Get", req->table(), req->row())));
          } else {
            done(RowOf(std::move(*resp->mutable_row()), req->row()));
          }
        });
  }

  void PutAsync(basalt::Put put, Callback<absl::Status> done) override {
    MutateAsync("Put", put, std::move(done));
  }
  void DeleteAsync(basalt::Delete del, Callback<absl::Status> done) override {
    MutateAsync("Delete", del, std::move(done));
  }

 private:
  // Increment and Append: one row's read-modify-write, carrying a nonce so that a retry applies
  // it once, answered with the cells it wrote. `fill` adds one of `op`'s columns to the request.
  template <class Req, class Resp, class Op, class Fill>
  absl::StatusOr<Result> ReadModifyWrite(const char* verb, const Op& op, const char* no_columns,
                                         grpc::Status (rpc::Basalt::Stub::*call)(grpc::ClientContext*, const Req&,
                                                                                Resp*),
                                         const Fill& fill) {
    const std::string what = What(verb, name_, op.row);
    if (op.row.empty()) return WithContext(EmptyRow(), what);
    if (op.columns.empty()) return WithContext(absl::InvalidArgumentError(no_columns), what);
    Req req;
    req.set_table(name_);
    req.set_row(op.row);
    req.set_durability(ToProto(op.durability));
    for (const auto& c : op.columns) fill(c, &req);
    Resp resp;
    core_->SetNonce(req.mutable_nonce());
    absl::Status s = core_->CallRow(core_->RetryNonIdempotent(), name_, op.row, req.mutable_region(),
                                    [&](GrpcPath* path, grpc::ClientContext* ctx) {
                                      resp.Clear();
                                      return (path->data_stub()->*call)(ctx, req, &resp);
                                    });
    if (!s.ok()) return WithContext(s, what);
    return RowOf(std::move(*resp.mutable_row()), op.row);
  }

  void BuildGet(const basalt::Get& get, rpc::GetRequest* req) const {
    req->set_table(name_);
    req->set_row(get.row);
    ToProto(get, req->mutable_read());
  }

  // A Result for `row`; an empty answer still names the row asked for.
  static Result RowOf(rpc::Row&& row, const std::string& asked) {
    Result r = FromProto(std::move(row));
    if (r.row().empty()) r.set_row(asked);
    return r;
  }

  absl::Status BuildMutate(const RowMutationsBase& m, rpc::MutateRequest* req) const {
    req->set_table(name_);
    if (m.row.empty()) return EmptyRow();
    req->set_durability(ToProto(m.durability));
    req->set_transaction(m.transaction);
    req->set_rollback(m.rollback);
    return ToProto(m, req->mutable_mutation());
  }

  absl::Status Mutate(std::string_view op, const RowMutationsBase& m) {
    auto what = [&] { return What(op, name_, m.row); };
    rpc::MutateRequest req;
    absl::Status conv = BuildMutate(m, &req);
    if (!conv.ok()) return WithContext(conv, what());
    core_->SetNonce(req.mutable_nonce());  // applied once, however often an attempt is sent
    std::string to;
    absl::Status s = core_->Retry(true, [&](absl::Time deadline) -> absl::Status {
      BASALT_RETURN_IF_ERROR(core_->Route(name_, m.row, deadline, req.mutable_region(), &to));
      BASALT_ASSIGN_OR_RETURN(DataPath * path, core_->selector()->Select(OpKind::kMutate, core_->Target(to)));
      absl::Status done = path->Mutate(req, deadline);
      core_->NoteUnanswered(done, req.region());
      return done;
    });
    if (!s.ok()) return WithContext(s, what());
    return s;
  }

  void MutateAsync(std::string_view op, const RowMutationsBase& m, Callback<absl::Status> done) {
    auto req = std::make_shared<rpc::MutateRequest>();
    auto resp = std::make_shared<rpc::MutateResponse>();
    absl::Status invalid = BuildMutate(m, req.get());
    if (invalid.ok()) core_->SetNonce(req->mutable_nonce());  // as the sync Mutate: applied once
    Core* core = core_;
    core_->RunAsync(
        true,
        [core, req, resp, invalid](absl::Time deadline, PathCallback on_done) -> absl::Status {
          BASALT_RETURN_IF_ERROR(invalid);
          std::string to;
          BASALT_RETURN_IF_ERROR(
              core->Route(req->table(), req->mutation().row(), deadline, req->mutable_region(), &to));
          BASALT_ASSIGN_OR_RETURN(DataPath * path, core->selector()->Select(OpKind::kMutate, core->Target(to)));
          if (core->cluster()) on_done = ForgetIfUnanswered(core, req->region(), std::move(on_done));
          path->MutateAsync(req.get(), deadline, resp.get(), std::move(on_done));
          return absl::OkStatus();
        },
        [op, req, done = std::move(done)](absl::Status s) {
          if (!s.ok()) s = WithContext(s, What(op, req->table(), req->mutation().row()));
          done(std::move(s));
        });
  }

  Core* const core_;
  const std::string name_;
};

}  // namespace

std::unique_ptr<Table> NewTable(Core* core, const std::string& name) {
  return std::make_unique<TableImpl>(core, name);
}

}  // namespace basalt::client_internal
