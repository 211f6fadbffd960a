// libFuzzer target: catalogues (CATALOG and TABLEINFO, src/schema/catalog_file.h), with their
// namespaces.
//
// The input is decoded as it is (magic and CRC checks) and again with its last four bytes
// replaced by the correct CRC, so mutations reach the body. A decoded catalogue must survive an
// encode/decode round trip unchanged, tables and namespaces; failures must be DataLoss (or
// FailedPrecondition: a stamp asking for a newer reader).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/schema/catalog_file.h"
#include "tests/fuzz/fuzz_common.h"

namespace basalt::fuzz {
namespace {

void Check(std::string_view bytes) {
  std::vector<server::NamespaceSpec> namespaces;
  absl::StatusOr<std::vector<server::TableSpec>> tables = server::DecodeCatalog(bytes, "fuzz-catalog", &namespaces);
  if (!tables.ok()) {
    FUZZ_CHECK(tables.status().code() == absl::StatusCode::kDataLoss ||
                   tables.status().code() == absl::StatusCode::kFailedPrecondition,
               "DecodeCatalog returned %s", CodeName(tables.status()));
    return;
  }
  std::vector<server::NamespaceSpec> namespaces_again;
  absl::StatusOr<std::vector<server::TableSpec>> again =
      server::DecodeCatalog(server::EncodeCatalog(*tables, namespaces), "fuzz-catalog-again", &namespaces_again);
  FUZZ_CHECK(again.ok(), "re-encoded catalogue does not decode: %s", std::string(again.status().message()).c_str());
  FUZZ_CHECK(*again == *tables && namespaces_again == namespaces, "catalogue does not survive a round trip");
}

}  // namespace
}  // namespace basalt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  basalt::fuzz::CheckAsIsAndWithTheCrcFixed(data, size, 24, basalt::fuzz::Check);
  return 0;
}
