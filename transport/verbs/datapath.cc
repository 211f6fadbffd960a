#include "transport/verbs/datapath.h"

#include <poll.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"

namespace basalt::verbs {

// ---------------------------------------------------------------------------------------------
// SharedChunk

absl::StatusOr<std::unique_ptr<SharedChunk>> SharedChunk::Create(size_t slots, size_t slot_bytes) {
  if (slots == 0 || slots > kMaxSlots || slot_bytes == 0 || slot_bytes > 2 * kMaxMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("shared chunk: bad size ", slots, " x ", slot_bytes));
  }
  std::unique_ptr<SharedChunk> c(new SharedChunk());
  c->slots_ = slots;
  c->slot_bytes_ = (slot_bytes + 63) & ~size_t{63};
  c->bytes_ = c->slots_ * c->slot_bytes_;
  void* p = mmap(nullptr, c->bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return ErrnoError(absl::StatusCode::kResourceExhausted, "shared chunk: mmap", errno);
  c->base_ = static_cast<uint8_t*>(p);
  absl::MutexLock l(&c->mu_);
  c->free_.reserve(slots);
  for (size_t i = slots; i-- > 0;) c->free_.push_back(static_cast<uint32_t>(i));  // slot 0 first
  return c;
}

SharedChunk::~SharedChunk() {
  if (mr_ != nullptr) ibv_dereg_mr(mr_);
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  if (base_ != nullptr) munmap(base_, bytes_);
}

absl::Status SharedChunk::Bind(ibv_context* ctx) {
  absl::MutexLock l(&mu_);
  if (ctx_ != nullptr) {
    if (ctx_ == ctx) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat("registered buffers are on ", ibv_get_device_name(ctx_->device),
                                                      ", not ", ibv_get_device_name(ctx->device)));
  }
  pd_ = ibv_alloc_pd(ctx);
  if (pd_ == nullptr) return ErrnoError(absl::StatusCode::kUnavailable, "ibv_alloc_pd", errno);
  mr_ = ibv_reg_mr(pd_, base_, bytes_, static_cast<int>(IBV_ACCESS_LOCAL_WRITE));  // int: rdma-core ORs in its own flags
  if (mr_ == nullptr) {
    int err = errno;
    ibv_dealloc_pd(pd_);
    pd_ = nullptr;
    return ErrnoError(absl::StatusCode::kResourceExhausted,
                      absl::StrCat("ibv_reg_mr of ", bytes_, " bytes (is RLIMIT_MEMLOCK high enough? see deploy/RDMA.md)"),
                      err);
  }
  ctx_ = ctx;
  return absl::OkStatus();
}

std::optional<SharedChunk::Slice> SharedChunk::Acquire() {
  absl::MutexLock l(&mu_);
  if (free_.empty()) return std::nullopt;
  uint32_t i = free_.back();
  free_.pop_back();
  Slice s;
  s.index = i;
  s.offset = size_t{i} * slot_bytes_;
  s.size = slot_bytes_;
  s.data = base_ + s.offset;
  return s;
}

void SharedChunk::Release(const Slice& s) {
  absl::MutexLock l(&mu_);
  free_.push_back(s.index);
}

size_t SharedChunk::in_use() const {
  absl::MutexLock l(&mu_);
  return slots_ - free_.size();
}

// ---------------------------------------------------------------------------------------------
// CompletionQueue

absl::StatusOr<std::unique_ptr<CompletionQueue>> CompletionQueue::Create(ibv_context* ctx, int entries) {
  std::unique_ptr<CompletionQueue> q(new CompletionQueue());
  q->channel_ = ibv_create_comp_channel(ctx);
  if (q->channel_ == nullptr) return ErrnoError(absl::StatusCode::kUnavailable, "ibv_create_comp_channel", errno);
  if (absl::Status st = SetNonBlocking(q->channel_->fd, "completion channel"); !st.ok()) return st;
  q->cq_ = ibv_create_cq(ctx, entries, nullptr, q->channel_, 0);
  if (q->cq_ == nullptr) return ErrnoError(absl::StatusCode::kUnavailable, "ibv_create_cq", errno);
  return q;
}

