# The HBase shell's commands against Basalt (hbase_client_test.cc runs this file with
# `-n`, so the shell stops at its first error and exits non-zero). `sh_keep` is left for
# Basalt's own client to read; `sh_drop` goes through disable, enable, truncate and drop;
# `sh_snap` through a snapshot, a clone and a restore; namespace `sh_app` is made, changed and
# left with a table; peer `sh_dr` goes through its commands.
create 'sh_keep', {NAME => 'f', VERSIONS => 3}, SPLITS => ['g', 'p']
list
describe 'sh_keep'
put 'sh_keep', 'apple', 'f:q', 'red'
put 'sh_keep', 'kiwi', 'f:q', 'green'
put 'sh_keep', 'kiwi', 'f:q', 'brown'
put 'sh_keep', 'plum', 'f:q', 'purple'
put 'sh_keep', 'zz', 'f:gone', 'x'
put 'sh_keep', 'zz', 'f:too', 'y'
alter 'sh_keep', NAME => 'f', VERSIONS => 5, IN_MEMORY => true, METADATA => {'app.key' => 'kept'}
alter 'sh_keep', 'extra'
describe 'sh_keep'
alter 'sh_keep', 'delete' => 'extra'
get 'sh_keep', 'kiwi', {COLUMN => 'f:q', VERSIONS => 2}
scan 'sh_keep', {STARTROW => 'b', STOPROW => 'q'}
count 'sh_keep'
incr 'sh_keep', 'ctr', 'f:n', 5
incr 'sh_keep', 'ctr', 'f:n', 2
get_counter 'sh_keep', 'ctr', 'f:n'
delete 'sh_keep', 'plum', 'f:q'
deleteall 'sh_keep', 'zz'
scan 'sh_keep'
status 'detailed'
list_regions 'sh_keep'
get_splits 'sh_keep'
locate_region 'sh_keep', 'kiwi'
count 'sh_keep', CACHE => 1000
flush 'sh_keep'
major_compact 'sh_keep'
balancer
create 'sh_drop', 'f'
put 'sh_drop', 'r1', 'f:q', 'v'
put 'sh_drop', 'r2', 'f:q', 'v'
count 'sh_drop'
disable 'sh_drop'
is_disabled 'sh_drop'
enable 'sh_drop'
truncate 'sh_drop'
count 'sh_drop'
disable 'sh_drop'
drop 'sh_drop'
exists 'sh_drop'
create 'sh_snap', 'f'
put 'sh_snap', 'r1', 'f:q', 'before'
snapshot 'sh_snap', 'sh_snap_1'
put 'sh_snap', 'r1', 'f:q', 'after'
list_snapshots
clone_snapshot 'sh_snap_1', 'sh_snap_clone'
get 'sh_snap_clone', 'r1'
disable 'sh_snap'
restore_snapshot 'sh_snap_1'
enable 'sh_snap'
get 'sh_snap', 'r1'
delete_snapshot 'sh_snap_1'
list_snapshots
disable 'sh_snap'
drop 'sh_snap'
disable 'sh_snap_clone'
drop 'sh_snap_clone'
list
create_namespace 'sh_app', {'hbase.namespace.quota.maxtables' => '4'}
alter_namespace 'sh_app', {METHOD => 'set', 'team' => 'search'}
describe_namespace 'sh_app'
alter_namespace 'sh_app', {METHOD => 'unset', NAME => 'team'}
list_namespace
create 'sh_app:events', 'f'
put 'sh_app:events', 'r1', 'f:q', 'in-ns'
get 'sh_app:events', 'r1'
list_namespace_tables 'sh_app'
list 'sh_app:.*'
list 'sh_k.*'
create_namespace 'sh_gone'
drop_namespace 'sh_gone'
list_namespace
add_peer 'sh_dr', CLUSTER_KEY => 'zk-b1,zk-b2:2181:/hbase-b', STATE => 'DISABLED', TABLE_CFS => {'sh_keep' => ['f']}
list_peers
enable_peer 'sh_dr'
set_peer_tableCFs 'sh_dr', {'sh_keep' => []}
show_peer_tableCFs 'sh_dr'
disable_peer 'sh_dr'
get_peer_config 'sh_dr'
remove_peer 'sh_dr'
list_peers
status 'replication'
exit
