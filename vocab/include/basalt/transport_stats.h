// What a client's transport did, per server (Connection::TransportStats). Public and
// dependency-free: the transport fills it in, the client API returns it.
#pragma once

#include <cstdint>
#include <string>

namespace basalt {

struct TransportStats {
  // The path that carries Gets and Mutates: "verbs", "tcp", or "grpc" (neither could be had).
  std::string path = "grpc";
  // "grpc only" (verbs not asked for), "off: <why>" (no device, the server offers none),
  // "up", or "down: <last failure>" (calls take gRPC until verbs is retried).
  std::string verbs_state = "grpc only";
  uint64_t verbs_calls = 0;        // Gets and Mutates answered over verbs
  uint64_t grpc_fallbacks = 0;     // ... sent over gRPC because the fast path failed or was down
  uint64_t oversized = 0;          // ... too large for the fast path's frames, sent over gRPC
  uint64_t verbs_failures = 0;     // transport failures seen on verbs
  uint64_t endpoints_created = 0;  // endpoints connected since the connection opened
  uint64_t endpoints_open = 0;
  uint64_t endpoint_waits = 0;     // calls that waited for a free endpoint
  uint64_t verbs_async_calls = 0;  // async Gets and Mutates started on verbs' async endpoints
  uint64_t verbs_async_queued = 0; // ... that waited for a free async endpoint credit
  // The most async calls in flight at once on one verbs endpoint (its credits used).
  uint64_t verbs_async_peak_per_endpoint = 0;
  uint64_t sessions = 0;           // RDMA sessions fetched over gRPC
  // The TCP fast path, asked for when verbs cannot be had: "not asked" (verbs was, or the
  // client chose another transport), "off: <why>" (the server offers none), "up", or
  // "down: <last failure>" (calls take gRPC until it is retried).
  std::string tcp_state = "not asked";
  uint64_t tcp_calls = 0;          // Gets and Mutates answered over TCP
  uint64_t tcp_connects = 0;       // connections opened since the connection opened
  uint64_t tcp_connections_open = 0;
  uint64_t tcp_failures = 0;       // calls failed by a broken connection (and repeated over gRPC)
  uint64_t tcp_sessions = 0;       // TCP sessions fetched over gRPC
  // The connection's region locations (client.h, "Regions"): reads of basalt:meta, and regions
  // forgotten because they refused a call (split, merged, moved).
  uint64_t meta_lookups = 0;
  uint64_t regions_relocated = 0;
};

}  // namespace basalt