std::unique_ptr<CompletionQueue> CompletionQueue::WrapUnowned(ibv_cq* cq) {
  std::unique_ptr<CompletionQueue> q(new CompletionQueue());
  q->cq_ = cq;
  q->owned_ = false;
  return q;
}

CompletionQueue::~CompletionQueue() {
  if (!owned_) return;
  if (cq_ != nullptr) {
    if (unacked_ > 0) ibv_ack_cq_events(cq_, unacked_);
    ibv_destroy_cq(cq_);
  }
  if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
}

absl::StatusOr<int> CompletionQueue::Wait(absl::Span<ibv_wc> wc, absl::Duration spin, absl::Time deadline) {
  const int n = static_cast<int>(wc.size());
  absl::Time spin_until = absl::InfinitePast();
  for (uint32_t iter = 0;; ++iter) {
    int k = ibv_poll_cq(cq_, n, wc.data());
    if (k < 0) return absl::UnavailableError("ibv_poll_cq failed");
    if (k > 0) return k;
    if (!armed_) {
      // Still spinning?
      if ((iter & 31) == 0) {
        absl::Time now = absl::Now();
        if (spin_until == absl::InfinitePast()) spin_until = now + spin;
        if (now >= deadline) return 0;
        if (now < spin_until) continue;
      } else {
        continue;
      }
      if (channel_ == nullptr) continue;  // unowned loopback CQ: spin to the deadline
      if (ibv_req_notify_cq(cq_, 0) != 0) return absl::UnavailableError("ibv_req_notify_cq failed");
      armed_ = true;
      continue;  // poll once more: a completion may have landed before the CQ was armed
    }
    absl::Time now = absl::Now();
    if (now >= deadline) return 0;
    int timeout_ms = static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(deadline - now) + 1, 100));
    pollfd pfd{channel_->fd, POLLIN, 0};
    int r = poll(&pfd, 1, timeout_ms);
    if (r < 0 && errno != EINTR) return ErrnoError(absl::StatusCode::kUnavailable, "poll on completion channel", errno);
    if (r > 0) {
      ibv_cq* ev_cq = nullptr;
      void* ev_ctx = nullptr;
      if (ibv_get_cq_event(channel_, &ev_cq, &ev_ctx) == 0) {
        armed_ = false;
        if (++unacked_ >= 16) {
          ibv_ack_cq_events(cq_, unacked_);
          unacked_ = 0;
        }
        spin_until = absl::InfinitePast();
      }
    }
  }
}

Endpoint::~Endpoint() {
  id_.reset();  // the queue pair and the id go before the slice is given back
  if (chunk_ != nullptr) chunk_->Release(slice_);
}

absl::Status Endpoint::Replenish(uint64_t wr_id) {
  if (posted_ > 0) return absl::OkStatus();
  ibv_sge sge{reinterpret_cast<uintptr_t>(recv_buf()), static_cast<uint32_t>(half()), lkey_};
  ibv_recv_wr wr[kRecvBatch] = {};
  for (uint32_t i = 0; i < kRecvBatch; ++i) {
    wr[i].wr_id = wr_id;
    wr[i].sg_list = &sge;
    wr[i].num_sge = 1;
    wr[i].next = i + 1 < kRecvBatch ? &wr[i + 1] : nullptr;
  }
  ibv_recv_wr* bad = nullptr;
  int rc = ibv_post_recv(qp_, wr, &bad);
  if (rc != 0) return ErrnoError(absl::StatusCode::kUnavailable, "ibv_post_recv", rc);
  posted_ = kRecvBatch;
  return absl::OkStatus();
}

absl::Status Endpoint::PostRecv(uint32_t i, uint64_t wr_id) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(recv_buf(i)), static_cast<uint32_t>(half()), lkey_};
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  int rc = ibv_post_recv(qp_, &wr, &bad);
  if (rc != 0) return ErrnoError(absl::StatusCode::kUnavailable, "ibv_post_recv", rc);
  return absl::OkStatus();
}

