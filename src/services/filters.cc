#include "src/services/filters.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "re2/re2.h"
#include "storage/region.h"

namespace basalt {
namespace {

using CellAction = ReadFilter::CellAction;
constexpr int kMaxDepth = 32;
// Bounds on what one request may make the server build (docs/DESIGN.md §12): a regex compiles to up to
// kRegexMemory (RE2's max_mem: its program and its DFA cache), so these cap a request at about
// kMaxRegexes MiB, whatever it carries.
constexpr int kMaxFilters = 1024;
constexpr int kMaxRegexes = 16;
constexpr size_t kMaxRegexBytes = 4096;
constexpr int64_t kRegexMemory = 1 << 20;

// InvalidArgument when the tree under `f` has more than kMaxFilters filters or kMaxRegexes
// regex comparators (counted into *filters, *regexes), or a regex longer than kMaxRegexBytes.
absl::Status CheckBounds(const rpc::Filter& f, int* filters, int* regexes) {
  if (++*filters > kMaxFilters) {
    return absl::InvalidArgumentError(absl::StrCat("a request's filter may hold at most ", kMaxFilters, " filters"));
  }
  if (f.has_comparator() && f.comparator().kind() == rpc::Comparator::REGEX) {
    if (++*regexes > kMaxRegexes) {
      return absl::InvalidArgumentError(
          absl::StrCat("a request's filter may hold at most ", kMaxRegexes, " regex comparators"));
    }
    if (f.comparator().value().size() > kMaxRegexBytes) {
      return absl::InvalidArgumentError(absl::StrCat("a regex comparator is ", f.comparator().value().size(),
                                                     " bytes long; at most ", kMaxRegexBytes, " are taken"));
    }
  }
  for (const rpc::Filter& c : f.filters()) BASALT_RETURN_IF_ERROR(CheckBounds(c, filters, regexes));
  return absl::OkStatus();
}

const char* KindName(rpc::Filter::Kind k) { return rpc::Filter::Kind_Name(k).c_str(); }

// `bytes OP comparand`, as HBase's CompareFilter with one of its four comparators.
class Comparison {
 public:
  static absl::StatusOr<Comparison> Make(rpc::Filter::Kind filter, rpc::FilterOp op, const rpc::Comparator& c) {
    Comparison cmp;
    cmp.op_ = op;
    cmp.kind_ = c.kind();
    cmp.value_ = c.value();
    if (op == rpc::FILTER_NO_OP || !rpc::FilterOp_IsValid(op)) {
      return absl::InvalidArgumentError(absl::StrCat(KindName(filter), ": op ", op, " is not a comparison"));
    }
    switch (c.kind()) {
      case rpc::Comparator::BINARY:
      case rpc::Comparator::BINARY_PREFIX:
        return cmp;
      case rpc::Comparator::REGEX:
      case rpc::Comparator::SUBSTRING:
        break;
      default:
        return absl::InvalidArgumentError(absl::StrCat(KindName(filter), ": unknown comparator ", c.kind()));
    }
    if (op != rpc::FILTER_EQUAL && op != rpc::FILTER_NOT_EQUAL) {
      return absl::InvalidArgumentError(absl::StrCat(KindName(filter), ": a ",
                                                     rpc::Comparator::Kind_Name(c.kind()),
                                                     " comparator takes = or != only"));
    }
    if (c.kind() == rpc::Comparator::SUBSTRING) {
      for (char& ch : cmp.value_) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      return cmp;
    }
    RE2::Options o;
    o.set_encoding(RE2::Options::EncodingLatin1);  // bytes, not UTF-8
    o.set_dot_nl(true);                            // HBase compiles with DOTALL
    o.set_log_errors(false);
    o.set_max_mem(kRegexMemory);  // a larger program fails to compile ("pattern too large")
    cmp.re_ = std::make_shared<RE2>(c.value(), o);
    if (!cmp.re_->ok()) {
      return absl::InvalidArgumentError(absl::StrCat(KindName(filter), ": bad regex '", c.value(),
                                                     "': ", cmp.re_->error()));
    }
    return cmp;
  }

