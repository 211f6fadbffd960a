// The rdma-core pieces the verbs transport's client and server share (DESIGN.md §4):
//   - the device check ("no RDMA device"),
//   - SharedChunk: one registered memory chunk (one MR) shared by every endpoint of a connection
//     or a listener, handed out as (offset, size) slices that move between endpoints as they come
//     and go, so registered memory does not grow with the endpoint count,
//   - CompletionQueue: a CQ with its own completion channel, polled busily for a bounded spin and
//     then waited on through the channel's fd,
//   - Endpoint: one RC queue pair of an rdma_cm id with its slice (a receive half and a send
//     half), posting pre-posted receives and sends (inline when small, signalled selectively).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace basalt::verbs {

// The names of the RDMA devices on this host; FailedPrecondition "no RDMA device ..." when there
// is none (no HCA driver or rdma_rxe loaded, or no /sys/class/infiniband at all).
absl::StatusOr<std::vector<std::string>> RdmaDevices();

// "<what>: <strerror(err)>" with `code`.
absl::Status ErrnoError(absl::StatusCode code, std::string_view what, int err);

// Makes a channel's fd (completion or rdma_cm event channel) non-blocking, so a poll() that
// woke spuriously never leaves a reader stuck in ibv_get_cq_event / rdma_get_cm_event.
absl::Status SetNonBlocking(int fd, std::string_view what);

// An rdma_cm event channel with a non-blocking fd, read by a thread that polls it.
absl::StatusOr<rdma_event_channel*> CreateEventChannel();

// A numeric IPv4/IPv6 address and port as a sockaddr (no name lookup: the RDMA address of a
// server is an address). InvalidArgument otherwise.
absl::Status ParseSockaddr(const std::string& host, int port, sockaddr_storage* out);
std::string SockaddrString(const sockaddr* sa);

// The message settings both sides agree on: every endpoint's slice is a receive half and a
// send half of message_bytes each.
inline constexpr size_t kDefaultMessageBytes = 72 * 1024;  // a 64 KiB value plus its framing
inline constexpr size_t kMinMessageBytes = 1024;
inline constexpr size_t kMaxMessageBytes = 16 << 20;

class SharedChunk {
 public:
  struct Slice {
    uint32_t index = 0;   // which slot
    size_t offset = 0;    // in the chunk
    size_t size = 0;
    uint8_t* data = nullptr;
  };

  // `slots` slices of `slot_bytes` (rounded up to 64 bytes). Memory is reserved here and
  // registered (pinned) by Bind.
  static absl::StatusOr<std::unique_ptr<SharedChunk>> Create(size_t slots, size_t slot_bytes);
  ~SharedChunk();
  SharedChunk(const SharedChunk&) = delete;
  SharedChunk& operator=(const SharedChunk&) = delete;

  // Allocates the protection domain on `ctx` and registers the chunk (once). A second device:
  // FailedPrecondition (one chunk serves one device).
  absl::Status Bind(ibv_context* ctx);
  bool bound() const { return mr_ != nullptr; }
  ibv_pd* pd() const { return pd_; }
  uint32_t lkey() const { return mr_->lkey; }

  // A free slice, or nullopt when every slot is taken.
  std::optional<Slice> Acquire();
  void Release(const Slice& s);
  size_t slots() const { return slots_; }
  size_t slot_bytes() const { return slot_bytes_; }
  size_t in_use() const;

 private:
  SharedChunk() = default;
  uint8_t* base_ = nullptr;
  size_t bytes_ = 0;
  size_t slots_ = 0;
  size_t slot_bytes_ = 0;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_mr* mr_ = nullptr;
  mutable absl::Mutex mu_;
  std::vector<uint32_t> free_ ABSL_GUARDED_BY(mu_);
};

class CompletionQueue {
 public:
  static absl::StatusOr<std::unique_ptr<CompletionQueue>> Create(ibv_context* ctx, int entries);
  // Polls `cq` without owning it and without a channel (Wait never sleeps: it spins to the
  // deadline): the datapath benchmark's loopback CQ.
  static std::unique_ptr<CompletionQueue> WrapUnowned(ibv_cq* cq);
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  ibv_cq* cq() const { return cq_; }

