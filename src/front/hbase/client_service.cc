#include "src/front/hbase/client_service.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "src/front/hbase/data_convert.h"
#include "src/front/hbase/filter_convert.h"

namespace basalt::hbase {
namespace {

constexpr char kKeyValueCodec[] = "org.apache.hadoop.hbase.codec.KeyValueCodec";

// Appends a result's cells to `block`; false (the block as it was) when one cannot go in a
// KeyValue (the reply then carries them inline).
bool AppendToBlock(const Result& r, std::string* block) {
  const size_t before = block->size();
  for (const Cell& c : r.cell()) {
    const BlockCell cell{c.row(), c.family(), c.qualifier(), static_cast<int64_t>(c.timestamp()), KeyValueType::kPut,
                         c.value()};
    if (!AppendCell(cell, block).ok()) {
      block->resize(before);
      return false;
    }
  }
  return true;
}

// Read replies carry their cells in a cell block when the client declared HBase's KeyValueCodec
// (the Java client does) and no compression: HBase's own reply form, which the client reads
// without decoding a protobuf message per cell.
bool CellBlocks(const ConnectionHeader& h) {
  return h.cell_block_codec_class() == kKeyValueCodec && !h.has_cell_block_compressor_class();
}

std::string GetAnswer(uint32_t id, GetResponse* resp, bool cell_blocks) {
  std::string block;
  if (cell_blocks && resp->has_result() && resp->result().cell_size() > 0 && AppendToBlock(resp->result(), &block)) {
    Result* r = resp->mutable_result();
    r->set_associated_cell_count(r->cell_size());
    r->clear_cell();
  }
  return EncodeResponse(id, *resp, block);
}

// A scan's rows as HBase sends them with a cell block: each result's cell count and partial flag,
// its cells in the block, no Result messages.
std::string ScanAnswer(uint32_t id, ScanResponse* resp, bool cell_blocks) {
  if (!cell_blocks || resp->results().empty()) return EncodeResponse(id, *resp);
  std::string block;
  for (const Result& r : resp->results()) {
    if (!AppendToBlock(r, &block)) return EncodeResponse(id, *resp);  // inline, the whole reply
  }
  for (const Result& r : resp->results()) {
    resp->add_cells_per_result(static_cast<uint32_t>(r.cell_size()));
    resp->add_partial_flag_per_result(r.partial());
  }
  resp->clear_results();
  return EncodeResponse(id, *resp, block);
}

absl::StatusOr<CellCursor> CellsOf(const Call& call) {
  if (call.cell_block.empty()) return CellCursor();
  BASALT_ASSIGN_OR_RETURN(std::vector<BlockCell> cells, DecodeCellBlock(call.cell_block));
  return CellCursor(std::move(cells));
}

absl::StatusOr<rpc::ReadOptions> ReadOf(const google::protobuf::RepeatedPtrField<Column>& columns,
                                        const TimeRange* range, uint32_t max_versions, bool cache_blocks,
                                        const Filter* filter) {
  BASALT_ASSIGN_OR_RETURN(rpc::ReadOptions read, ReadOptionsOf(columns, range, max_versions, cache_blocks));
  if (filter != nullptr) {
    BASALT_ASSIGN_OR_RETURN(*read.mutable_filter(), FilterOf(*filter));
  }
  return read;
}

absl::StatusOr<rpc::Condition> ConditionOf(const Condition& c) {
  if (c.has_filter()) {
    return absl::InvalidArgumentError("checkAndMutate with a filter is not supported by Basalt's HBase port yet");
  }
  const bool all_time = !c.has_time_range() || (c.time_range().from() == 0 &&
                                                 (!c.time_range().has_to() || c.time_range().to() == kLatestTimestamp));
  if (!all_time) {
    return absl::InvalidArgumentError("checkAndMutate with a time range is not supported by Basalt's HBase port");
  }
  rpc::Condition out;
  out.set_family(c.family());
  out.set_qualifier(c.qualifier());
  if (c.comparator().name() == "org.apache.hadoop.hbase.filter.NullComparator") {
    if (c.compare_type() != EQUAL) {
      return absl::InvalidArgumentError("checkAndMutate: a NullComparator condition other than EQUAL (ifNotExists)");
    }
    // HBase's ifNotExists holds for a missing column and for an empty value: Basalt's EQUAL with
    // an empty given value is exactly that (ConditionHolds).
    out.set_op(rpc::EQUAL);
    out.set_value("");
    return out;
  }
  BASALT_ASSIGN_OR_RETURN(rpc::Comparator cmp, ComparatorOf(c.comparator()));
  if (cmp.kind() != rpc::Comparator::BINARY) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkAndMutate compares with ", c.comparator().name(), ", which Basalt's HBase port does not support"));
  }
  BASALT_ASSIGN_OR_RETURN(rpc::CompareOp op, CheckOpOf(c.compare_type()));
  out.set_op(op);
  out.set_value(cmp.value());
  return out;
}

void SetException(const absl::Status& s, NameBytesPair* out) {
  const Exception e = ExceptionOf(s);
  out->set_name(e.class_name);
  out->set_value(e.message);
}

}  // namespace