absl::Status Endpoint::PostSends(absl::Span<const SendItem> items, size_t* posted) {
  if (posted != nullptr) *posted = 0;
  constexpr size_t kChain = 32;
  ibv_sge sge[kChain];
  ibv_send_wr wr[kChain];
  for (size_t done = 0; done < items.size();) {
    const size_t n = std::min(kChain, items.size() - done);
    for (size_t j = 0; j < n; ++j) {
      const SendItem& it = items[done + j];
      sge[j] = ibv_sge{reinterpret_cast<uintptr_t>(it.data), static_cast<uint32_t>(it.len), it.lkey};
      wr[j] = ibv_send_wr{};
      wr[j].wr_id = it.wr_id;
      wr[j].sg_list = &sge[j];
      wr[j].num_sge = 1;
      wr[j].opcode = IBV_WR_SEND;
      if (Inlines(it.len)) wr[j].send_flags |= IBV_SEND_INLINE;
      if (it.signaled || (sends_.fetch_add(1, std::memory_order_relaxed) + 1) % kSignalEvery == 0) {
        wr[j].send_flags |= IBV_SEND_SIGNALED;
      }
      wr[j].next = j + 1 < n ? &wr[j + 1] : nullptr;
    }
    ibv_send_wr* bad = nullptr;
    int rc = ibv_post_send(qp_, wr, &bad);
    if (rc != 0) {
      if (posted != nullptr) {
        size_t ok = 0;
        while (ok < n && &wr[ok] != bad) ++ok;
        *posted = done + ok;
      }
      return ErrnoError(absl::StatusCode::kUnavailable, "ibv_post_send", rc);
    }
    done += n;
    if (posted != nullptr) *posted = done;
  }
  return absl::OkStatus();
}