  bool Passes(std::string_view bytes) const {
    int c = 0;
    switch (kind_) {
      case rpc::Comparator::BINARY:
        c = CompareBytes(bytes, value_);
        break;
      case rpc::Comparator::BINARY_PREFIX:
        c = CompareBytes(bytes.substr(0, value_.size()), value_);
        break;
      case rpc::Comparator::REGEX:
        return RE2::PartialMatch(re2::StringPiece(bytes.data(), bytes.size()), *re_) == (op_ == rpc::FILTER_EQUAL);
      default:
        return ContainsIgnoringCase(bytes) == (op_ == rpc::FILTER_EQUAL);
    }
    switch (op_) {
      case rpc::FILTER_LESS: return c < 0;
      case rpc::FILTER_LESS_OR_EQUAL: return c <= 0;
      case rpc::FILTER_EQUAL: return c == 0;
      case rpc::FILTER_NOT_EQUAL: return c != 0;
      case rpc::FILTER_GREATER_OR_EQUAL: return c >= 0;
      default: return c > 0;
    }
  }

 private:
  bool ContainsIgnoringCase(std::string_view bytes) const {
    auto lower_eq = [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; };
    return value_.empty() ||
           std::search(bytes.begin(), bytes.end(), value_.begin(), value_.end(), lower_eq) != bytes.end();
  }

  rpc::FilterOp op_ = rpc::FILTER_EQUAL;
  rpc::Comparator::Kind kind_ = rpc::Comparator::BINARY;
  std::string value_;            // lower case for SUBSTRING
  std::shared_ptr<const RE2> re_;  // REGEX
};

// ------------------------------------------------------------------ row key filters

// Once the scan passed the prefix's rows (in its direction), nothing later can pass.
class PrefixFilter final : public ReadFilter {
 public:
  PrefixFilter(std::string p, bool reversed) : prefix_(std::move(p)), reversed_(reversed) {}
  bool FilterAllRemaining() override { return passed_; }
  bool FilterRowKey(std::string_view row) override {
    if (row.starts_with(prefix_)) return false;
    passed_ = reversed_ ? row < prefix_ : row > prefix_;
    return true;
  }

 private:
  const std::string prefix_;
  const bool reversed_;
  bool passed_ = false;
};

class RowFilter final : public ReadFilter {
 public:
  explicit RowFilter(Comparison c) : cmp_(std::move(c)) {}
  bool FilterRowKey(std::string_view row) override { return !cmp_.Passes(row); }

 private:
  const Comparison cmp_;
};

// Once the scan passed every range (in its direction), nothing later can pass.
class MultiRowRangeFilter final : public ReadFilter {
 public:
  MultiRowRangeFilter(std::vector<rpc::RowRange> r, bool reversed) : ranges_(std::move(r)), reversed_(reversed) {}
  bool FilterAllRemaining() override { return passed_; }
  bool FilterRowKey(std::string_view row) override {
    bool passed_all = true;
    for (const rpc::RowRange& r : ranges_) {
      const bool above_start = r.start().empty() || (r.start_inclusive() ? row >= r.start() : row > r.start());
      const bool below_stop = r.stop().empty() || (r.stop_inclusive() ? row <= r.stop() : row < r.stop());
      if (above_start && below_stop) return false;
      passed_all = passed_all && (reversed_ ? !above_start : !below_stop);
    }
    passed_ = passed_all && !ranges_.empty();
    return true;
  }

 private:
  const std::vector<rpc::RowRange> ranges_;
  const bool reversed_;
  bool passed_ = false;
};

// ------------------------------------------------------------------ cell filters

// QualifierFilter and ValueFilter: cells whose qualifier or value passes the comparison. A
// refused qualifier is refused in every version (next column); a refused value in this one.
class CellFieldFilter final : public ReadFilter {
 public:
  CellFieldFilter(Comparison c, std::string_view CellView::*field, CellAction refused)
      : cmp_(std::move(c)), field_(field), refused_(refused) {}
  CellAction FilterCell(const CellView& c) override {
    return cmp_.Passes(c.*field_) ? CellAction::kInclude : refused_;
  }

 private:
  const Comparison cmp_;
  std::string_view CellView::*const field_;
  const CellAction refused_;
};

class ColumnPrefixFilter final : public ReadFilter {
 public:
  explicit ColumnPrefixFilter(std::string p) : prefix_(std::move(p)) {}
  CellAction FilterCell(const CellView& c) override {
    return c.qualifier.starts_with(prefix_) ? CellAction::kInclude : CellAction::kNextColumn;
  }

 private:
  const std::string prefix_;
};

class ColumnRangeFilter final : public ReadFilter {
 public:
  explicit ColumnRangeFilter(const rpc::Filter& f)
      : min_(f.min_column()), max_(f.max_column()), min_inclusive_(f.min_inclusive()),
        max_inclusive_(f.max_inclusive()) {}
  CellAction FilterCell(const CellView& c) override {
    const std::string_view q = c.qualifier;
    const bool in = (min_.empty() || (min_inclusive_ ? q >= min_ : q > min_)) &&
                    (max_.empty() || (max_inclusive_ ? q <= max_ : q < max_));
    return in ? CellAction::kInclude : CellAction::kNextColumn;
  }