ClientService::ClientService(const Options& options)
    : Service("ClientService"), options_(options), scanners_(options.scanners, options.data) {
  static constexpr Row<ClientService> kMethods[] = {
      {"Get", RunOn::kLoop, &ClientService::Get},
      {"Scan", RunOn::kLoop, &ClientService::Scan},
      {"Mutate", RunOn::kPool, &ClientService::Mutate},
      {"Multi", RunOn::kPool, &ClientService::Multi},
  };
  Serve(this, kMethods);
}

absl::StatusOr<NamedRegion> ClientService::Served(const RegionSpecifier& spec) const {
  BASALT_ASSIGN_OR_RETURN(NamedRegion region, RegionOf(spec));
  if (!region.meta && options_.data == nullptr) {
    return AsException(absl::UnavailableError(absl::StrCat("region ", absl::CHexEscape(spec.value()),
                                                           " is served by a region server, not by the master")),
                       kNotServingRegion);
  }
  if (region.meta && options_.meta == nullptr) {
    return AsException(absl::UnavailableError("hbase:meta is served by the active master, not by a region server"),
                       kNotServingRegion);
  }
  return region;
}

absl::Status ClientService::NotAdmitted(absl::Status why) const { return AsException(std::move(why), kNotServingRegion); }

void ClientService::Shutdown() { scanners_.Shutdown(); }

absl::Status ClientService::Admit(const Caller& caller, const std::string& table, bool write, int64_t count,
                                  int64_t bytes, Admission* a) {
  server::Quotas* q = options_.quotas;
  if (q == nullptr || q->empty()) return absl::OkStatus();
  server::QuotaCall call;
  call.user = caller.user();
  call.table = table;
  call.write = write;
  call.count = count;
  call.bytes = bytes;
  absl::Status s = q->Admit(call, &a->ticket);
  if (!s.ok()) return AsException(std::move(s), kRpcThrottling);
  a->call = call;
  a->admitted = true;
  a->read = !write;
  return absl::OkStatus();
}

void ClientService::RefundIfDenied(const absl::Status& s, Admission* a) {
  if (s.code() != absl::StatusCode::kPermissionDenied || !a->admitted) return;
  options_.quotas->Refund(a->ticket, a->call);
  a->admitted = false;
  a->read = false;
}

absl::StatusOr<std::string> ClientService::Settled(const std::function<absl::StatusOr<std::string>(Admission*)>& call) {
  Admission admission;
  absl::StatusOr<std::string> answer = call(&admission);
  if (!answer.ok()) RefundIfDenied(answer.status(), &admission);
  if (answer.ok() && admission.read) options_.quotas->Settle(admission.ticket, static_cast<int64_t>(answer->size()));
  return answer;
}