namespace {

absl::Status PostRdma(ibv_qp* qp, ibv_wr_opcode opcode, uint64_t wr_id, uint8_t* local, uint32_t len, uint32_t lkey,
                      uint64_t remote_addr, uint32_t rkey) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(local), len, lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = opcode;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = remote_addr;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  int rc = ibv_post_send(qp, &wr, &bad);
  if (rc != 0) {
    return ErrnoError(absl::StatusCode::kUnavailable,
                      opcode == IBV_WR_RDMA_READ ? "ibv_post_send (RDMA READ)" : "ibv_post_send (RDMA WRITE)", rc);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Endpoint::PostRead(uint64_t wr_id, uint8_t* local, uint32_t len, uint32_t lkey, uint64_t remote_addr,
                                uint32_t rkey) {
  return PostRdma(qp_, IBV_WR_RDMA_READ, wr_id, local, len, lkey, remote_addr, rkey);
}

absl::Status Endpoint::PostWrite(uint64_t wr_id, uint8_t* local, uint32_t len, uint32_t lkey, uint64_t remote_addr,
                                 uint32_t rkey) {
  return PostRdma(qp_, IBV_WR_RDMA_WRITE, wr_id, local, len, lkey, remote_addr, rkey);
}

absl::StatusOr<std::unique_ptr<SharedReceiveQueue>> SharedReceiveQueue::Create(SharedChunk* chunk, uint32_t depth,
                                                                                uint32_t tag) {
  if (depth < 1 || depth > 65536) {
    return absl::InvalidArgumentError(absl::StrCat("verbs: a shared receive queue of ", depth,
                                                   " receives (must be 1..65536)"));
  }
  ibv_device_attr attr{};
  if (ibv_query_device(chunk->pd()->context, &attr) != 0) {
    return ErrnoError(absl::StatusCode::kUnavailable, "ibv_query_device", errno);
  }
  if (attr.max_srq < 1 || static_cast<uint32_t>(attr.max_srq_wr) < depth) {
    return absl::FailedPreconditionError(absl::StrCat("verbs: the device allows ", attr.max_srq,
                                                      " shared receive queues of up to ", attr.max_srq_wr,
                                                      " receives; ", depth, " are wanted (rdma_srq_depth)"));
  }
  std::unique_ptr<SharedReceiveQueue> q(new SharedReceiveQueue);
  q->chunk_ = chunk;
  q->tag_ = tag;
  for (uint32_t i = 0; i < depth; ++i) {
    std::optional<SharedChunk::Slice> s = chunk->Acquire();
    if (!s) return absl::ResourceExhaustedError("verbs: no registered memory left for shared receives");
    q->buffers_.push_back(*s);
  }
  q->held_ = std::make_unique<std::atomic<uint64_t>[]>(depth);
  ibv_srq_init_attr init{};
  init.attr.max_wr = depth;
  init.attr.max_sge = 1;
  q->srq_ = ibv_create_srq(chunk->pd(), &init);
  if (q->srq_ == nullptr) return ErrnoError(absl::StatusCode::kUnavailable, "ibv_create_srq", errno);
  for (uint32_t i = 0; i < depth; ++i) BASALT_RETURN_IF_ERROR(q->Post(i));
  return q;
}

SharedReceiveQueue::~SharedReceiveQueue() {
  if (srq_ != nullptr && ibv_destroy_srq(srq_) != 0) {
    // Its buffers stay registered with the chunk, which outlives it; a device could still write them.
    log::Warning("verbs: ibv_destroy_srq failed; its receive buffers are kept");
    return;
  }
  for (const SharedChunk::Slice& b : buffers_) chunk_->Release(b);
}

absl::Span<const uint8_t> SharedReceiveQueue::Message(uint32_t b, uint32_t len) const {
  const SharedChunk::Slice& s = buffers_[b];
  return {s.data, std::min<size_t>(len, s.size)};
}

SharedReceiveQueue::Held SharedReceiveQueue::Take(uint32_t b, uint32_t owner) {
  // Only the helper whose receive completed takes a buffer, and a posted buffer is held by none.
  const uint32_t seq = static_cast<uint32_t>(held_[b].load(std::memory_order_relaxed) >> 32) + 1;
  held_[b].store((uint64_t{seq} << 32) | owner, std::memory_order_release);
  return Held{b, seq};
}

void SharedReceiveQueue::Release(const Held& h) {
  std::atomic<uint64_t>& state = held_[h.buffer];
  uint64_t s = state.load(std::memory_order_acquire);
  do {
    if (static_cast<uint32_t>(s >> 32) != h.seq || static_cast<uint32_t>(s) == 0) return;
  } while (!state.compare_exchange_weak(s, uint64_t{h.seq} << 32, std::memory_order_acq_rel));
  Repost(h.buffer);
}

void SharedReceiveQueue::ReleaseHeldBy(uint32_t owner) {
  for (uint32_t b = 0; b < buffers_.size(); ++b) {
    const uint64_t s = held_[b].load(std::memory_order_acquire);
    if (static_cast<uint32_t>(s) == owner) Release(Held{b, static_cast<uint32_t>(s >> 32)});
  }
}

void SharedReceiveQueue::Repost(uint32_t b) {
  if (absl::Status st = Post(b); !st.ok()) {
    log::Warning(absl::StrCat("verbs: posting a shared receive again: ", st.ToString()));
  }
}

absl::Status SharedReceiveQueue::Post(uint32_t b) {
  const SharedChunk::Slice& s = buffers_[b];
  ibv_sge sge{reinterpret_cast<uintptr_t>(s.data), static_cast<uint32_t>(s.size), chunk_->lkey()};
  ibv_recv_wr wr{};
  wr.wr_id = tag_ | b;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  int rc = ibv_post_srq_recv(srq_, &wr, &bad);
  if (rc != 0) return ErrnoError(absl::StatusCode::kUnavailable, "ibv_post_srq_recv", rc);
  return absl::OkStatus();
}

bool TransferBuffer::Deregister() {
  if (mr_ == nullptr) return true;
  if (ibv_dereg_mr(mr_) != 0) {
    log::Warning("verbs: ibv_dereg_mr of a rendezvous buffer failed; its memory is kept");
    (void)buf_.release();
    cap_ = 0;
    mr_ = nullptr;
    return false;
  }
  mr_ = nullptr;
  return true;
}

void TransferBuffer::Reset() {
  Deregister();
  buf_.reset();
  cap_ = 0;
}

bool TransferBuffer::Allocate(size_t n) {
  Reset();
  buf_.reset(new (std::nothrow) uint8_t[n]);
  cap_ = buf_ != nullptr ? n : 0;
  return buf_ != nullptr;
}

bool TransferBuffer::Register(ibv_pd* pd, size_t n, int access) {
  if (buf_ == nullptr || n > cap_ || !Deregister()) return false;
  mr_ = ibv_reg_mr(pd, buf_.get(), n, access);
  return mr_ != nullptr;
}

}  // namespace basalt::verbs
