// Test parts for src/replication/: a standalone server's catalogue and services (a Node), and a
// sink's HBase port over one, as a standalone server serves them.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/catalog/catalog.h"
#include "src/front/hbase/hbase_front.h"
#include "src/front/hbase/hbase_services.h"
#include "src/services/admin_parts.h"
#include "src/services/service.h"

namespace basalt::testing {

inline constexpr char kSourceId[] = "0f0f0f0f-1111-4222-8333-444444444444";
inline constexpr char kSinkId[] = "a0a0a0a0-5555-4666-8777-888888888888";

// A standalone server's parts: a catalogue in `dir` with table t (family f), and its services.
struct Node {
  // `holds`: the log's readers carried over a restart (the server reads them from the kept places).
  explicit Node(const std::string& dir, std::map<std::string, uint64_t> holds = {}) {
    server::Catalog::Options o;
    o.data_dir = dir;
    o.log = [](std::string_view) {};
    o.wal_holds = std::move(holds);
    absl::StatusOr<std::unique_ptr<server::Catalog>> c = server::Catalog::Open(o);
    EXPECT_TRUE(c.ok()) << c.status();
    catalog = *std::move(c);
    EXPECT_TRUE(catalog->SetServerName("127.0.0.1:16020").ok());
    data = std::make_unique<server::DataService>(catalog.get(), server::ServerConfig{});
    admin = server::AdminService::ForStandalone(catalog.get(), &counters);
    rpc::CreateTableRequest req;
    req.mutable_table()->set_name("t");
    rpc::FamilyDescriptor* f = req.mutable_table()->add_families();
    f->set_name("f");
    rpc::KeptSetting* scope = f->add_kept_attributes();  // (the shipper's test gives its own scope)
    scope->set_key("REPLICATION_SCOPE");
    scope->set_value("1");
    req.mutable_table()->add_families()->set_name("local");
    rpc::CreateTableResponse resp;
    absl::Status made = admin->CreateTable(req, &resp);
    EXPECT_TRUE(made.ok() || absl::IsAlreadyExists(made)) << made;
  }
  void Put(int from, int to) {
    for (int i = from; i < to; ++i) {
      rpc::BatchMutateRequest b;
      b.set_table("t");
      rpc::RowMutations* row = b.add_rows();
      row->set_row(absl::StrCat("r", 10000 + i));
      for (const char* family : {"f", "local"}) {
        rpc::Mutation* m = row->add_mutations();
        m->set_family(family);
        m->set_qualifier("q");
        m->set_value(absl::StrCat("v", i));
      }
      rpc::BatchMutateResponse resp;
      ASSERT_TRUE(data->BatchMutate(b, &resp).ok());
      ASSERT_EQ(resp.results(0).code(), 0) << resp.results(0).message();
    }
  }
  // How many of rows from..to hold f:q = v<i> (and nothing of family local: not replicated).
  int Have(int from, int to) {
    int n = 0;
    for (int i = from; i < to; ++i) {
      rpc::GetRequest g;
      g.set_table("t");
      g.set_row(absl::StrCat("r", 10000 + i));
      rpc::GetResponse r;
      if (!data->Get(g, &r).ok()) continue;
      n += r.row().cells_size() == 1 && r.row().cells(0).value() == absl::StrCat("v", i) &&
           r.row().cells(0).family() == "f";
    }
    return n;
  }

  server::ServerCounters counters;
  std::unique_ptr<server::Catalog> catalog;
  std::unique_ptr<server::DataService> data;
  std::unique_ptr<server::AdminService> admin;
};

// A sink's HBase port over `node`, as a standalone server serves it (its writes on threads of
// their own); `port` 0: a free one.
inline std::unique_ptr<hbase::HBaseFront> StartSinkPort(Node* node, int port) {
  hbase::HBaseFront::Options o;
  o.port.listen = absl::StrCat("127.0.0.1:", port);
  o.port.log = [](std::string_view) {};
  o.start_code = 1;
  o.schedule = [](std::function<void()> task) { std::thread(std::move(task)).detach(); };
  auto front = std::make_unique<hbase::HBaseFront>(o);
  hbase::ServiceParts parts;
  parts.data = node->data.get();
  parts.admin = node->admin.get();
  parts.cluster_id = kSinkId;
  hbase::ServeAsStandalone(front.get(), parts);
  absl::Status started = front->Start();
  EXPECT_TRUE(started.ok()) << started;
  return front;
}

inline bool Eventually(const std::function<bool()>& cond) {
  for (int i = 0; i < 2000 && !cond(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return cond();
}

}  // namespace basalt::testing
