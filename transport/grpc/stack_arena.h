// A protobuf Arena whose first block is a buffer inside the object, for a message that lives
// for one call on the stack: a Get's reply, built by the server or parsed by the client. Its
// nested messages and string objects come from the block instead of one malloc each (a whole
// YCSB row's reply held some 40); only a string longer than std::string keeps inline still
// allocates, and a reply larger than the block takes further blocks from the heap.
//
// Thread-safety: as google::protobuf::Arena (one thread at a time here).
#pragma once

#include <cstddef>

#include "google/protobuf/arena.h"

namespace basalt {

template <size_t kBlockBytes = 8192>
class StackArena {
 public:
  StackArena() : arena_(Options(block_)) {}
  StackArena(const StackArena&) = delete;
  StackArena& operator=(const StackArena&) = delete;

  // A new message of type M on the arena (destroyed with it).
  template <class M>
  M* Create() {
    return google::protobuf::Arena::CreateMessage<M>(&arena_);
  }

 private:
  static google::protobuf::ArenaOptions Options(char* block) {
    google::protobuf::ArenaOptions o;
    o.initial_block = block;
    o.initial_block_size = kBlockBytes;
    return o;
  }

  alignas(std::max_align_t) char block_[kBlockBytes];
  google::protobuf::Arena arena_;  // after block_: built from it, destroyed before it
};

}  // namespace basalt
