// The verbs transport's datapath (docs/DESIGN.md, §4): what runs per request, apart from the
// set-up in transport/verbs/setup.h.
//   - SharedChunk: one registered memory chunk (one MR) shared by every endpoint of a connection
//     or a listener, handed out as (offset, size) slices that move between endpoints as they come
//     and go, so registered memory does not grow with the endpoint count,
//   - CompletionQueue: a CQ with its own completion channel, polled busily for a bounded spin and
//     then waited on through the channel's fd,
//   - Endpoint: one RC queue pair of an rdma_cm id with its slice (a receive half and a send
//     half), posting pre-posted receives and sends (inline when small, signalled selectively),
//   - TransferBuffer: memory registered for one large transfer (a rendezvous).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "transport/verbs/setup.h"

namespace basalt::verbs {

class SharedChunk {
 public:
  struct Slice {
    uint32_t index = 0;   // which slot
    size_t offset = 0;    // in the chunk
    size_t size = 0;
    uint8_t* data = nullptr;
  };

  static constexpr size_t kMaxSlots = size_t{1} << 20;
  // `slots` (1..kMaxSlots) slices of `slot_bytes` (rounded up to 64 bytes). Memory is reserved
  // here and registered (pinned) by Bind.
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

// One connected (or connecting) queue pair with its slice. A client's: `credits` receive
// buffers, then `credits` send buffers, of half() bytes each (one of each with one request in
// flight). A server's receives from a shared receive queue and has no buffer of its own: each
// reply goes out of its request's receive buffer.
class Endpoint {
 public:
  Endpoint(CmId id, SharedChunk* chunk, SharedChunk::Slice slice, uint32_t max_inline, uint32_t credits = 1)
      : id_(std::move(id)),
        qp_(id_->qp),
        chunk_(chunk),
        slice_(slice),
        credits_(credits),
        buffer_bytes_(slice.size / (2 * credits)),
        lkey_(chunk->lkey()),
        max_inline_(max_inline) {}
  // A server's: receives from a shared receive queue, sends from buffers it is given.
  Endpoint(CmId id, uint32_t max_inline) : id_(std::move(id)), qp_(id_->qp), credits_(0), max_inline_(max_inline) {}
  // A queue pair and buffer it does not own (the datapath benchmark's loopback).
  Endpoint(ibv_qp* qp, SharedChunk::Slice slice, uint32_t lkey, uint32_t max_inline)
      : qp_(qp), slice_(slice), credits_(1), buffer_bytes_(slice.size / 2), lkey_(lkey), max_inline_(max_inline) {}
  // Destroys the queue pair and the id, then gives the slice back.
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  rdma_cm_id* id() const { return id_.get(); }
  // The largest message each way: one buffer's size.
  size_t half() const { return buffer_bytes_; }
  uint8_t* recv_buf(uint32_t i = 0) const { return slice_.data + i * buffer_bytes_; }
  uint8_t* send_buf(uint32_t i = 0) const { return slice_.data + (credits_ + i) * buffer_bytes_; }
  absl::Span<uint8_t> send_span(uint32_t i = 0) const { return {send_buf(i), half()}; }
  uint32_t slice_index() const { return slice_.index; }
  uint32_t lkey() const { return lkey_; }

  // With one credit: receives are pre-posted kRecvBatch at a time, chained in one
  // ibv_post_recv, all on the one receive buffer: with one message in flight each way only one
  // of them is ever filled before its message is consumed. Replenish posts a new batch when
  // none is left; call Received once per message taken out of the receive buffer, before
  // Replenish.
  absl::Status Replenish(uint64_t wr_id);
  void Received() { --posted_; }
  // With credits: posts receive buffer `i` (once per reply taken out of it).
  absl::Status PostRecv(uint32_t i, uint64_t wr_id);
  // A send of `len` bytes at `data` (registered, `lkey`): inline when Inlines(len), and then
  // the memory may be reused as soon as it is posted; otherwise not until the send's
  // completion, which `signaled` asks for (one send in kSignalEvery is signalled anyway).
  struct SendItem {
    uint64_t wr_id;
    const uint8_t* data;
    size_t len;
    uint32_t lkey;
    bool signaled;
  };
  // The sends chained in one ibv_post_send: one doorbell (with rxe, one system call) for them
  // all. No more than the queue pair's send depth at once. `posted` (when given): how many
  // were posted, all of them unless it fails. Thread-safe (a server's replies go out from its
  // helper and its handler pool).
  absl::Status PostSends(absl::Span<const SendItem> items, size_t* posted);
  // Sends the first `len` bytes of send buffer `i`.
  absl::Status PostSend(uint64_t wr_id, size_t len, uint32_t i = 0) {
    const SendItem one{wr_id, send_buf(i), len, lkey_, false};
    return PostSends({&one, 1}, nullptr);
  }
  bool Inlines(size_t len) const { return len <= max_inline_; }
  // Reads `len` bytes of the peer's memory at (remote_addr, rkey) into `local` (registered,
  // lkey), signalled: a rendezvous (frame.h kFlagRendezvous). Needs the connection's initiator
  // depth (rdma_conn_param) of 1 or more on this side.
  absl::Status PostRead(uint64_t wr_id, uint8_t* local, uint32_t len, uint32_t lkey, uint64_t remote_addr,
                        uint32_t rkey);
  // Writes `len` bytes at `local` into the peer's memory at (remote_addr, rkey), signalled: a
  // large reply into the client's reply buffer (frame.h kFlagReplyBuffer).
  absl::Status PostWrite(uint64_t wr_id, uint8_t* local, uint32_t len, uint32_t lkey, uint64_t remote_addr,
                         uint32_t rkey);