 private:
  const std::string min_, max_;
  const bool min_inclusive_, max_inclusive_;
};

class TimestampsFilter final : public ReadFilter {
 public:
  explicit TimestampsFilter(std::vector<int64_t> ts) : ts_(std::move(ts)) { std::sort(ts_.begin(), ts_.end()); }
  CellAction FilterCell(const CellView& c) override {
    return std::binary_search(ts_.begin(), ts_.end(), c.timestamp) ? CellAction::kInclude : CellAction::kSkip;
  }

 private:
  std::vector<int64_t> ts_;
};

class KeyOnlyFilter final : public ReadFilter {
 public:
  explicit KeyOnlyFilter(bool len_as_value) : len_as_value_(len_as_value) {}
  bool FilterRow(RowResult* row) override {
    for (size_t i = 0; i < row->size(); ++i) {
      if (!len_as_value_) {
        row->SetValue(i, {});
        continue;
      }
      const uint32_t n = static_cast<uint32_t>(row->cells()[i].value.size());
      const char be[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                          static_cast<char>(n)};
      row->SetValue(i, std::string_view(be, 4));
    }
    return false;
  }

 private:
  const bool len_as_value_;
};

class FirstKeyOnlyFilter final : public ReadFilter {
 public:
  void Reset() override { seen_ = false; }
  CellAction FilterCell(const CellView&) override {
    if (seen_) return CellAction::kNextRow;
    seen_ = true;
    return CellAction::kInclude;
  }

 private:
  bool seen_ = false;
};

// Columns numbered per row from 0 as the filter sees them; the newest version of each of
// offset .. offset+limit-1. A column asked again (another filter of a MUST_PASS_ONE list took
// an older version) keeps its number and is not included again.
class ColumnPaginationFilter final : public ReadFilter {
 public:
  ColumnPaginationFilter(int64_t limit, int64_t offset) : limit_(limit), offset_(offset) {}
  void Reset() override { columns_ = 0; }
  CellAction FilterCell(const CellView& c) override {
    const bool new_column = columns_ == 0 || c.family != family_.view() || c.qualifier != qualifier_.view();
    if (new_column) {
      family_.Assign(c.family);
      qualifier_.Assign(c.qualifier);
      ++columns_;
    }
    const int64_t index = columns_ - 1;
    if (index < offset_) return CellAction::kNextColumn;
    if (index - offset_ >= limit_) return CellAction::kNextRow;
    return new_column ? CellAction::kIncludeAndNextColumn : CellAction::kNextColumn;
  }

 private:
  const int64_t limit_, offset_;
  int64_t columns_ = 0;
  ByteCopy family_, qualifier_;
};

// ------------------------------------------------------------------ row filters

// HBase's SingleColumnValueFilter: decides the row from the column's newest version the read
// sees (or any version); every cell is included meanwhile. When its refusal drops the row
// (`decisive`: not under a MUST_PASS_ONE list, whose other filters may pass it), the rest of a
// row whose newest version failed is not worth reading (HBase's NEXT_ROW).
class SingleColumnValueFilter final : public ReadFilter {
 public:
  SingleColumnValueFilter(const rpc::Filter& f, Comparison c, bool decisive)
      : family_(f.family()), qualifier_(f.qualifier()), cmp_(std::move(c)),
        filter_if_missing_(f.filter_if_missing()), latest_only_(f.latest_version_only()),
        failed_(decisive && latest_only_ ? CellAction::kNextRow : CellAction::kInclude) {}
  void Reset() override { found_ = matched_ = false; }
  CellAction FilterCell(const CellView& c) override {
    if (matched_) return CellAction::kInclude;
    if (latest_only_ && found_) return failed_;
    if (c.family != family_ || c.qualifier != qualifier_) return CellAction::kInclude;
    found_ = true;
    if (!cmp_.Passes(c.value)) return failed_;
    matched_ = true;
    return CellAction::kInclude;
  }
  bool FilterRow(RowResult*) override { return found_ ? !matched_ : filter_if_missing_; }

