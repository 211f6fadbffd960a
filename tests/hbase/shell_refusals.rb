# The HBase 2.4 shell's commands that Basalt's HBase port refuses by name, run without -n so that
# each error is printed and the next command still runs (hbase_client_test.cc checks that each
# answer is a DoNotRetryIOException naming the method it sent; a command that reached no method
# would say something else, or nothing).
create 'sh_ref', 'f'
balance_switch true
normalize
normalizer_switch true
normalizer_enabled
unassign 'sh_ref,,1.0123456789abcdef0123456789abcdef.'
list_procedures
list_locks
catalogjanitor_enabled
cleaner_chore_enabled
splitormerge_enabled 'SPLIT'
hbck_chore_run
exists 'sh_ref'
exit
