#!/usr/bin/env python3
"""A second, non-Java client of Basalt's HBase port: the pure-Python `hbase-driver` 1.1.1 from
PyPI (Apache-2.0), an independent implementation of HBase 2.x's native RPC (no Thrift), used
unmodified. It makes a table, puts 3 rows, gets one, scans, deletes a row, scans again and drops
the table; each answer is checked.

Usage: python_client.py QUORUM [--table NAME]
  QUORUM   the ZooKeeper where basalt-server published its HBase port (hbase_zookeeper_quorum,
           with hbase_znode_parent=/hbase: the library reads /hbase/master and
           /hbase/meta-region-server, a parent it mostly does not let one change)
  --table  the table's name (default: a new name each run); it is dropped at the end
The library frames a request of 128 bytes or more wrongly (its length prefix), so names and
values here stay short; and it looks a row up in the region before the one it starts, so the
table has one region.
Needs hbase-driver on the path (tests/hbase/CMakeLists.txt fetches the wheel) and Debian's
python3-protobuf and python3-kazoo.
Exit status 0 when every check passed; 1 with the failed check on stderr.
"""
import argparse
import logging
import os
import sys


def fail(msg):
    print(f"python_client: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


try:
    import hbasedriver.client.client as hb_client
    from hbasedriver.common.table_name import TableName
    from hbasedriver.operations.column_family_builder import ColumnFamilyDescriptorBuilder
    from hbasedriver.operations.delete import Delete
    from hbasedriver.operations.get import Get
    from hbasedriver.operations.put import Put
    from hbasedriver.operations.scan import Scan
except ImportError as e:
    fail(f"cannot import hbase-driver ({e}): it must be on PYTHONPATH (hbase-driver==1.1.1)")


def rows_of(table):
    with table.scan(Scan()) as scanner:
        return {r.rowkey: r.get(b"cf", b"q") for r in scanner}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("zk", metavar="QUORUM")
    ap.add_argument("--table", default=f"py{os.getpid()}")
    args = ap.parse_args()
    logging.disable(logging.WARNING)  # the library logs at DEBUG

    step = "connect"
    try:
        conf = {"hbase.zookeeper.quorum": args.zk}
        client = hb_client.Client(conf)
        admin = client.get_admin()
        tn = TableName.value_of(b"default", args.table.encode())

        step = "create table"
        admin.create_table(tn, [ColumnFamilyDescriptorBuilder(b"cf").build()])
        if not admin.table_exists(tn):
            fail(f"{step}: table {args.table} not listed by GetTableDescriptors")
        table = client.get_table(b"default", tn.tb)

        want = {b"row1": b"one", b"row2": b"two", b"row3": b"three"}
        step = "put 3 rows"
        for row, value in want.items():
            if not table.put(Put(row).add_column(b"cf", b"q", value)):
                fail(f"{step}: put of {row!r} not processed")

        step = "get row2"
        got = table.get(Get(b"row2"))
        if got is None or got.rowkey != b"row2" or got.get(b"cf", b"q") != b"two":
            fail(f"{step}: got {got}")
        if table.get(Get(b"row9")) is not None:
            fail(f"{step}: a row never put was found")

        step = "scan all"
        got = rows_of(table)
        if got != want:
            fail(f"{step}: got {got}, want {want}")

        step = "delete row2"
        table.delete(Delete(b"row2"))
        if table.get(Get(b"row2")) is not None:
            fail(f"{step}: row2 still there")

        step = "scan again"
        del want[b"row2"]
        got = rows_of(table)
        if got != want:
            fail(f"{step}: got {got}, want {want}")

        step = "drop table"
        admin.disable_table(tn)
        admin.delete_table(tn)
        if admin.table_exists(tn):
            fail(f"{step}: table still listed")
        client.close()
    except SystemExit:
        raise
    except Exception as e:
        fail(f"{step}: {type(e).__name__}: {e}")
    print(f"python_client: OK: create, put 3, get, scan, delete, scan, drop of {args.table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
