// The scanners HBase clients hold open between calls (ClientService's Scan): opened on a region,
// read a call at a time with HBase's checks (the call sequence, one call at a time, renewals,
// closes), cut into partial results where a row is wider than a call's batch or reply size, and
// answered early with a heartbeat when a filter refuses row after row. A scanner whose client has
// not called for its lease is closed, as HBase's lease thread does, even when no call comes to
// notice it; one whose table closes (disabled, dropped) goes at once.
//
// Thread-safety: every method may be called from any number of threads; a scanner serves one
// call at a time (a second is OutOfOrderScannerNextException).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/hbase/hbase_client.pb.h"
#include "src/front/hbase/hbase_service.h"
#include "src/services/service.h"

namespace basalt::hbase {

class Scanners {
 public:
  struct Options {
    int64_t lease_ms = 60000;  // HBase's scanner lease
    int max_scanners = 10000;  // open at once; past it an open is refused
    int max_scanners_per_user = 0;  // open at once by one (authenticated) user; 0: no cap
  };
  // `data` must outlive the scanners. Starts the lease thread.
  Scanners(const Options& options, server::DataService* data);
  ~Scanners();  // Shutdown()s
  Scanners(const Scanners&) = delete;
  Scanners& operator=(const Scanners&) = delete;

  // When a scan call must answer, rows or not: half the call's timeout or the scanner's lease,
  // whichever is shorter, as HBase's region server does; never, for a client that does not handle
  // heartbeats.
  absl::Time Deadline(const Call& call, const ScanRequest& req) const;
  // Opens a scanner on `region` reading `read` (the scan's columns, time range, versions and
  // filter, as Basalt's), and answers its first rows. `authorize` checks (and may narrow) the
  // scan before it opens; `owner` is the caller, the only one its later calls are taken from.
  // ResourceExhausted past max_scanners.
  absl::Status Open(const NamedRegion& region, const ScanRequest& req, rpc::ReadOptions read, absl::Time deadline,
                    const std::function<absl::Status(rpc::ScanRequest*)>& authorize, std::string owner,
                    ScanResponse* resp);
  // A later call of the scanner req.scanner_id() names: its next rows, a renewal or a close.
  // `admit` is asked first for a call that reads (the quotas of the scanner's table).
  // UnknownScannerException for a scanner that is gone; OutOfOrderScannerNextException for one in
  // use or a call sequence out of order (the scanner is closed: the client opens another);
  // AccessDeniedException when `user` is not the scanner's owner.
  absl::Status Next(const ScanRequest& req, absl::Time deadline, std::string_view user,
                    const std::function<absl::Status(const std::string& table)>& admit, ScanResponse* resp);
  // Closes every scanner and stops the lease thread. Idempotent.
  void Shutdown();

 private:
  struct Scanner;
  void Reap();
  void OnTableClosed(uint64_t id);
  void Expire(std::vector<std::shared_ptr<Scanner>>* gone) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Fill(uint64_t id, const std::shared_ptr<Scanner>& scanner, uint32_t rows, bool close, bool counted,
                    absl::Time deadline, ScanResponse* resp);

  const Options options_;
  server::DataService* const data_;
  // A scanner's cursor is never destroyed under `mu_`: its destructor takes the table's hook
  // lock, under which a closing table calls OnTableClosed, which takes `mu_`. Scanners taken out
  // of the map under `mu_` are destroyed after it is released (by whoever holds the last
  // reference, or by the reaper, which buries what it and the hooks take out).
  absl::Mutex mu_;
  std::map<uint64_t, std::shared_ptr<Scanner>> open_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool wake_ ABSL_GUARDED_BY(mu_) = false;  // a table closed under some scanners, or stopping
  std::vector<std::shared_ptr<Scanner>> graveyard_ ABSL_GUARDED_BY(mu_);
  std::thread reaper_;
};

}  // namespace basalt::hbase
