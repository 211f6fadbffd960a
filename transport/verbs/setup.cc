#include "transport/verbs/setup.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/coding.h"
#include "common/status.h"

namespace basalt::verbs {

absl::Status ErrnoError(absl::StatusCode code, std::string_view what, int err) {
  return absl::Status(code, absl::StrCat(AV(what), ": ", std::strerror(err)));
}

absl::Status SetNonBlocking(int fd, std::string_view what) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return ErrnoError(absl::StatusCode::kInternal, absl::StrCat(AV(what), ": fcntl"), errno);
  }
  return absl::OkStatus();
}

absl::StatusOr<rdma_event_channel*> CreateEventChannel() {
  rdma_event_channel* ch = rdma_create_event_channel();
  if (ch == nullptr) return ErrnoError(absl::StatusCode::kUnavailable, "rdma_create_event_channel", errno);
  if (absl::Status st = SetNonBlocking(ch->fd, "rdma event channel"); !st.ok()) {
    rdma_destroy_event_channel(ch);
    return st;
  }
  return ch;
}

absl::StatusOr<std::vector<std::string>> RdmaDevices() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr || n == 0) {
    int err = errno;
    if (list != nullptr) ibv_free_device_list(list);
    return absl::FailedPreconditionError(absl::StrCat(
        "no RDMA device (", list == nullptr ? std::strerror(err) : "the device list is empty",
        "): load an HCA driver or soft-RoCE (rdma link add rxe0 type rxe netdev <nic>), see deploy/RDMA.md"));
  }
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.emplace_back(ibv_get_device_name(list[i]));
  ibv_free_device_list(list);
  return names;
}

absl::Status ParseSockaddr(const std::string& host, int port, sockaddr_storage* out) {
  std::memset(out, 0, sizeof(*out));
  if (port < 0 || port > 65535) return absl::InvalidArgumentError(absl::StrCat("port out of range: ", port));
  std::string h = host;
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  auto* v4 = reinterpret_cast<sockaddr_in*>(out);
  if (inet_pton(AF_INET, h.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    return absl::OkStatus();
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(out);
  if (inet_pton(AF_INET6, h.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("not a numeric IP address: '", host, "'"));
}

namespace {
// A queue pair's destruction against a disconnect from another thread (DisconnectUnowned).
ABSL_CONST_INIT absl::Mutex qp_teardown_mu(absl::kConstInit);
}  // namespace

void CmIdDeleter::operator()(rdma_cm_id* id) const {
  if (id == nullptr) return;
  if (id->qp != nullptr) {
    absl::MutexLock l(&qp_teardown_mu);
    rdma_destroy_qp(id);
  }
  rdma_destroy_id(id);  // (waits for its events to be acked: not under the lock)
}

void DisconnectUnowned(rdma_cm_id* id) {
  absl::MutexLock l(&qp_teardown_mu);
  rdma_disconnect(id);
}

// ---------------------------------------------------------------------------------------------
// Queue pairs

absl::StatusOr<uint32_t> CreateQueuePair(rdma_cm_id* id, ibv_pd* pd, ibv_cq* cq, ibv_srq* srq, uint32_t send_depth,
                                         uint32_t recv_depth) {
  for (uint32_t inline_size : {kWantedInline, 0u}) {
    ibv_qp_init_attr attr{};
    attr.send_cq = cq;
    attr.recv_cq = cq;
    attr.srq = srq;
    attr.qp_type = IBV_QPT_RC;
    attr.sq_sig_all = 0;
    attr.cap.max_send_wr = send_depth;
    attr.cap.max_recv_wr = srq != nullptr ? 0 : recv_depth;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = srq != nullptr ? 0 : 1;
    attr.cap.max_inline_data = inline_size;
    if (rdma_create_qp(id, pd, &attr) == 0) return attr.cap.max_inline_data;
    if (inline_size == 0) return ErrnoError(absl::StatusCode::kUnavailable, "rdma_create_qp", errno);
  }
  return absl::InternalError("unreachable");
}

}  // namespace basalt::verbs
