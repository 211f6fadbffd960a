// Small vocabulary shared by the engine, the server and the client library (which must not
// depend on the engine): write durability and the "latest" timestamp. Public and dependency-free,
// like every basalt/ header the layers share (docs/STYLE.md "Layout").
#pragma once

#include <cstdint>
#include <limits>

namespace basalt {

// SYNC_WAL: acknowledged means on disk. ASYNC_WAL: logged, synced by the next sync or the
// background syncer (≤ 100 ms). SKIP_WAL: memstore only, lost on a crash before flush.
// USE_DEFAULT (client requests only, as HBase's): the server's configured durability, SYNC_WAL
// unless the operator chose otherwise; the engine refuses it.
// The values travel in requests and logs, so they never change meaning.
enum class Durability : uint8_t { kSyncWal = 0, kAsyncWal = 1, kSkipWal = 2, kUseDefault = 3 };

// A timestamp left for the server to fill in (its clock), or "no upper bound" in a time range.
inline constexpr int64_t kLatestTimestamp = std::numeric_limits<int64_t>::max();

}  // namespace basalt