 private:
  const std::string family_, qualifier_;
  const Comparison cmp_;
  const bool filter_if_missing_, latest_only_;
  const CellAction failed_;  // the answer once the column failed
  bool found_ = false, matched_ = false;
};

}  // namespace

// At most `size` rows pass, over the whole scan: the client sends what is left of the page
// when it goes on in another region.
class RequestFilter::Page final : public ReadFilter {
 public:
  explicit Page(int64_t size) : size_(size) {}
  bool FilterAllRemaining() override { return passed_ >= size_; }
  bool FilterRowKey(std::string_view) override { return passed_ >= size_; }
  bool FilterRow(RowResult*) override {
    if (passed_ >= size_) return true;
    ++passed_;
    return false;
  }
  uint64_t TakePassed() {
    const uint64_t n = static_cast<uint64_t>(passed_ - reported_);
    reported_ = passed_;
    return n;
  }

 private:
  const int64_t size_;
  int64_t passed_ = 0, reported_ = 0;
};

namespace {

// MUST_PASS_ALL: asked in order, the first refusal decides. A member's "next column" does not
// hide the column's older versions from a member before it that included this one (a
// SingleColumnValue reading every version): it becomes a skip of this version only.
class AllFilter final : public ReadFilter {
 public:
  explicit AllFilter(std::vector<std::unique_ptr<ReadFilter>> f) : filters_(std::move(f)) {}
  void Reset() override {
    for (auto& f : filters_) f->Reset();
  }
  bool FilterAllRemaining() override {
    for (auto& f : filters_) {
      if (f->FilterAllRemaining()) return true;
    }
    return false;
  }
  bool FilterRowKey(std::string_view row) override {
    for (auto& f : filters_) {
      if (f->FilterRowKey(row)) return true;
    }
    return false;
  }
  CellAction FilterCell(const CellView& c) override {
    bool included = false;   // by an earlier member, which may want older versions
    bool next_column = false;
    for (auto& f : filters_) {
      const CellAction a = f->FilterCell(c);
      if (a == CellAction::kInclude) {
        included = true;
      } else if (a == CellAction::kIncludeAndNextColumn) {
        next_column = next_column || !included;
      } else if (a == CellAction::kNextColumn && included) {
        return CellAction::kSkip;
      } else {
        return a;
      }
    }
    return next_column ? CellAction::kIncludeAndNextColumn : CellAction::kInclude;
  }
  bool FilterRow(RowResult* row) override {
    for (auto& f : filters_) {
      if (f->FilterRow(row)) return true;
    }
    return false;
  }

 private:
  std::vector<std::unique_ptr<ReadFilter>> filters_;
};

// MUST_PASS_ONE: every filter is asked (but not about the cells and row of a row whose key it
// refused); what one passes passes. An empty list passes everything (HBase's).
class OneFilter final : public ReadFilter {
 public:
  explicit OneFilter(std::vector<std::unique_ptr<ReadFilter>> f)
      : filters_(std::move(f)), refused_(filters_.size(), false) {}
  void Reset() override {
    for (auto& f : filters_) f->Reset();
    std::fill(refused_.begin(), refused_.end(), false);
  }
  bool FilterAllRemaining() override {
    if (filters_.empty()) return false;
    for (auto& f : filters_) {
      if (!f->FilterAllRemaining()) return false;
    }
    return true;
  }
  bool FilterRowKey(std::string_view row) override {
    bool all = !filters_.empty();
    for (size_t i = 0; i < filters_.size(); ++i) {
      refused_[i] = filters_[i]->FilterRowKey(row);
      all = all && refused_[i];
    }
    return all;
  }
  // Included when one includes it; then the column's older versions are skipped only when no
  // filter could want one (each said include-and-next-column, next column or next row).
  // Refused: the mildest refusal (skip < next column < next row).
  CellAction FilterCell(const CellView& c) override {
    if (filters_.empty()) return CellAction::kInclude;
    bool included = false, wants_older = false;
    CellAction mildest = CellAction::kNextRow;
    for (size_t i = 0; i < filters_.size(); ++i) {
      if (refused_[i]) continue;
      const CellAction a = filters_[i]->FilterCell(c);
      switch (a) {
        case CellAction::kInclude:
          included = wants_older = true;
          break;
        case CellAction::kIncludeAndNextColumn:
          included = true;
          break;
        case CellAction::kSkip:
          wants_older = true;
          [[fallthrough]];
        default:
          mildest = std::min(mildest, a);
      }
    }
    if (included) return wants_older ? CellAction::kInclude : CellAction::kIncludeAndNextColumn;
    return mildest;
  }
  bool FilterRow(RowResult* row) override {
    bool all = !filters_.empty();
    for (size_t i = 0; i < filters_.size(); ++i) {
      if (!refused_[i] && !filters_[i]->FilterRow(row)) all = false;
    }
    return all;
  }