absl::StatusOr<std::string> ClientService::Get(const Request& r) {
  const Caller caller = CallerOf(r);
  return Settled([&](Admission* admission) -> absl::StatusOr<std::string> {
    GetRequest req;
    BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
    BASALT_ASSIGN_OR_RETURN(NamedRegion region, Served(req.region()));
    GetResponse resp;
    if (region.meta) {
      BASALT_RETURN_IF_ERROR(options_.meta->Get(req.get(), &resp));
    } else {
      BASALT_RETURN_IF_ERROR(Admit(caller, region.table, false, 1, 0, admission));
      BASALT_ASSIGN_OR_RETURN(*resp.mutable_result(), DoGet(caller, region, req.get()));
    }
    return GetAnswer(r.id(), &resp, CellBlocks(r.connection));
  });
}

absl::StatusOr<std::string> ClientService::Mutate(const Request& r) {
  MutateRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(NamedRegion region, Served(req.region()));
  if (region.meta) return absl::PermissionDeniedError("hbase:meta is read-only (Basalt keeps basalt:meta)");
  const Caller caller = CallerOf(r);
  Admission admission;  // (a write's: nothing to settle)
  BASALT_RETURN_IF_ERROR(Admit(caller, region.table, true, 1,
                               static_cast<int64_t>(r.call.param.size() + r.call.cell_block.size()), &admission));
  BASALT_ASSIGN_OR_RETURN(CellCursor cells, CellsOf(r.call));
  MutateResponse resp;
  const absl::Status done = DoMutate(caller, region, req.mutation(), req.has_condition() ? &req.condition() : nullptr,
                                     req.nonce_group(), &cells, &resp);
  if (!done.ok()) {
    RefundIfDenied(done, &admission);
    return done;
  }
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> ClientService::Multi(const Request& r) {
  MultiRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(CellCursor cells, CellsOf(r.call));
  MultiResponse resp;
  for (const RegionAction& action : req.regionaction()) {
    // Each region's actions take their own cells first, so that one that stops early (a refused
    // region, a throttled one, an atomic action that fails) leaves the next region its own cells.
    int n = 0;
    for (const Action& a : action.action()) {
      if (a.has_mutation()) n += std::max(0, a.mutation().associated_cell_count());
    }
    RegionActionResult* out = resp.add_regionactionresult();
    absl::StatusOr<std::vector<BlockCell>> own = cells.Take(n);
    if (!own.ok()) {
      SetException(own.status(), out->mutable_exception());
      continue;
    }
    int64_t cell_bytes = 0;  // what the quotas' write size counts, beside the actions
    for (const BlockCell& c : *own) {
      cell_bytes += static_cast<int64_t>(c.row.size() + c.family.size() + c.qualifier.size() + c.value.size());
    }
    CellCursor own_cells(*std::move(own));
    DoRegionAction(CallerOf(r), action, req.noncegroup(), cell_bytes, &own_cells, out);
  }
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> ClientService::Scan(const Request& r) {
  const Caller caller = CallerOf(r);
  return Settled([&](Admission* admission) -> absl::StatusOr<std::string> {
    ScanRequest req;
    BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
    ScanResponse resp;
    const bool cell_blocks = CellBlocks(r.connection);
    if (req.has_region()) {
      BASALT_ASSIGN_OR_RETURN(NamedRegion region, Served(req.region()));
      if (region.meta) {
        BASALT_RETURN_IF_ERROR(options_.meta->Scan(req, &resp));
        return ScanAnswer(r.id(), &resp, cell_blocks);
      }
      if (req.has_scan()) {
        BASALT_RETURN_IF_ERROR(Admit(caller, region.table, false, 1, 0, admission));
        const hbase::Scan& scan = req.scan();
        BASALT_ASSIGN_OR_RETURN(rpc::ReadOptions read,
                                ReadOf(scan.column(), scan.has_time_range() ? &scan.time_range() : nullptr,
                                       scan.max_versions(), scan.cache_blocks(), scan.has_filter() ? &scan.filter() : nullptr));
        BASALT_RETURN_IF_ERROR(scanners_.Open(region, req, std::move(read), scanners_.Deadline(r.call, req),
                                              [&](rpc::ScanRequest* s) { return caller.Check(s); },
                                              std::string(caller.user()), &resp));
        return ScanAnswer(r.id(), &resp, cell_blocks);
      }
    }
    BASALT_RETURN_IF_ERROR(scanners_.Next(
        req, scanners_.Deadline(r.call, req), caller.user(),
        [&](const std::string& table) { return Admit(caller, table, false, 1, 0, admission); }, &resp));
    return ScanAnswer(r.id(), &resp, cell_blocks);
  });
}

absl::StatusOr<Result> ClientService::DoGet(const Caller& caller, const NamedRegion& region, const hbase::Get& get) {
  if (get.closest_row_before()) {
    return absl::InvalidArgumentError("Get.closestRowBefore is not supported by Basalt's HBase port");
  }
  rpc::GetRequest g;
  g.set_table(region.table);
  g.set_row(get.row());
  g.set_region(region.region);
  BASALT_ASSIGN_OR_RETURN(*g.mutable_read(), ReadOf(get.column(), get.has_time_range() ? &get.time_range() : nullptr,
                                                    get.max_versions(), get.cache_blocks(),
                                                    get.has_filter() ? &get.filter() : nullptr));
  BASALT_RETURN_IF_ERROR(caller.Check(&g));
  rpc::GetResponse resp;
  BASALT_RETURN_IF_ERROR(options_.data->Get(g, &resp));
  Result result;
  if (get.existence_only()) {
    result.set_exists(resp.row().cells_size() > 0);
  } else {
    AppendResult(resp.row(), &result);
  }
  return result;
}

absl::Status ClientService::DoMutate(const Caller& caller, const NamedRegion& region, const MutationProto& m,
                                     const Condition* condition, uint64_t nonce_group, CellCursor* cells,
                                     MutateResponse* resp) {
  rpc::Nonce nonce;
  if (m.has_nonce()) {
    nonce.set_group(nonce_group);
    nonce.set_nonce(m.nonce());
  }
  if (condition != nullptr &&
      (m.mutate_type() == MutationProto::INCREMENT || m.mutate_type() == MutationProto::APPEND)) {
    // (It would otherwise be applied whatever the condition, and answered as not applied.)
    return absl::InvalidArgumentError(
        "checkAndMutate of an Increment or an Append is not supported by Basalt's HBase port");
  }
  switch (m.mutate_type()) {
    case MutationProto::INCREMENT: {
      rpc::IncrementRequest req;
      req.set_table(region.table);
      req.set_region(region.region);
      *req.mutable_nonce() = nonce;
      BASALT_RETURN_IF_ERROR(IncrementOf(m, cells, &req));
      BASALT_RETURN_IF_ERROR(caller.Check(&req));
      rpc::IncrementResponse out;
      BASALT_RETURN_IF_ERROR(options_.data->Increment(req, &out));
      AppendResult(out.row(), resp->mutable_result());
      return absl::OkStatus();
    }
    case MutationProto::APPEND: {
      rpc::AppendRequest req;
      req.set_table(region.table);
      req.set_region(region.region);
      *req.mutable_nonce() = nonce;
      BASALT_RETURN_IF_ERROR(AppendOf(m, cells, &req));
      BASALT_RETURN_IF_ERROR(caller.Check(&req));
      rpc::AppendResponse out;
      BASALT_RETURN_IF_ERROR(options_.data->Append(req, &out));
      AppendResult(out.row(), resp->mutable_result());
      return absl::OkStatus();
    }
    default:
      break;
  }
  rpc::RowMutations mutations;
  BASALT_RETURN_IF_ERROR(RowMutationsOf(m, cells, &mutations));
  if (condition != nullptr) {
    rpc::CheckAndMutateRequest req;
    req.set_table(region.table);
    req.set_region(region.region);
    req.set_row(condition->row());
    BASALT_ASSIGN_OR_RETURN(*req.mutable_condition(), ConditionOf(*condition));
    *req.mutable_mutation() = std::move(mutations);
    req.set_durability(DurabilityOf(m.durability()));
    *req.mutable_nonce() = nonce;
    BASALT_RETURN_IF_ERROR(caller.Check(&req));
    rpc::CheckAndMutateResponse out;
    BASALT_RETURN_IF_ERROR(options_.data->CheckAndMutate(req, &out));
    resp->set_processed(out.processed());
    return absl::OkStatus();
  }
  rpc::MutateRequest req;
  req.set_table(region.table);
  req.set_region(region.region);
  *req.mutable_mutation() = std::move(mutations);
  req.set_durability(DurabilityOf(m.durability()));
  *req.mutable_nonce() = nonce;
  BASALT_RETURN_IF_ERROR(caller.Check(&req));
  rpc::MutateResponse out;
  BASALT_RETURN_IF_ERROR(options_.data->Mutate(req, &out));
  resp->set_processed(true);
  return absl::OkStatus();
}

void ClientService::DoRegionAction(const Caller& caller, const RegionAction& action, uint64_t nonce_group,
                                   int64_t cell_bytes, CellCursor* cells, RegionActionResult* out) {
  absl::StatusOr<NamedRegion> region = Served(action.region());
  if (region.ok() && region->meta) region = absl::PermissionDeniedError("hbase:meta is read-only");
  if (!region.ok()) {
    SetException(region.status(), out->mutable_exception());
    return;
  }
  if (caller.id != nullptr) {
    // Each action is checked as it runs (and a refused one answered so); one who holds nothing
    // on the table is refused before the quotas count it.
    if (absl::Status s = caller.access->CheckAnyOn(*caller.id, "Multi", region->table); !s.ok()) {
      SetException(s, out->mutable_exception());
      return;
    }
  }
  {
    bool writes = false;
    for (const Action& a : action.action()) writes |= a.has_mutation();
    Admission admission;
    absl::Status admitted = Admit(caller, region->table, writes, std::max(1, action.action_size()),
                                  writes ? static_cast<int64_t>(action.ByteSizeLong()) + cell_bytes : 0, &admission);
    if (!admitted.ok()) {
      SetException(admitted, out->mutable_exception());
      return;
    }
  }
  if (action.atomic() || action.has_condition()) {
    // One row's mutations, all or none (mutateRow, checkAndMutate of RowMutations).
    absl::Status s = AtomicActions(caller, *region, action, cells, out);
    if (!s.ok()) {
      out->clear_resultorexception();
      SetException(s, out->mutable_exception());
    }
    return;
  }
  BatchActions(caller, *region, action, nonce_group, cells, out);
}

void ClientService::BatchActions(const Caller& caller, const NamedRegion& region, const RegionAction& action,
                                 uint64_t nonce_group, CellCursor* cells, RegionActionResult* out) {
  // Puts and Deletes go to the region in one batch (one log sync); the rest one by one.
  rpc::BatchMutateRequest batch;
  batch.set_table(region.table);
  std::vector<std::pair<uint32_t, int>> batched;  // action index, its result's place
  for (const Action& a : action.action()) {
    ResultOrException* r = out->add_resultorexception();
    r->set_index(a.index());
    absl::Status s;
    if (a.has_get()) {
      absl::StatusOr<Result> got = DoGet(caller, region, a.get());
      if (got.ok()) *r->mutable_result() = *std::move(got);
      s = got.status();
    } else if (a.has_mutation() && (a.mutation().mutate_type() == MutationProto::PUT ||
                                    a.mutation().mutate_type() == MutationProto::DELETE)) {
      s = RowMutationsOf(a.mutation(), cells, batch.add_rows());
      if (s.ok()) {
        batched.emplace_back(a.index(), out->resultorexception_size() - 1);
      } else {
        batch.mutable_rows()->RemoveLast();
      }
      r->mutable_result();
    } else if (a.has_mutation()) {
      MutateResponse resp;
      s = DoMutate(caller, region, a.mutation(), nullptr, nonce_group, cells, &resp);
      if (s.ok()) *r->mutable_result() = resp.result();
    } else {
      s = absl::InvalidArgumentError("a coprocessor call is not supported by Basalt's HBase port");
    }
    if (!s.ok()) {
      r->clear_result();
      SetException(s, r->mutable_exception());
    }
  }
  if (batch.rows().empty()) return;
  if (!region.region.empty()) {
    rpc::RegionRun* run = batch.add_regions();
    run->set_region(region.region);
    run->set_rows(static_cast<uint32_t>(batch.rows_size()));
  }
  rpc::BatchMutateResponse resp;
  absl::Status s = caller.Check(&batch);
  if (s.ok()) s = options_.data->BatchMutate(batch, &resp);
  for (size_t i = 0; i < batched.size(); ++i) {
    ResultOrException* r = out->mutable_resultorexception(batched[i].second);
    absl::Status row = s;
    if (s.ok() && static_cast<int>(i) < resp.results_size() && resp.results(static_cast<int>(i)).code() != 0) {
      const rpc::RowStatus& rs = resp.results(static_cast<int>(i));
      row = absl::Status(static_cast<absl::StatusCode>(rs.code()), rs.message());
      if (!rs.not_serving_region().empty()) {
        row = absl::Status(absl::StatusCode::kUnavailable, rs.message());
        SetException(row, r->mutable_exception());
        r->mutable_exception()->set_name(kNotServingRegion);
        r->clear_result();
        continue;
      }
    }
    if (!row.ok()) {
      r->clear_result();
      SetException(row, r->mutable_exception());
    }
  }
}

absl::Status ClientService::AtomicActions(const Caller& caller, const NamedRegion& region, const RegionAction& action,
                                          CellCursor* cells, RegionActionResult* out) {
  rpc::RowMutations all;
  for (const Action& a : action.action()) {
    if (!a.has_mutation() || (a.mutation().mutate_type() != MutationProto::PUT &&
                              a.mutation().mutate_type() != MutationProto::DELETE)) {
      return absl::InvalidArgumentError("an atomic row mutation of other than Puts and Deletes is not supported");
    }
    rpc::RowMutations one;
    BASALT_RETURN_IF_ERROR(RowMutationsOf(a.mutation(), cells, &one));
    if (!all.row().empty() && all.row() != one.row()) {
      return absl::InvalidArgumentError("an atomic row mutation spans more than one row");
    }
    all.set_row(one.row());
    for (rpc::Mutation& m : *one.mutable_mutations()) *all.add_mutations() = std::move(m);
    // As HBase answers an atomic action: one entry per action, by its place in the action, with
    // no result (the client reads RegionActionResult.processed).
    out->add_resultorexception()->set_index(static_cast<uint32_t>(out->resultorexception_size() - 1));
  }
  if (action.has_condition()) {
    rpc::CheckAndMutateRequest req;
    req.set_table(region.table);
    req.set_region(region.region);
    req.set_row(action.condition().row());
    BASALT_ASSIGN_OR_RETURN(*req.mutable_condition(), ConditionOf(action.condition()));
    *req.mutable_mutation() = std::move(all);
    BASALT_RETURN_IF_ERROR(caller.Check(&req));
    rpc::CheckAndMutateResponse resp;
    BASALT_RETURN_IF_ERROR(options_.data->CheckAndMutate(req, &resp));
    out->set_processed(resp.processed());
    return absl::OkStatus();
  }
  rpc::MutateRequest req;
  req.set_table(region.table);
  req.set_region(region.region);
  *req.mutable_mutation() = std::move(all);
  BASALT_RETURN_IF_ERROR(caller.Check(&req));
  rpc::MutateResponse resp;
  BASALT_RETURN_IF_ERROR(options_.data->Mutate(req, &resp));
  out->set_processed(true);
  return absl::OkStatus();
}

}  // namespace basalt::hbase
