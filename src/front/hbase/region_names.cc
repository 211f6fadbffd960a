#include "src/front/hbase/region_names.h"

#include <openssl/evp.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace basalt::hbase {
namespace {

std::string Md5Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &n, EVP_md5(), nullptr);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), n));
}

int CompareBytes(std::string_view a, std::string_view b) {
  const int c = a.compare(b);  // std::char_traits<char> compares as unsigned char
  return c < 0 ? -1 : c > 0 ? 1 : 0;
}

}  // namespace

std::string TableNameOf(std::string_view ns, std::string_view qualifier) {
  if (ns.empty() || ns == "default") return std::string(qualifier);
  return absl::StrCat(std::string(ns), ":", std::string(qualifier));
}

std::string RegionNameOf(std::string_view table, std::string_view start_key, uint64_t region_id) {
  std::string b = absl::StrCat(std::string(table), ",", std::string(start_key), ",", region_id);
  const std::string md5 = Md5Hex(b);
  return absl::StrCat(b, ".", md5, ".");
}

std::string EncodedNameOf(std::string_view name) {
  if (name == kMetaRegionName) return kMetaEncodedName;
  if (name.size() < 34 || name.back() != '.') return "";
  const size_t dot = name.rfind('.', name.size() - 2);
  if (dot == std::string_view::npos || name.size() - dot - 2 != 32) return "";
  return std::string(name.substr(dot + 1, 32));
}

int CompareMetaRows(std::string_view a, std::string_view b) {
  const size_t ad = a.find(','), bd = b.find(',');
  int c = CompareBytes(a.substr(0, ad), b.substr(0, bd));
  if (c != 0) return c;
  if (ad == std::string_view::npos || bd == std::string_view::npos) {
    return ad == bd ? 0 : ad == std::string_view::npos ? -1 : 1;
  }
  const std::string_view ar = a.substr(ad + 1), br = b.substr(bd + 1);
  const size_t af = ar.rfind(','), bf = br.rfind(',');
  c = CompareBytes(ar.substr(0, af), br.substr(0, bf));
  if (c != 0) return c;
  const std::string_view aid = af == std::string_view::npos ? std::string_view() : ar.substr(af + 1);
  const std::string_view bid = bf == std::string_view::npos ? std::string_view() : br.substr(bf + 1);
  return CompareBytes(aid, bid);
}

}  // namespace basalt::hbase
