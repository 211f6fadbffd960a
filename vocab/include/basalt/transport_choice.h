// Which transport carries Get and Put: the one choice the client (ConnectionOptions::transport)
// and the server (its `rdma` setting: auto, on = kVerbs, off = kGrpc) both make. Scans, batches
// and admin calls always take gRPC.
#pragma once

namespace basalt {

enum class TransportChoice {
  kAuto,   // verbs when both sides have an RDMA device (the server offers an RDMA session),
           // else the TCP fast path when the server offers it, else gRPC
  kGrpc,   // everything over gRPC
  kVerbs,  // verbs is required: an error if it is unavailable
  kTcp,    // the TCP fast path is required (a client's choice only): an error if it is unavailable
};

}  // namespace basalt
