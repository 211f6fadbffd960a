// A permission's scope (rpc::PermissionScope: namespace, table, family, qualifier; empty fields are
// wider) from and to any struct with those four fields (`ns`, `table`, `family`, `qualifier`): the
// server's PermScope (src/security/access_control.h) and the client's Permission
// (client/include/basalt/client.h). One conversion for both ends of Grant, Revoke and
// UserPermissions.
#pragma once

#include "proto/basalt.pb.h"

namespace basalt::rpc {

template <typename Scope>
PermissionScope ScopeProtoOf(const Scope& s) {
  PermissionScope p;
  p.set_namespace_(s.ns);
  p.set_table(s.table);
  p.set_family(s.family);
  p.set_qualifier(s.qualifier);
  return p;
}

template <typename Scope>
void SetScopeFromProto(const PermissionScope& p, Scope* s) {
  s->ns = p.namespace_();
  s->table = p.table();
  s->family = p.family();
  s->qualifier = p.qualifier();
}

}  // namespace basalt::rpc