 private:
  std::vector<std::unique_ptr<ReadFilter>> filters_;
  std::vector<bool> refused_;
};

// `decisive`: the filter's refusal of a row drops it (the root, or under MUST_PASS_ALL lists).
absl::StatusOr<std::unique_ptr<ReadFilter>> Build(const rpc::Filter& f, bool reversed, bool decisive, int depth,
                                                  std::vector<RequestFilter::Page*>* pages) {
  if (depth > kMaxDepth) return absl::InvalidArgumentError(absl::StrCat("filter nested deeper than ", kMaxDepth));
  auto comparison = [&]() { return Comparison::Make(f.kind(), f.op(), f.comparator()); };
  switch (f.kind()) {
    case rpc::Filter::PREFIX:
      return std::make_unique<PrefixFilter>(f.prefix(), reversed);
    case rpc::Filter::ROW: {
      BASALT_ASSIGN_OR_RETURN(Comparison c, comparison());
      return std::make_unique<RowFilter>(std::move(c));
    }
    case rpc::Filter::MULTI_ROW_RANGE:
      return std::make_unique<MultiRowRangeFilter>(std::vector<rpc::RowRange>(f.ranges().begin(), f.ranges().end()),
                                                   reversed);
    case rpc::Filter::QUALIFIER: {
      BASALT_ASSIGN_OR_RETURN(Comparison c, comparison());
      return std::make_unique<CellFieldFilter>(std::move(c), &CellView::qualifier, CellAction::kNextColumn);
    }
    case rpc::Filter::VALUE: {
      BASALT_ASSIGN_OR_RETURN(Comparison c, comparison());
      return std::make_unique<CellFieldFilter>(std::move(c), &CellView::value, CellAction::kSkip);
    }
    case rpc::Filter::COLUMN_PREFIX:
      return std::make_unique<ColumnPrefixFilter>(f.prefix());
    case rpc::Filter::COLUMN_RANGE:
      return std::make_unique<ColumnRangeFilter>(f);
    case rpc::Filter::COLUMN_PAGINATION:
      if (f.limit() < 0 || f.offset() < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("COLUMN_PAGINATION: limit ", f.limit(), " and offset ", f.offset(), " must not be negative"));
      }
      return std::make_unique<ColumnPaginationFilter>(f.limit(), f.offset());
    case rpc::Filter::TIMESTAMPS:
      return std::make_unique<TimestampsFilter>(std::vector<int64_t>(f.timestamps().begin(), f.timestamps().end()));
    case rpc::Filter::KEY_ONLY:
      return std::make_unique<KeyOnlyFilter>(f.len_as_value());
    case rpc::Filter::FIRST_KEY_ONLY:
      return std::make_unique<FirstKeyOnlyFilter>();
    case rpc::Filter::SINGLE_COLUMN_VALUE: {
      BASALT_ASSIGN_OR_RETURN(Comparison c, comparison());
      return std::make_unique<SingleColumnValueFilter>(f, std::move(c), decisive);
    }
    case rpc::Filter::PAGE: {
      if (f.limit() < 0) {
        return absl::InvalidArgumentError(absl::StrCat("PAGE: page size ", f.limit(), " must not be negative"));
      }
      auto page = std::make_unique<RequestFilter::Page>(f.limit());
      pages->push_back(page.get());
      return page;
    }
    case rpc::Filter::LIST: {
      std::vector<std::unique_ptr<ReadFilter>> children;
      for (const rpc::Filter& c : f.filters()) {
        BASALT_ASSIGN_OR_RETURN(std::unique_ptr<ReadFilter> child, Build(c, reversed, decisive && f.must_pass_all(), depth + 1, pages));
        children.push_back(std::move(child));
      }
      if (f.must_pass_all()) return std::make_unique<AllFilter>(std::move(children));
      return std::make_unique<OneFilter>(std::move(children));
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat("unknown filter kind ", f.kind()));
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<RequestFilter>> RequestFilter::Make(const rpc::Filter& f, bool reversed) {
  int filters = 0, regexes = 0;
  if (absl::Status s = CheckBounds(f, &filters, &regexes); !s.ok()) return s;  // (before any is compiled)
  auto r = std::make_shared<RequestFilter>();
  BASALT_ASSIGN_OR_RETURN(r->root_, Build(f, reversed, /*decisive=*/true, 0, &r->pages_));
  return r;
}

std::vector<uint64_t> RequestFilter::TakePageRows() {
  std::vector<uint64_t> out;
  out.reserve(pages_.size());
  for (Page* p : pages_) out.push_back(p->TakePassed());
  return out;
}

}  // namespace basalt
