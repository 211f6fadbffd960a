// The operation builders of client.h, Result::Value and the counter encoding: pure code, no I/O.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "basalt/client.h"
#include "common/coding.h"

namespace basalt {

std::optional<std::string_view> Result::Value(std::string_view family, std::string_view qualifier) const {
  // Cells are timestamp-descending within a column, so the first match is the newest; a Result
  // built by hand may be unordered, so keep the newest of all matches.
  const KeyValue* best = nullptr;
  for (const KeyValue& kv : cells_) {
    if (kv.family == family && kv.qualifier == qualifier && (best == nullptr || kv.timestamp > best->timestamp)) {
      best = &kv;
    }
  }
  if (best == nullptr) return std::nullopt;
  return std::string_view(best->value);
}

namespace {

// HBase's Get/Scan addFamily: the whole family, replacing any columns picked before.
void AddFamilyTo(std::vector<ColumnRef>* columns, std::string family) {
  for (ColumnRef& c : *columns) {
    if (c.family == family) {
      c.qualifiers.clear();
      return;
    }
  }
  columns->push_back(ColumnRef{std::move(family), {}});
}

// HBase's addColumn: narrows a whole-family selection to its columns.
void AddColumnTo(std::vector<ColumnRef>* columns, std::string family, std::string qualifier) {
  for (ColumnRef& c : *columns) {
    if (c.family == family) {
      if (std::find(c.qualifiers.begin(), c.qualifiers.end(), qualifier) == c.qualifiers.end()) {
        c.qualifiers.push_back(std::move(qualifier));
      }
      return;
    }
  }
  columns->push_back(ColumnRef{std::move(family), {std::move(qualifier)}});
}

CellMutation MakeCell(CellMutation::Kind kind, std::string family, std::string qualifier, int64_t ts,
                      std::string value = {}) {
  CellMutation m;
  m.kind = kind;
  m.family = std::move(family);
  m.qualifier = std::move(qualifier);
  m.timestamp = ts;
  m.value = std::move(value);
  return m;
}

}  // namespace

Get& Get::AddFamily(std::string family) {
  AddFamilyTo(&columns, std::move(family));
  return *this;
}

Get& Get::AddColumn(std::string family, std::string qualifier) {
  AddColumnTo(&columns, std::move(family), std::move(qualifier));
  return *this;
}

Scan& Scan::AddFamily(std::string family) {
  AddFamilyTo(&columns, std::move(family));
  return *this;
}

Scan& Scan::AddColumn(std::string family, std::string qualifier) {
  AddColumnTo(&columns, std::move(family), std::move(qualifier));
  return *this;
}

Put& Put::Add(std::string family, std::string qualifier, std::string value, int64_t ts) {
  mutations.push_back(
      MakeCell(CellMutation::Kind::kPut, std::move(family), std::move(qualifier), ts, std::move(value)));
  return *this;
}

Delete& Delete::AddColumn(std::string family, std::string qualifier, int64_t ts) {
  mutations.push_back(MakeCell(CellMutation::Kind::kDelete, std::move(family), std::move(qualifier), ts));
  return *this;
}

Delete& Delete::AddColumns(std::string family, std::string qualifier, int64_t ts) {
  mutations.push_back(MakeCell(CellMutation::Kind::kDeleteColumn, std::move(family), std::move(qualifier), ts));
  return *this;
}

Delete& Delete::AddFamily(std::string family, int64_t ts) {
  mutations.push_back(MakeCell(CellMutation::Kind::kDeleteFamily, std::move(family), {}, ts));
  return *this;
}

RowMutations& RowMutations::Add(const RowMutationsBase& m) {
  if (m.has_foreign_row() && !has_foreign_row_) {  // a RowMutations that was itself given a wrong row
    has_foreign_row_ = true;
    foreign_row_ = m.foreign_row();
  }
  if (m.row != row) {
    if (!has_foreign_row_) {
      has_foreign_row_ = true;
      foreign_row_ = m.row;
    }
    return *this;
  }
  if (m.mutations.empty() && m.deletes_row_when_empty) {
    mutations.push_back(MakeCell(CellMutation::Kind::kDeleteRow, {}, {}, kLatestTimestamp));
  } else {
    mutations.insert(mutations.end(), m.mutations.begin(), m.mutations.end());
  }
  return *this;
}

Increment& Increment::AddColumn(std::string family, std::string qualifier, int64_t amount) {
  columns.push_back(Column{std::move(family), std::move(qualifier), amount});
  return *this;
}

Append& Append::Add(std::string family, std::string qualifier, std::string value) {
  columns.push_back(Column{std::move(family), std::move(qualifier), std::move(value)});
  return *this;
}

CheckAndMutate CheckAndMutate::IfEquals(std::string row, std::string family, std::string qualifier,
                                        std::string value) {
  CheckAndMutate cam;
  cam.mutations = RowMutations(row);
  cam.row = std::move(row);
  cam.family = std::move(family);
  cam.qualifier = std::move(qualifier);
  cam.op = CompareOp::kEqual;
  cam.value = std::move(value);
  return cam;
}

CheckAndMutate CheckAndMutate::IfNotExists(std::string row, std::string family, std::string qualifier) {
  CheckAndMutate cam;
  cam.mutations = RowMutations(row);
  cam.row = std::move(row);
  cam.family = std::move(family);
  cam.qualifier = std::move(qualifier);
  cam.op = CompareOp::kNotExists;
  return cam;
}

CheckAndMutate& CheckAndMutate::Then(const RowMutationsBase& m) {
  // A CheckAndMutate filled in by hand may not have set mutations.row yet.
  if (mutations.row.empty() && mutations.mutations.empty() && !mutations.has_foreign_row()) {
    mutations.row = row;
  }
  mutations.Add(m);
  return *this;
}

std::string EncodeCounter(int64_t v) { return Fixed64BE(static_cast<uint64_t>(v)); }

absl::StatusOr<int64_t> DecodeCounter(std::string_view bytes) {
  if (bytes.size() != 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("counter value is ", bytes.size(), " bytes, expected 8 (big-endian int64)"));
  }
  return static_cast<int64_t>(DecodeFixed64BE(bytes.data()));
}

}  // namespace basalt
