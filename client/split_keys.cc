// SplitKeysFor (client/include/basalt/client.h): HBase's RegionSplitter algorithms. Apart
// from the rest of the client, so the shell library uses it without the gRPC client.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "basalt/client.h"
#include "common/status.h"

namespace basalt {

absl::StatusOr<std::vector<std::string>> SplitKeysFor(std::string_view algorithm, int num_regions) {
  if (num_regions < 2) {
    return absl::InvalidArgumentError(absl::StrCat("NUMREGIONS of ", num_regions, ": a pre-split needs at least 2"));
  }
  std::vector<std::string> keys;
  if (algorithm == "HexStringSplit") {
    // RegionSplitter.HexStringSplit: the 2^32 rows 00000000 .. ffffffff (the last inclusive) cut
    // in equal steps; the last region takes the remainder.
    const uint64_t step = (uint64_t{1} << 32) / static_cast<uint64_t>(num_regions);
    for (int i = 1; i < num_regions; ++i) {
      char buf[17];
      snprintf(buf, sizeof buf, "%08llx", static_cast<unsigned long long>(step * static_cast<uint64_t>(i)));
      keys.push_back(buf);
    }
  } else if (algorithm == "UniformSplit") {
    // RegionSplitter.UniformSplit: the 2^64 8-byte keys 0x00.. .. 0xFF.. (the last inclusive,
    // Bytes.split with inclusive=true) cut in equal steps.
    const unsigned __int128 step = (static_cast<unsigned __int128>(1) << 64) / static_cast<unsigned>(num_regions);
    for (int i = 1; i < num_regions; ++i) {
      const uint64_t v = static_cast<uint64_t>(step * static_cast<unsigned>(i));
      std::string k(8, '\0');
      for (int b = 0; b < 8; ++b) k[b] = static_cast<char>((v >> (56 - 8 * b)) & 0xFF);
      keys.push_back(std::move(k));
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown SPLITALGO '", AV(algorithm),
                                                   "' (HexStringSplit or UniformSplit)"));
  }
  return keys;
}

}  // namespace basalt