  // Up to wc.size() completions. Polls busily for `spin`, then arms the CQ and waits on the
  // completion channel until a completion arrives or `deadline` passes (returns 0 then).
  absl::StatusOr<int> Wait(absl::Span<ibv_wc> wc, absl::Duration spin, absl::Time deadline);

 private:
  CompletionQueue() = default;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  bool owned_ = true;
  unsigned unacked_ = 0;
  bool armed_ = false;
};

// The queue-pair settings of every endpoint: one request or reply in flight each way.
inline constexpr uint32_t kSendDepth = 8;
inline constexpr uint32_t kSignalEvery = 4;  // one signalled send in four frees the send queue
inline constexpr uint32_t kRecvDepth = 2;
inline constexpr uint32_t kRecvBatch = kRecvDepth;  // receives posted per ibv_post_recv
inline constexpr uint32_t kWantedInline = 256;

// Creates the RC queue pair of `id` on `pd`, both queues on `cq`. Returns the inline size the
// device granted (0 when it has none).
absl::StatusOr<uint32_t> CreateQueuePair(rdma_cm_id* id, ibv_pd* pd, ibv_cq* cq);

// One connected (or connecting) queue pair with its slice: [recv half | send half].
class Endpoint {
 public:
  Endpoint(rdma_cm_id* id, SharedChunk* chunk, SharedChunk::Slice slice, uint32_t max_inline)
      : id_(id), qp_(id->qp), chunk_(chunk), slice_(slice), lkey_(chunk->lkey()), max_inline_(max_inline) {}
  // A queue pair and buffer it does not own (the datapath benchmark's loopback).
  Endpoint(ibv_qp* qp, SharedChunk::Slice slice, uint32_t lkey, uint32_t max_inline)
      : qp_(qp), slice_(slice), lkey_(lkey), max_inline_(max_inline) {}
  // Destroys the queue pair and the id, then gives the slice back.
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  rdma_cm_id* id() const { return id_; }
  size_t half() const { return slice_.size / 2; }
  uint8_t* recv_buf() const { return slice_.data; }
  uint8_t* send_buf() const { return slice_.data + half(); }
  absl::Span<uint8_t> send_span() const { return {send_buf(), half()}; }
  uint32_t slice_index() const { return slice_.index; }

  // Receives are pre-posted kRecvBatch at a time, chained in one ibv_post_recv, all on the
  // receive half: with one message in flight each way only one of them is ever filled before
  // its message is consumed. Replenish posts a new batch when none is left; call Received once
  // per message taken out of the receive half, before Replenish.
  absl::Status Replenish(uint64_t wr_id);
  void Received() { --posted_; }
  // Sends the first `len` bytes of the send half: inline up to the granted inline size, one
  // send in kSignalEvery signalled.
  absl::Status PostSend(uint64_t wr_id, size_t len);

 private:
  rdma_cm_id* id_ = nullptr;      // owned when set
  ibv_qp* qp_;
  SharedChunk* chunk_ = nullptr;  // the slice goes back to it when set
  SharedChunk::Slice slice_;
  uint32_t lkey_;
  uint32_t max_inline_;
  uint32_t sends_ = 0;
  int posted_ = 0;  // receives posted and not yet received
};

// What a server hands a client over gRPC before it connects endpoints (OpenVerbsSession).
struct VerbsSession {
  std::string address;  // numeric IP the server's rdma_cm listens on
  int port = 0;
  std::string token;    // ConnectData::kTokenBytes random bytes
  absl::Time expires = absl::InfinitePast();  // endpoints must connect before this
  size_t message_bytes = kDefaultMessageBytes;  // the server's receive half
};

// The connect request's private data: who we are and the session token.
struct ConnectData {
  static constexpr uint32_t kMagic = 0x4B545642;  // "BVTK"
  static constexpr size_t kTokenBytes = 16;
  static constexpr size_t kSize = 28;
  uint8_t token[kTokenBytes] = {};
  uint32_t max_reply = 0;  // the client's receive half: replies must fit it

  void Encode(uint8_t out[kSize]) const;
  // InvalidArgument unless `len` bytes at `p` are a ConnectData of this version (rdma_cm may pad
  // private data with zeros, so longer is fine).
  static absl::StatusOr<ConnectData> Decode(const void* p, size_t len);
};

}  // namespace basalt::verbs
