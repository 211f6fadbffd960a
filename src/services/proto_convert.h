// Basalt's wire types (proto/basalt.proto) to the engine's and back: tables, families,
// regions and their figures. Each FromProto validates what it reads.
#pragma once

#include "absl/status/statusor.h"
#include "proto/basalt.pb.h"
#include "src/schema/catalog_file.h"
#include "src/schema/region_info.h"
#include "storage/region.h"

namespace basalt::server {

// Converts a proto family descriptor (zeros meaning defaults) to engine settings, validating
// it. InvalidArgument naming the family and value.
absl::StatusOr<FamilyOptions> FamilyFromProto(const rpc::FamilyDescriptor& fd);
rpc::FamilyDescriptor FamilyToProto(const FamilyOptions& f);
absl::StatusOr<TableSpec> TableFromProto(const rpc::TableDescriptor& td);
rpc::TableDescriptor TableToProto(const TableSpec& spec);
// A region on the wire (OpenRegion, HostedRegions) and back: InvalidArgument for a bad table
// name, no id, or an end before the start.
rpc::RegionSpec RegionSpecToProto(const RegionInfo& info);
absl::StatusOr<RegionInfo> RegionFromProto(const rpc::RegionSpec& r);
// A region's figures on the wire (RegionOperation) and back.
rpc::RegionLoad RegionLoadToProto(const RegionStats& st);
RegionStats RegionStatsFromProto(const rpc::RegionLoad& load);

}  // namespace basalt::server