 private:
  CmId id_;                       // null for an unowned queue pair
  ibv_qp* qp_;
  SharedChunk* chunk_ = nullptr;  // the slice goes back to it when set
  SharedChunk::Slice slice_;
  uint32_t credits_;              // 0: a server's, with no buffers
  size_t buffer_bytes_ = 0;
  uint32_t lkey_ = 0;
  uint32_t max_inline_;
  std::atomic<uint32_t> sends_{0};
  int posted_ = 0;  // receives posted and not yet received (one credit)
};

// A shared receive queue (the server's, one per helper thread): `depth` receive buffers of
// `bytes` each, slices of one chunk. Every queue pair created with it receives from these
// buffers, so receive memory does not grow with the endpoints. A receive's wr_id is
// `tag | buffer index`.
//
// A buffer whose request has come is held (Take) until its reply, written into the same
// buffer, has left it: then it is posted again (Release). Each hold has a sequence number, so
// that a stale release (the completion of a reply sent by a queue pair destroyed meanwhile,
// whose buffer ReleaseHeldBy gave back) posts nothing twice.
class SharedReceiveQueue {
 public:
  // InvalidArgument when `depth` is over 65536; FailedPrecondition when the device has no
  // shared receive queues or allows fewer receives; ResourceExhausted when the chunk has too
  // few free slots.
  static absl::StatusOr<std::unique_ptr<SharedReceiveQueue>> Create(SharedChunk* chunk, uint32_t depth, uint32_t tag);
  // Destroy the queue pairs that use it first (ibv_destroy_srq refuses while any does).
  ~SharedReceiveQueue();
  SharedReceiveQueue(const SharedReceiveQueue&) = delete;
  SharedReceiveQueue& operator=(const SharedReceiveQueue&) = delete;

  ibv_srq* srq() const { return srq_; }
  uint32_t lkey() const { return chunk_->lkey(); }
  // Whether a completion's wr_id is one of this queue's receives, and which buffer.
  bool Owns(uint64_t wr_id) const { return (wr_id >> 32) == 0 && (static_cast<uint32_t>(wr_id) & tag_) != 0; }
  static uint32_t Index(uint64_t wr_id) { return static_cast<uint32_t>(wr_id) & 0xFFFF; }
  // Buffer `b`'s first `len` bytes (clipped to its size).
  absl::Span<const uint8_t> Message(uint32_t b, uint32_t len) const;
  // Buffer `b`, whole: where its request's reply is written.
  absl::Span<uint8_t> Buffer(uint32_t b) const { return {buffers_[b].data, buffers_[b].size}; }
  size_t buffer_bytes() const { return buffers_.empty() ? 0 : buffers_.front().size; }

  struct Held {
    uint32_t buffer = 0;
    uint32_t seq = 0;
  };
  // Buffer `b`, whose receive has completed, is held by `owner` (non-zero) until released.
  Held Take(uint32_t b, uint32_t owner);
  // Posts the held buffer again, unless this hold was released already.
  void Release(const Held& h);
  // Releases every buffer `owner` still holds (its queue pair is destroyed: nothing it posted
  // still reads them).
  void ReleaseHeldBy(uint32_t owner);
  // Posts buffer `b` again (one that is not held: its receive was flushed). A failure is logged:
  // the queue has one receive less, and the rest still serve (a full queue is back-pressure).
  void Repost(uint32_t b);

 private:
  SharedReceiveQueue() = default;
  absl::Status Post(uint32_t b);
  SharedChunk* chunk_ = nullptr;
  ibv_srq* srq_ = nullptr;
  uint32_t tag_ = 0;
  std::vector<SharedChunk::Slice> buffers_;
  // Per buffer: seq << 32 | owner (0: not held, posted).
  std::unique_ptr<std::atomic<uint64_t>[]> held_;
};

// Memory of one large transfer (a rendezvous: frame.h kFlagRendezvous, kFlagReplyBuffer),
// registered for it alone. Allocated untouched (the kernel gives pages as they are written),
// registered, and deregistered before it is freed; memory whose deregistration fails is kept,
// since a device could still write it.
class TransferBuffer {
 public:
  TransferBuffer() = default;
  ~TransferBuffer() { Reset(); }
  TransferBuffer(const TransferBuffer&) = delete;
  TransferBuffer& operator=(const TransferBuffer&) = delete;

  // `n` bytes, not registered (what was held is let go first). False: no memory.
  bool Allocate(size_t n);
  // Registers the first `n` bytes (again, when registered before). False: not registered.
  bool Register(ibv_pd* pd, size_t n, int access);
  void Reset();

  uint8_t* data() const { return buf_.get(); }
  size_t capacity() const { return cap_; }
  bool registered() const { return mr_ != nullptr; }
  uint32_t lkey() const { return mr_->lkey; }
  uint32_t rkey() const { return mr_->rkey; }

 private:
  // False when the memory stays registered (it is then kept, never freed).
  bool Deregister();

  std::unique_ptr<uint8_t[]> buf_;
  size_t cap_ = 0;
  ibv_mr* mr_ = nullptr;
};

}  // namespace basalt::verbs
