// The bare TCP floor of `basalt-bench server ycsb --transport=tcp --workload=C,echo` (issue 51,
// BENCHMARKS §24): the TCP fast path's event loops (src/base/stream_port.h, as many as the
// server's default tcp_loop_threads: one per core) and its client (transport/tcp/client.h), with
// nothing behind them. An echo port in the benchmark's process answers each request frame with a
// YCSB record's Get reply (10 × 100 B fields, encoded once, its request id set per call), and
// the client sends a YCSB Get's frame and decodes that reply: what a Get over the TCP path costs
// without the server's dispatch, authorisation, metrics and read, as the bare-gRPC Echo is gRPC's
// floor. Not a server's door: it listens on loopback for the benchmark's life, takes any proof.
//
// By default the port runs in a process of its own (`basalt-bench tcp_echo_port`, spawned from
// the benchmark's own executable), as the server's loops do: then a reply crosses processes as a
// Get's does, and the scheduler's switches between the client and the loops cost what they cost
// against a server. In the benchmark's process (`in_process`), the loops and the client threads
// share one address space, which makes each switch cheaper than a real server's (BENCHMARKS §24c).
//
// The copy floor (the default) reads each request's header only and copies the record's reply
// frame. The codec floor (`codec`, --tcp_echo_codec) decodes and admits each request and encodes
// its reply from the record's cells, as the TCP front does around its Get handler: the frames'
// whole cost at both ends, as gRPC's bare Echo parses and serialises its messages (BENCHMARKS
// §24e).
//
// Thread-safety: Call from any thread.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/basalt.pb.h"
#include "src/base/stream_port.h"
#include "transport/tcp/client.h"
#include "transport/verbs/frame.h"

namespace basalt::bench {

class TcpEchoFloor {
 public:
  // The port on 127.0.0.1 (loop_threads loops) and a client of `connections` connections to it;
  // the port in a child process (this executable's `tcp_echo_port`) unless in_process.
  static absl::StatusOr<std::unique_ptr<TcpEchoFloor>> Start(int loop_threads, int connections, bool in_process,
                                                              bool codec = false);
  ~TcpEchoFloor();

  // One call: a Get of `row`'s frame out, the record's reply back and decoded.
  absl::Status Call(const std::string& row, absl::Duration timeout) const;

 private:
  TcpEchoFloor() = default;
  std::string reply_;  // the reply frame (request id 0): the sessions copy it and set the id
  std::unique_ptr<verbs::ReplyRow> row_;  // in_process with codec: the record's cells, encoded per call
  std::unique_ptr<server::StreamPort> port_;  // in_process only
  pid_t child_ = -1;                          // else the port's process,
  int child_stdin_ = -1;                      // which exits when this closes
  std::unique_ptr<tcp::TcpClient> client_;
};

// `basalt-bench tcp_echo_port LOOPS [codec]`: runs the echo port in this process, writes its port
// number and a newline to stdout, and shuts it down when stdin reaches its end. Returns the exit
// code.
int RunTcpEchoPort(int loop_threads, bool codec);

}  // namespace basalt::bench
