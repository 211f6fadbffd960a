// A queue table's layout, which the client's queues (basalt/queue.h) write and the server's
// eviction (src/transactions/queue_eviction.cc) reads: one family holding an entry's payload
// (e:p), its key (e:k) and its consumed mark (e:d, "1", written by the consuming transaction).
// docs/FORMATS.md "queue table" draws the row. Public and dependency-free.
#pragma once

namespace basalt {

inline constexpr char kQueueFamily[] = "e";
inline constexpr char kQueueConsumedQualifier[] = "d";

}  // namespace basalt
