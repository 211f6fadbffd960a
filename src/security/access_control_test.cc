// The access controller's rules (access_control.h) over a real basalt:acl region: which scope a
// permission holds at, how reads are narrowed, and that grants survive a restart. The same
// rules through a real server, TLS and certificates: tests/integration/security_test.cc.
#include "src/security/access_control.h"

#include <memory>

#include "gtest/gtest.h"
#include "src/security/authorize.h"
#include "src/schema/meta.h"
#include "src/catalog/catalog.h"
#include "src/catalog/test_catalog.h"
#include "tests/util/temp_dir.h"

namespace basalt::server {
namespace {

std::unique_ptr<AccessController> OpenAc(Catalog* tm, std::vector<std::string> superusers = {"root"}) {
  AccessController::Options o;
  o.enabled = true;
  o.superusers = std::move(superusers);
  auto ac = AccessController::Open(o, tm->acl_region());
  EXPECT_TRUE(ac.ok()) << ac.status();
  return ac.ok() ? *std::move(ac) : nullptr;
}

Identity User(std::string name, std::vector<std::string> groups = {}) {
  Identity id;
  id.user = std::move(name);
  id.groups = std::move(groups);
  return id;
}

Identity Root(const AccessController& ac) {
  Identity id = User("root");
  ac.Resolve(&id);
  return id;
}

PermScope Table(std::string t, std::string f = "", std::string q = "") { return PermScope{"", t, f, q}; }

TEST(AccessControl, PermissionLettersParseAndPrint) {
  EXPECT_EQ(PermString(*ParsePerms("rw")), "RW");
  EXPECT_EQ(PermString(*ParsePerms("ACXWR")), "RWXCA");
  EXPECT_EQ(ParsePerms("RZ").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ParsePerms("RZ").status().message().find("'Z'"), std::string::npos);
  EXPECT_EQ(ParsePerms("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AccessControl, APermissionHoldsAtItsScopeAndBelowIt) {
  testing::TempDir dir;
  auto tm = OpenManager(dir.path());
  auto ac = OpenAc(tm.get());
  const Identity root = Root(*ac);
  ASSERT_TRUE(ac->Grant(root, PermGrant{"alice", PermScope{}, kPermRead}).ok());
  ASSERT_TRUE(ac->Grant(root, PermGrant{"bob", PermScope{"default", "", "", ""}, kPermWrite}).ok());
  ASSERT_TRUE(ac->Grant(root, PermGrant{"carol", Table("t1"), kPermRead}).ok());
  ASSERT_TRUE(ac->Grant(root, PermGrant{"dave", Table("t1", "cf"), kPermWrite}).ok());
  ASSERT_TRUE(ac->Grant(root, PermGrant{"erin", Table("t1", "cf", "q"), kPermWrite}).ok());
  ASSERT_TRUE(ac->Grant(root, PermGrant{"@ops", Table("t2"), kPermCreate}).ok());

  EXPECT_TRUE(ac->CheckTable(User("alice"), "Get", "t9", kPermRead, "x", "y").ok());  // global
  EXPECT_FALSE(ac->CheckTable(User("alice"), "Mutate", "t9", kPermWrite).ok());
  EXPECT_TRUE(ac->CheckTable(User("bob"), "Mutate", "t9", kPermWrite, "cf", "q").ok());  // namespace default
  EXPECT_FALSE(ac->CheckTable(User("bob"), "Mutate", "basalt:meta", kPermWrite).ok());  // not its namespace
  EXPECT_TRUE(ac->CheckTable(User("carol"), "Get", "t1", kPermRead, "any").ok());
  EXPECT_FALSE(ac->CheckTable(User("carol"), "Get", "t2", kPermRead).ok());
  EXPECT_TRUE(ac->CheckTable(User("dave"), "Mutate", "t1", kPermWrite, "cf", "q").ok());
  EXPECT_FALSE(ac->CheckTable(User("dave"), "Mutate", "t1", kPermWrite, "other", "q").ok());
  EXPECT_FALSE(ac->CheckTable(User("dave"), "Mutate", "t1", kPermWrite).ok());  // a row delete: the table
  EXPECT_TRUE(ac->CheckTable(User("erin"), "Mutate", "t1", kPermWrite, "cf", "q").ok());
  EXPECT_FALSE(ac->CheckTable(User("erin"), "Mutate", "t1", kPermWrite, "cf", "r").ok());
  EXPECT_FALSE(ac->CheckTable(User("erin"), "Mutate", "t1", kPermWrite, "cf").ok());  // the whole family
  EXPECT_TRUE(ac->CheckTable(User("frank", {"ops"}), "DropTable", "t2", kPermCreate | kPermAdmin).ok());
  EXPECT_FALSE(ac->CheckTable(User("frank"), "DropTable", "t2", kPermCreate | kPermAdmin).ok());

  absl::Status denied = ac->CheckTable(User("dave"), "Mutate", "t1", kPermWrite, "other", "q");
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(denied.message().find("user 'dave' may not Mutate: it needs W on table t1, column other:q"),
            std::string::npos)
      << denied;
  EXPECT_TRUE(ac->HasAnyOn(User("erin"), "t1"));
  EXPECT_FALSE(ac->HasAnyOn(User("erin"), "t2"));
  EXPECT_TRUE(ac->HasAnywhere(User("erin"), kPermWrite));
  EXPECT_FALSE(ac->HasAnywhere(User("erin"), kPermRead));
  EXPECT_FALSE(ac->HasAnywhere(User("nobody"), kPermRead | kPermWrite));
}

TEST(AccessControl, SuperusersByNameOrGroupMayDoEverything) {
  testing::TempDir dir;
  auto tm = OpenManager(dir.path());
  auto ac = OpenAc(tm.get(), {"root", "@admins"});
  Identity g = User("gina", {"staff", "admins"});
  ac->Resolve(&g);
  EXPECT_TRUE(g.superuser);
  EXPECT_TRUE(ac->CheckGlobal(g, "SetVerbs", kPermAdmin).ok());
  Identity h = User("hal", {"staff"});
  ac->Resolve(&h);
  EXPECT_FALSE(h.superuser);
  EXPECT_EQ(ac->CheckGlobal(h, "SetVerbs", kPermAdmin).code(), absl::StatusCode::kPermissionDenied);
}

TEST(AccessControl, ReadsAreNarrowedToWhatTheCallerMayRead) {
  testing::TempDir dir;
  auto tm = OpenManager(dir.path());
  auto ac = OpenAc(tm.get());
  const Identity root = Root(*ac);
  ASSERT_TRUE(ac->Grant(root, PermGrant{"dave", Table("t1", "a"), kPermRead}).ok());
  ASSERT_TRUE(ac->Grant(root, PermGrant{"dave", Table("t1", "b", "q1"), kPermRead}).ok());
  ASSERT_TRUE(ac->Grant(root, PermGrant{"dave", Table("t1", "c"), kPermWrite}).ok());

  rpc::ReadOptions all;  // every family: narrowed to a, and b:q1
  ASSERT_TRUE(ac->AuthorizeRead(User("dave"), "Get", "t1", &all).ok());
  ASSERT_EQ(all.columns_size(), 2);
  EXPECT_EQ(all.columns(0).family(), "a");
  EXPECT_EQ(all.columns(0).qualifiers_size(), 0);
  EXPECT_EQ(all.columns(1).family(), "b");
  ASSERT_EQ(all.columns(1).qualifiers_size(), 1);
  EXPECT_EQ(all.columns(1).qualifiers(0), "q1");

  rpc::ReadOptions some;  // a whole, b:q1 and b:q2 (only q1 may be read), c (refused)
  some.add_columns()->set_family("a");
  rpc::ColumnSelection* b = some.add_columns();
  b->set_family("b");
  b->add_qualifiers("q1");
  b->add_qualifiers("q2");
  some.add_columns()->set_family("c");
  ASSERT_TRUE(ac->AuthorizeRead(User("dave"), "Scan", "t1", &some).ok());
  ASSERT_EQ(some.columns_size(), 2);
  EXPECT_EQ(some.columns(1).family(), "b");
  ASSERT_EQ(some.columns(1).qualifiers_size(), 1);
  EXPECT_EQ(some.columns(1).qualifiers(0), "q1");

  rpc::ReadOptions only_c;  // nothing of it may be read: refused, never widened to "everything"
  only_c.add_columns()->set_family("c");
  absl::Status s = ac->AuthorizeRead(User("dave"), "Get", "t1", &only_c);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("family c"), std::string::npos) << s;
  rpc::ReadOptions other;
  EXPECT_EQ(ac->AuthorizeRead(User("dave"), "Get", "t2", &other).code(), absl::StatusCode::kPermissionDenied);
  rpc::ReadOptions meta;  // every authenticated user may read basalt:meta (to locate regions)
  EXPECT_TRUE(ac->AuthorizeRead(User("dave"), "Scan", kMetaTableName, &meta).ok());
  EXPECT_EQ(meta.columns_size(), 0);
  rpc::ReadOptions acl;
  EXPECT_EQ(ac->AuthorizeRead(User("dave"), "Scan", kAclTableName, &acl).code(), absl::StatusCode::kPermissionDenied);
}

TEST(AccessControl, WritesNeedWOnEveryColumnTheyTouch) {
  testing::TempDir dir;
  auto tm = OpenManager(dir.path());
  auto ac = OpenAc(tm.get());
  ASSERT_TRUE(ac->Grant(Root(*ac), PermGrant{"dave", Table("t1", "a"), kPermWrite}).ok());
  rpc::MutateRequest put;
  put.set_table("t1");
  rpc::Mutation* m = put.mutable_mutation()->add_mutations();
  m->set_family("a");
  m->set_qualifier("q");
  EXPECT_TRUE(Authorize(*ac, User("dave"), &put).ok());
  rpc::Mutation* m2 = put.mutable_mutation()->add_mutations();
  m2->set_family("b");
  m2->set_qualifier("q");
  EXPECT_EQ(Authorize(*ac, User("dave"), &put).code(), absl::StatusCode::kPermissionDenied);
  rpc::MutateRequest row_delete;
  row_delete.set_table("t1");
  row_delete.mutable_mutation()->add_mutations()->set_kind(rpc::Mutation::DELETE_ROW);
  EXPECT_EQ(Authorize(*ac, User("dave"), &row_delete).code(), absl::StatusCode::kPermissionDenied);
  rpc::CheckAndMutateRequest cam;  // W alone is not enough: the condition is read
  cam.set_table("t1");
  cam.mutable_condition()->set_family("a");
  cam.mutable_condition()->set_qualifier("q");
  EXPECT_EQ(Authorize(*ac, User("dave"), &cam).code(), absl::StatusCode::kPermissionDenied);
  rpc::CreateTableRequest create;
  create.mutable_table()->set_name("t3");
  EXPECT_EQ(Authorize(*ac, User("dave"), &create).code(), absl::StatusCode::kPermissionDenied);
  ASSERT_TRUE(ac->Grant(Root(*ac), PermGrant{"dave", PermScope{"default", "", "", ""}, kPermCreate}).ok());
  EXPECT_TRUE(Authorize(*ac, User("dave"), &create).ok());
}

TEST(AccessControl, GrantsAndRevokesNeedAdminAndSurviveARestart) {
  testing::TempDir dir;
  {
    auto tm = OpenManager(dir.path());
    auto ac = OpenAc(tm.get());
    // Only A on the scope may grant: alice holds A on t1, not globally.
    ASSERT_TRUE(ac->Grant(Root(*ac), PermGrant{"alice", Table("t1"), kPermAdmin}).ok());
    EXPECT_TRUE(ac->Grant(User("alice"), PermGrant{"bob", Table("t1", "cf"), kPermRead | kPermWrite}).ok());
    EXPECT_EQ(ac->Grant(User("alice"), PermGrant{"bob", Table("t2"), kPermRead}).code(),
              absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(ac->Grant(User("alice"), PermGrant{"bob", PermScope{}, kPermRead}).code(),
              absl::StatusCode::kPermissionDenied);
    EXPECT_TRUE(ac->Grant(Root(*ac), PermGrant{"carol", Table("t1"), kPermRead}).ok());
    EXPECT_TRUE(ac->Grant(Root(*ac), PermGrant{"carol", Table("t1"), kPermWrite}).ok());  // replaces R
    EXPECT_TRUE(ac->Grant(Root(*ac), PermGrant{"dan", Table("t1"), kPermRead}).ok());
    EXPECT_TRUE(ac->Revoke(Root(*ac), "dan", Table("t1")).ok());
    // Bad input is refused, naming what is wrong.
    EXPECT_EQ(ac->Grant(Root(*ac), PermGrant{"a,b", Table("t1"), kPermRead}).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(ac->Grant(Root(*ac), PermGrant{"a", PermScope{"", "", "cf", ""}, kPermRead}).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(ac->Grant(Root(*ac), PermGrant{"a", Table("t1"), 0}).code(), absl::StatusCode::kInvalidArgument);
    // A table of namespace default is named without it: kept as "default:t1", the grant would
    // never apply to t1 (nor go with it). A grant on an illegal name is refused too.
    const absl::Status literal = ac->Grant(Root(*ac), PermGrant{"a", Table("default:t1"), kPermRead});
    EXPECT_EQ(literal.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(literal.message().find("named without it ('t1')"), std::string::npos) << literal;
    EXPECT_EQ(ac->Grant(Root(*ac), PermGrant{"a", Table("a b"), kPermRead}).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(ac->Revoke(Root(*ac), "a", Table("default:t1")).ok());  // revoking takes any name
  }
  auto tm = OpenManager(dir.path());
  auto ac = OpenAc(tm.get());
  EXPECT_TRUE(ac->CheckTable(User("bob"), "Get", "t1", kPermRead, "cf").ok());
  EXPECT_FALSE(ac->CheckTable(User("carol"), "Get", "t1", kPermRead).ok());
  EXPECT_TRUE(ac->CheckTable(User("carol"), "Mutate", "t1", kPermWrite).ok());
  EXPECT_FALSE(ac->CheckTable(User("dan"), "Get", "t1", kPermRead).ok());
  auto all = ac->List(Root(*ac), PermScope{}, "");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 3u);  // alice A t1, bob RW t1:cf, carol W t1
  auto bobs = ac->List(User("bob"), PermScope{}, "bob");  // one's own, without A
  ASSERT_TRUE(bobs.ok()) << bobs.status();
  ASSERT_EQ(bobs->size(), 1u);
  EXPECT_EQ((*bobs)[0].scope.ToString(), "table t1, family cf");
  EXPECT_EQ(PermString((*bobs)[0].perms), "RW");
  EXPECT_EQ(ac->List(User("bob"), PermScope{}, "carol").status().code(), absl::StatusCode::kPermissionDenied);
}

TEST(AccessControl, ARowOfBasaltAclThatIsNotAGrantIsDataLoss) {
  testing::TempDir dir;
  auto tm = OpenManager(dir.path());
  ASSERT_TRUE(tm->acl_region()->Put("t1", kAclFamily, "bob", "RQ").ok());
  AccessController::Options o;
  o.enabled = true;
  auto ac = AccessController::Open(o, tm->acl_region());
  ASSERT_FALSE(ac.ok());
  EXPECT_EQ(ac.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(ac.status().message().find("row 't1' column 'bob' value 'RQ'"), std::string::npos) << ac.status();
}

TEST(AccessControl, DisabledEveryCheckPassesAndNoGrantIsWritten) {
  testing::TempDir dir;
  auto tm = OpenManager(dir.path());
  AccessController::Options o;  // auth=false
  auto ac = AccessController::Open(o, tm->acl_region());
  ASSERT_TRUE(ac.ok());
  EXPECT_TRUE((*ac)->CheckGlobal(Identity{}, "SetVerbs", kPermAdmin).ok());
  rpc::ReadOptions r;
  EXPECT_TRUE((*ac)->AuthorizeRead(Identity{}, "Get", "t1", &r).ok());
  // But no grant is written (docs/DESIGN.md §12): one planted now would be honoured once auth is on.
  absl::Status planted = (*ac)->Grant(Identity{}, PermGrant{"mallory", PermScope{}, kPermAdmin});
  EXPECT_EQ(planted.code(), absl::StatusCode::kFailedPrecondition) << planted;
  EXPECT_NE(planted.message().find("refused while auth=false"), std::string::npos) << planted;
  EXPECT_EQ((*ac)->Revoke(Identity{}, "mallory", PermScope{}).code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace basalt::server
