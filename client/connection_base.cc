// What every Connection has without a transport (client.h): the transaction calls of a
// connection that has no transaction service (a test's fake connection, for one).
#include "basalt/client.h"

namespace basalt {

absl::StatusOr<TransactionSnapshot> Connection::StartTransaction(absl::Duration) {
  return absl::UnimplementedError("this connection has no transaction service");
}
absl::Status Connection::CommitTransaction(int64_t, const std::vector<uint64_t>&) {
  return absl::UnimplementedError("this connection has no transaction service");
}
absl::Status Connection::AbortTransaction(int64_t) {
  return absl::UnimplementedError("this connection has no transaction service");
}
absl::Status Connection::InvalidateTransaction(int64_t) {
  return absl::UnimplementedError("this connection has no transaction service");
}

}  // namespace basalt
