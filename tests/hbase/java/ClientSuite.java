// The unmodified HBase 2.6 client against Basalt's HBase port: the Admin and Table calls an HBase
// application makes, each checked against what it must read back. Run by
// tests/hbase/hbase_client_test.cc, which starts the server, then reads the table this leaves
// behind with Basalt's own C++ client and compares it with the dump written here.
//
// Usage: java ClientSuite (HOST:PORT | zk:QUORUM@PARENT) DUMP_FILE [LIVE_SERVERS] (Registry.java)
//   HOST:PORT          the HBase port (hbase.client.bootstrap.servers: the RPC registry)
//   zk:QUORUM@PARENT   HBase's default registry: hbase.zookeeper.quorum, zookeeper.znode.parent
//   DUMP_FILE  where the kept table's cells are written, one per line:
//              <row hex> <family>:<qualifier hex> <timestamp> <value hex>
//   LIVE_SERVERS  how many region servers the cluster metrics must list (default 1)
// Exit status 0 when every check passed; 1 with the failed check on stderr.

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.TableNotEnabledException;
import org.apache.hadoop.hbase.TableNotFoundException;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Append;
import org.apache.hadoop.hbase.client.BufferedMutator;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.RetriesExhaustedWithDetailsException;
import org.apache.hadoop.hbase.client.RowMutations;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;

public final class ClientSuite {
  static final byte[] F = Bytes.toBytes("f");
  static final byte[] G = Bytes.toBytes("g");

  static int checks = 0;

  static void check(boolean ok, String what) {
    checks++;
    if (!ok) throw new AssertionError(what);
  }

  static void checkEquals(Object want, Object got, String what) {
    check(java.util.Objects.equals(want, got), what + ": want " + want + ", got " + got);
  }

  // The settings of hb_suite Basalt has none for, as the client gave them at create.
  static void checkKept(TableDescriptor d, String when) {
    ColumnFamilyDescriptor f = d.getColumnFamily(F);
    checkEquals(true, f.isInMemory(), "IN_MEMORY of f " + when);
    checkEquals(1, f.getScope(), "REPLICATION_SCOPE of f " + when);
    checkEquals("v1", Bytes.toString(f.getValue(Bytes.toBytes("app.key"))), "app.key of f " + when);
    checkEquals("20", f.getConfigurationValue("hbase.hstore.blockingStoreFiles"), "a configuration entry of f " + when);
    checkEquals("suite", Bytes.toString(d.getValue(Bytes.toBytes("app.table"))), "app.table of hb_suite " + when);
  }

  static String str(byte[] b) { return b == null ? null : Bytes.toString(b); }

  static String hex(byte[] b) {
    StringBuilder s = new StringBuilder();
    for (byte x : b) s.append(String.format("%02x", x & 0xff));
    return s.length() == 0 ? "-" : s.toString();
  }

  static byte[] row(int i) { return Bytes.toBytes(String.format("row%03d", i)); }

  static List<String> rowsOf(ResultScanner scanner) {
    List<String> out = new ArrayList<>();
    for (Result r : scanner) out.add(Bytes.toString(r.getRow()));
    scanner.close();
    return out;
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 2 && args.length != 3) {
      System.err.println("usage: ClientSuite (HOST:PORT | zk:QUORUM@PARENT) DUMP_FILE [LIVE_SERVERS]");
      System.exit(2);
    }
    Configuration conf = HBaseConfiguration.create();
    Registry.configure(conf, args[0]);
    conf.setInt("hbase.client.retries.number", 5);
    conf.setInt("hbase.client.pause", 50);
    conf.setInt("hbase.rpc.timeout", 10000);
    conf.setInt("hbase.client.operation.timeout", 30000);
    try (Connection conn = ConnectionFactory.createConnection(conf); Admin admin = conn.getAdmin()) {
      run(conn, admin, args[1], args.length == 3 ? Integer.parseInt(args[2]) : 1);
    } catch (Throwable e) {
      System.err.println("FAILED after " + checks + " checks: " + e);
      e.printStackTrace();
      System.exit(1);
    }
    System.out.println("ClientSuite: " + checks + " checks passed");
    System.exit(0);
  }

  // The text of an exception and its causes (a class the client lacks, such as the master's
  // ConstraintException, arrives as a DoNotRetryIOException whose cause says what it was).
  static String chain(Throwable e) {
    StringBuilder b = new StringBuilder();
    for (Throwable c = e; c != null; c = c.getCause()) b.append(c).append(" / ");
    return b.toString();
  }

  // --- Namespaces: made with settings, changed, listed, a table in one written and read, and
  // dropped only when empty. Left behind: hb_app:left, one row, for Basalt's own client.
  static void namespaces(Connection conn, Admin admin) throws Exception {
    org.apache.hadoop.hbase.NamespaceDescriptor app = org.apache.hadoop.hbase.NamespaceDescriptor.create("hb_app")
        .addConfiguration("hbase.namespace.quota.maxtables", "5").build();
    admin.createNamespace(app);
    try {
      admin.createNamespace(app);
      check(false, "creating hb_app twice must fail");
    } catch (org.apache.hadoop.hbase.NamespaceExistException expected) {
      checks++;
    }
    checkEquals("5", admin.getNamespaceDescriptor("hb_app").getConfigurationValue("hbase.namespace.quota.maxtables"),
        "hb_app's maxtables");
    admin.modifyNamespace(org.apache.hadoop.hbase.NamespaceDescriptor.create(admin.getNamespaceDescriptor("hb_app"))
        .addConfiguration("hbase.namespace.quota.maxtables", "6").build());
    checkEquals("6", admin.getNamespaceDescriptor("hb_app").getConfigurationValue("hbase.namespace.quota.maxtables"),
        "hb_app's maxtables after modifyNamespace");
    check(Arrays.asList(admin.listNamespaces()).contains("hb_app"), "listNamespaces names hb_app");
    check(!Arrays.asList(admin.listNamespaces()).contains("basalt"), "Basalt's system namespace is not listed");

    TableName events = TableName.valueOf("hb_app:events");
    admin.createTable(TableDescriptorBuilder.newBuilder(events).setColumnFamily(ColumnFamilyDescriptorBuilder.of(F)).build(),
        new byte[][] {Bytes.toBytes("m")});
    check(admin.tableExists(events), "tableExists hb_app:events");
    checkEquals(2, admin.getRegions(events).size(), "regions of hb_app:events");
    checkEquals(Arrays.asList(events), Arrays.asList(admin.listTableNamesByNamespace("hb_app")),
        "listTableNamesByNamespace hb_app");
    checkEquals(1, admin.listTableDescriptorsByNamespace(Bytes.toBytes("hb_app")).size(),
        "listTableDescriptorsByNamespace hb_app");
    check(Arrays.asList(admin.listTableNames()).contains(events), "listTableNames names hb_app:events");
    try (Table table = conn.getTable(events)) {
      List<Put> puts = new ArrayList<>();
      for (String r : new String[] {"a", "k", "p", "z"}) {
        puts.add(new Put(Bytes.toBytes(r)).addColumn(F, Bytes.toBytes("q"), Bytes.toBytes("ns-" + r)));
      }
      table.put(puts);
      checkEquals("ns-p", str(table.get(new Get(Bytes.toBytes("p"))).getValue(F, Bytes.toBytes("q"))), "hb_app:events p");
      int n = 0;
      try (ResultScanner scanner = table.getScanner(new Scan())) {
        for (Result r : scanner) n++;
      }
      checkEquals(4, n, "rows scanned in hb_app:events (two regions)");
    }
    try {
      admin.createTable(TableDescriptorBuilder.newBuilder(TableName.valueOf("hb_nope:t"))
          .setColumnFamily(ColumnFamilyDescriptorBuilder.of(F)).build());
      check(false, "a table in a missing namespace is refused");
    } catch (org.apache.hadoop.hbase.NamespaceNotFoundException expected) {
      checks++;
    }
    try {
      admin.deleteNamespace("hb_app");
      check(false, "a namespace holding a table cannot be dropped");
    } catch (java.io.IOException expected) {
      check(chain(expected).contains("ConstraintException") && chain(expected).contains("hb_app:events"),
          "the refusal is HBase's ConstraintException naming the table: " + chain(expected));
    }
    try {
      admin.deleteNamespace("default");
      check(false, "default cannot be dropped");
    } catch (java.io.IOException expected) {
      check(chain(expected).contains("ConstraintException"), "dropping default: " + chain(expected));
    }
    admin.disableTable(events);
    admin.deleteTable(events);
    admin.deleteNamespace("hb_app");
    check(!Arrays.asList(admin.listNamespaces()).contains("hb_app"), "hb_app dropped");
    try {
      admin.getNamespaceDescriptor("hb_app");
      check(false, "a dropped namespace is not found");
    } catch (org.apache.hadoop.hbase.NamespaceNotFoundException expected) {
      checks++;
    }
    // Its quotas: at most 1 table, at most 2 regions.
    admin.createNamespace(org.apache.hadoop.hbase.NamespaceDescriptor.create("hb_small")
        .addConfiguration("hbase.namespace.quota.maxtables", "1")
        .addConfiguration("hbase.namespace.quota.maxregions", "2").build());
    try {
      admin.createTable(TableDescriptorBuilder.newBuilder(TableName.valueOf("hb_small:wide"))
          .setColumnFamily(ColumnFamilyDescriptorBuilder.of(F)).build(),
          new byte[][] {Bytes.toBytes("g"), Bytes.toBytes("p")});
      check(false, "3 regions in a namespace of at most 2 are refused");
    } catch (org.apache.hadoop.hbase.quotas.QuotaExceededException expected) {
      check(String.valueOf(expected.getMessage()).contains("maxregions"), "the refusal names the quota: " + expected);
    }
    TableName one = TableName.valueOf("hb_small:one");
    admin.createTable(TableDescriptorBuilder.newBuilder(one).setColumnFamily(ColumnFamilyDescriptorBuilder.of(F)).build());
    try {
      admin.createTable(TableDescriptorBuilder.newBuilder(TableName.valueOf("hb_small:two"))
          .setColumnFamily(ColumnFamilyDescriptorBuilder.of(F)).build());
      check(false, "a second table in a namespace of at most 1 is refused");
    } catch (org.apache.hadoop.hbase.quotas.QuotaExceededException expected) {
      check(String.valueOf(expected.getMessage()).contains("maxtables"), "the refusal names the quota: " + expected);
    }
    admin.disableTable(one);
    admin.deleteTable(one);
    admin.deleteNamespace("hb_small");

    admin.createNamespace(org.apache.hadoop.hbase.NamespaceDescriptor.create("hb_app").build());
    TableName left = TableName.valueOf("hb_app:left");
    admin.createTable(TableDescriptorBuilder.newBuilder(left).setColumnFamily(ColumnFamilyDescriptorBuilder.of(F)).build());
    try (Table table = conn.getTable(left)) {
      table.put(new Put(Bytes.toBytes("r")).addColumn(F, Bytes.toBytes("q"), Bytes.toBytes("from-hbase")));
    }
  }

  static void run(Connection conn, Admin admin, String dumpFile, int liveServers) throws Exception {
    TableName t = TableName.valueOf("hb_suite");
    TableName keep = TableName.valueOf("hb_keep");

    // --- Admin: create with splits and family attributes, list, describe, regions.
    check(!admin.tableExists(t), "a fresh server has no hb_suite");
    // f also carries settings Basalt has none for: kept and given back as given.
    ColumnFamilyDescriptor f = ColumnFamilyDescriptorBuilder.newBuilder(F).setMaxVersions(3)
        .setTimeToLive(86400).setBlocksize(32768).setInMemory(true).setScope(1)
        .setValue(Bytes.toBytes("app.key"), Bytes.toBytes("v1"))
        .setConfiguration("hbase.hstore.blockingStoreFiles", "20").build();
    ColumnFamilyDescriptor g = ColumnFamilyDescriptorBuilder.newBuilder(G).setMinVersions(1).setMaxVersions(2)
        .setCompressionType(org.apache.hadoop.hbase.io.compress.Compression.Algorithm.SNAPPY)
        .setDataBlockEncoding(org.apache.hadoop.hbase.io.encoding.DataBlockEncoding.FAST_DIFF)
        .setBloomFilterType(org.apache.hadoop.hbase.regionserver.BloomType.ROWCOL).build();
    admin.createTable(TableDescriptorBuilder.newBuilder(t).setColumnFamily(f).setColumnFamily(g)
        .setValue(Bytes.toBytes("app.table"), Bytes.toBytes("suite")).build(),
        new byte[][] {Bytes.toBytes("row030"), Bytes.toBytes("row060")});
    check(admin.tableExists(t), "tableExists after createTable");
    check(admin.isTableEnabled(t), "a new table is enabled");
    check(Arrays.asList(admin.listTableNames()).contains(t), "listTableNames names hb_suite");
    TableDescriptor d = admin.getDescriptor(t);
    checkEquals(2, d.getColumnFamilyCount(), "families of hb_suite");
    checkEquals(3, d.getColumnFamily(F).getMaxVersions(), "VERSIONS of f");
    checkEquals(86400, d.getColumnFamily(F).getTimeToLive(), "TTL of f");
    checkEquals(32768, d.getColumnFamily(F).getBlocksize(), "BLOCKSIZE of f");
    checkEquals(1, d.getColumnFamily(G).getMinVersions(), "MIN_VERSIONS of g");
    checkEquals("SNAPPY", d.getColumnFamily(G).getCompressionType().name(), "COMPRESSION of g");
    checkEquals("FAST_DIFF", d.getColumnFamily(G).getDataBlockEncoding().name(), "DATA_BLOCK_ENCODING of g");
    checkEquals("ROWCOL", d.getColumnFamily(G).getBloomFilterType().name(), "BLOOMFILTER of g");
    checkKept(d, "after createTable");
    // What Basalt would not honour is refused, naming it (deleted cells kept for reads back in time).
    try {
      admin.createTable(TableDescriptorBuilder.newBuilder(TableName.valueOf("hb_refused"))
          .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(F)
              .setKeepDeletedCells(org.apache.hadoop.hbase.KeepDeletedCells.TRUE).build()).build());
      check(false, "KEEP_DELETED_CELLS => TRUE is refused");
    } catch (org.apache.hadoop.hbase.DoNotRetryIOException expected) {
      check(String.valueOf(expected.getMessage()).contains("KEEP_DELETED_CELLS => 'TRUE' is not supported"),
          "the refusal names KEEP_DELETED_CELLS: " + expected.getMessage());
    }
    check(!admin.tableExists(TableName.valueOf("hb_refused")), "a refused table is not created");
    // An application that compares the descriptor it wants with the one it reads (and alters
    // when they differ) finds them equal.
    TableDescriptor wanted = TableDescriptorBuilder.newBuilder(TableName.valueOf("hb_same"))
        .setValue(Bytes.toBytes("app.table"), Bytes.toBytes("same"))
        .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(F).setMaxVersions(4).setInMemory(true)
            .setConfiguration("hbase.hstore.blockingStoreFiles", "20").build())
        .setColumnFamily(ColumnFamilyDescriptorBuilder.of(G)).build();
    admin.createTable(wanted);
    TableDescriptor same = admin.getDescriptor(wanted.getTableName());
    check(TableDescriptor.COMPARATOR.compare(wanted, same) == 0,
        "the descriptor read back equals the one created:\n  wanted " + wanted + "\n  got    " + same);
    admin.disableTable(wanted.getTableName());
    admin.deleteTable(wanted.getTableName());
    // The cluster as the Admin sees it: its live servers (a standalone server: itself), the
    // master, the namespaces.
    org.apache.hadoop.hbase.ClusterMetrics cluster = admin.getClusterMetrics();
    checkEquals(liveServers, cluster.getLiveServerMetrics().size(), "live servers in the cluster metrics");
    check(cluster.getMasterName() != null, "the cluster metrics name a master");
    List<String> namespaces = new ArrayList<>();
    for (org.apache.hadoop.hbase.NamespaceDescriptor n : admin.listNamespaceDescriptors()) namespaces.add(n.getName());
    check(namespaces.contains("default") && namespaces.contains("hbase"), "namespaces: " + namespaces);
    List<RegionInfo> regions = admin.getRegions(t);
    checkEquals(3, regions.size(), "regions after a create with 2 split keys");
    try (RegionLocator locator = conn.getRegionLocator(t)) {
      HRegionLocation loc = locator.getRegionLocation(Bytes.toBytes("row045"));
      checkEquals("row030", str(loc.getRegion().getStartKey()), "the region of row045 starts at");
      checkEquals("row060", str(loc.getRegion().getEndKey()), "the region of row045 ends at");
    }
    try {
      admin.createTable(TableDescriptorBuilder.newBuilder(t).setColumnFamily(f).build());
      check(false, "creating hb_suite twice must fail");
    } catch (org.apache.hadoop.hbase.TableExistsException expected) {
      checks++;
    }

    try (Table table = conn.getTable(t)) {
      // --- Puts: one by one, a list (Multi), and a BufferedMutator (Multi with cell blocks).
      table.put(new Put(row(0)).addColumn(F, Bytes.toBytes("a"), Bytes.toBytes("v0")));
      List<Put> puts = new ArrayList<>();
      for (int i = 1; i < 50; i++) puts.add(new Put(row(i)).addColumn(F, Bytes.toBytes("a"), Bytes.toBytes("v" + i)));
      table.put(puts);
      try (BufferedMutator m = conn.getBufferedMutator(t)) {
        for (int i = 50; i < 100; i++) {
          m.mutate(new Put(row(i)).addColumn(F, Bytes.toBytes("a"), Bytes.toBytes("v" + i))
              .addColumn(G, Bytes.toBytes("b"), Bytes.toBytes("w" + i)));
        }
      }
      // --- Get: a value, a missing row, versions, exists, a list of Gets.
      checkEquals("v7", str(table.get(new Get(row(7))).getValue(F, Bytes.toBytes("a"))), "get row007 f:a");
      check(table.get(new Get(Bytes.toBytes("nope"))).isEmpty(), "a missing row reads empty");
      check(table.exists(new Get(row(70))), "exists row070");
      check(!table.exists(new Get(Bytes.toBytes("nope"))), "not exists nope");
      // (f's TTL is a day: older cells would be expired, as in HBase.)
      final long t1 = System.currentTimeMillis() - 20000;
      final long t2 = t1 + 10000;
      table.put(new Put(row(5)).addColumn(F, Bytes.toBytes("a"), t1, Bytes.toBytes("old")));
      table.put(new Put(row(5)).addColumn(F, Bytes.toBytes("a"), t2, Bytes.toBytes("older-than-now")));
      Result versions = table.get(new Get(row(5)).readVersions(3).addColumn(F, Bytes.toBytes("a")));
      checkEquals(3, versions.getColumnCells(F, Bytes.toBytes("a")).size(), "versions of row005 f:a");
      Result ranged = table.get(new Get(row(5)).readAllVersions().setTimeRange(t1, t2 + 1));
      checkEquals(2, ranged.size(), "cells of row005 in [t1, t2 + 1)");
      Result[] many = table.get(Arrays.asList(new Get(row(1)), new Get(row(55)), new Get(row(99))));
      checkEquals("v1", str(many[0].getValue(F, Bytes.toBytes("a"))), "batch get row001");
      checkEquals("w55", str(many[1].getValue(G, Bytes.toBytes("b"))), "batch get row055 g:b");
      checkEquals("v99", str(many[2].getValue(F, Bytes.toBytes("a"))), "batch get row099");

      // --- Scans: whole table across the three regions, bounds, reversed, limit, a family.
      List<String> all = rowsOf(table.getScanner(new Scan()));
      checkEquals(100, all.size(), "rows scanned");
      checkEquals("row000", all.get(0), "first row");
      checkEquals("row099", all.get(99), "last row");
      List<String> some = rowsOf(table.getScanner(new Scan().withStartRow(row(25)).withStopRow(row(65))));
      checkEquals(40, some.size(), "rows in [row025, row065)");
      List<String> inclusive = rowsOf(table.getScanner(new Scan().withStartRow(row(25), false).withStopRow(row(65), true)));
      checkEquals(40, inclusive.size(), "rows in (row025, row065]");
      checkEquals("row026", inclusive.get(0), "first row of (row025, row065]");
      List<String> reversed = rowsOf(table.getScanner(new Scan().setReversed(true).withStartRow(row(64)).withStopRow(row(24))));
      checkEquals(40, reversed.size(), "rows reversed from row064 down to row024 (exclusive)");
      checkEquals("row064", reversed.get(0), "first row reversed");
      List<String> limited = rowsOf(table.getScanner(new Scan().setLimit(7)));
      checkEquals(7, limited.size(), "rows with limit 7");
      List<String> small = rowsOf(table.getScanner(new Scan().setCaching(3).withStartRow(row(10)).withStopRow(row(40))));
      checkEquals(30, small.size(), "rows in [row010, row040) three at a time");
      List<String> gOnly = rowsOf(table.getScanner(new Scan().addFamily(G)));
      checkEquals(50, gOnly.size(), "rows with family g");

      // --- Flush, major compaction and a split, as the shell's flush, major_compact and split.
      admin.flush(t);
      admin.majorCompact(t);
      checkEquals("v7", str(table.get(new Get(row(7))).getValue(F, Bytes.toBytes("a"))), "row007 after flush and compaction");
      admin.split(t, row(80));
      for (int i = 0; i < 300 && admin.getRegions(t).size() != 4; i++) Thread.sleep(100);
      checkEquals(4, admin.getRegions(t).size(), "regions after splitting at row080");
      try (RegionLocator locator = conn.getRegionLocator(t)) {
        checkEquals("row080", str(locator.getRegionLocation(row(85), true).getRegion().getStartKey()),
            "the region of row085 after the split starts at");
      }
      checkEquals(100, rowsOf(table.getScanner(new Scan())).size(), "rows scanned after the split");
      checkEquals("v90", str(table.get(new Get(row(90))).getValue(F, Bytes.toBytes("a"))), "row090 after the split");
      if (liveServers > 1) {
        // --- A move, as the shell's move: the region of row085 to another live server, named
        // by its encoded name; the client finds it there.
        try (RegionLocator locator = conn.getRegionLocator(t)) {
          HRegionLocation at = locator.getRegionLocation(row(85), true);
          org.apache.hadoop.hbase.ServerName to = null;
          for (org.apache.hadoop.hbase.ServerName sn : admin.getRegionServers()) {
            if (!sn.getAddress().equals(at.getServerName().getAddress())) to = sn;
          }
          check(to != null, "another live region server to move to");
          admin.move(at.getRegion().getEncodedNameAsBytes(), to);
          checkEquals(to.getAddress().toString(), locator.getRegionLocation(row(85), true).getServerName().getAddress().toString(),
              "the server of row085's region after the move");
        }
        checkEquals("v85", str(table.get(new Get(row(85))).getValue(F, Bytes.toBytes("a"))), "row085 after the move");
      }

      // --- alter: a family's settings (modifyColumnFamily), a family added and deleted, the
      // table's MAX_FILESIZE (modifyTable); the rows stay, the regions reopen with them.
      admin.modifyColumnFamily(t,
          ColumnFamilyDescriptorBuilder.newBuilder(admin.getDescriptor(t).getColumnFamily(F)).setMaxVersions(5).build());
      checkEquals(5, admin.getDescriptor(t).getColumnFamily(F).getMaxVersions(), "VERSIONS of f after modifyColumnFamily");
      checkEquals(86400, admin.getDescriptor(t).getColumnFamily(F).getTimeToLive(), "TTL of f kept by modifyColumnFamily");
      checkKept(admin.getDescriptor(t), "after modifyColumnFamily");
      byte[] h = Bytes.toBytes("h");
      admin.addColumnFamily(t, ColumnFamilyDescriptorBuilder.of(h));
      checkEquals(3, admin.getDescriptor(t).getColumnFamilyCount(), "families after addColumnFamily");
      table.put(new Put(row(1)).addColumn(h, Bytes.toBytes("q"), Bytes.toBytes("in h")));
      checkEquals("in h", str(table.get(new Get(row(1))).getValue(h, Bytes.toBytes("q"))), "a cell of the added family");
      admin.deleteColumnFamily(t, h);
      checkEquals(2, admin.getDescriptor(t).getColumnFamilyCount(), "families after deleteColumnFamily");
      check(table.get(new Get(row(1))).getValue(h, Bytes.toBytes("q")) == null, "the deleted family's cell is gone");
      try {
        admin.deleteColumnFamily(t, h);
        check(false, "deleting a family that is not there is refused");
      } catch (org.apache.hadoop.hbase.InvalidFamilyOperationException expected) {
        checks++;
      }
      admin.modifyTable(TableDescriptorBuilder.newBuilder(admin.getDescriptor(t)).setMaxFileSize(1L << 30).build());
      checkEquals(1L << 30, admin.getDescriptor(t).getMaxFileSize(), "MAX_FILESIZE after modifyTable");
      checkEquals(5, admin.getDescriptor(t).getColumnFamily(F).getMaxVersions(), "VERSIONS of f kept by modifyTable");
      checkKept(admin.getDescriptor(t), "after modifyTable");
      checkEquals("v7", str(table.get(new Get(row(7))).getValue(F, Bytes.toBytes("a"))), "row007 after the alters");

      // --- A wide row (200 cells of 20 KiB): whole by default (the client stitches the partial
      // results the server cuts it into), in batches with setBatch, in parts with
      // setAllowPartialResults.
      byte[] wide = Bytes.toBytes("wide");
      Put widePut = new Put(wide);
      for (int i = 0; i < 200; i++) widePut.addColumn(G, Bytes.toBytes(String.format("c%03d", i)), new byte[20480]);
      table.put(widePut);
      List<Result> whole = new ArrayList<>();
      try (ResultScanner s = table.getScanner(new Scan().withStartRow(wide).withStopRow(wide, true))) {
        for (Result r : s) whole.add(r);
      }
      checkEquals(1, whole.size(), "results of the wide row, whole");
      checkEquals(200, whole.get(0).size(), "cells of the wide row, whole");
      List<Integer> batches = new ArrayList<>();
      try (ResultScanner s = table.getScanner(new Scan().withStartRow(wide).withStopRow(wide, true).setBatch(64))) {
        for (Result r : s) batches.add(r.size());
      }
      checkEquals(Arrays.asList(64, 64, 64, 8), batches, "the wide row in batches of 64");
      int parts = 0;
      int partCells = 0;
      try (ResultScanner s = table.getScanner(new Scan().withStartRow(wide).withStopRow(wide, true)
          .setAllowPartialResults(true).setMaxResultSize(100 * 1024))) {
        for (Result r : s) {
          parts++;
          partCells += r.size();
        }
      }
      check(parts > 1, "the wide row in partial results: " + parts + " parts");
      checkEquals(200, partCells, "cells of the wide row in partial results");
      table.delete(new Delete(wide));

      // --- Deletes: a column's newest version, every version, a family, a row.
      table.delete(new Delete(row(5)).addColumn(F, Bytes.toBytes("a")));
      checkEquals("older-than-now", str(table.get(new Get(row(5))).getValue(F, Bytes.toBytes("a"))),
          "row005 f:a after deleting its newest version");
      table.delete(new Delete(row(6)).addColumns(F, Bytes.toBytes("a")));
      check(table.get(new Get(row(6))).isEmpty(), "row006 after deleting every version of f:a");
      table.delete(new Delete(row(60)).addFamily(G));
      Result r60 = table.get(new Get(row(60)));
      check(r60.getValue(G, Bytes.toBytes("b")) == null && r60.getValue(F, Bytes.toBytes("a")) != null,
          "row060 after deleting family g");
      table.delete(new Delete(row(61)));
      check(table.get(new Get(row(61))).isEmpty(), "row061 after deleting the row");
      table.delete(new ArrayList<>(Arrays.asList(new Delete(row(62)), new Delete(row(63)))));  // it removes what it applied
      check(!table.exists(new Get(row(62))) && !table.exists(new Get(row(63))), "row062, row063 deleted in a batch");

      // --- Increment, Append, checkAndMutate, mutateRow.
      checkEquals(5L, table.incrementColumnValue(Bytes.toBytes("ctr"), F, Bytes.toBytes("n"), 5), "increment to 5");
      Result inc = table.increment(new Increment(Bytes.toBytes("ctr")).addColumn(F, Bytes.toBytes("n"), 10));
      checkEquals(15L, Bytes.toLong(inc.getValue(F, Bytes.toBytes("n"))), "increment to 15");
      Result app = table.append(new Append(Bytes.toBytes("app")).addColumn(F, Bytes.toBytes("s"), Bytes.toBytes("ab")));
      checkEquals("ab", str(app.getValue(F, Bytes.toBytes("s"))), "append to nothing");
      app = table.append(new Append(Bytes.toBytes("app")).addColumn(F, Bytes.toBytes("s"), Bytes.toBytes("cd")));
      checkEquals("abcd", str(app.getValue(F, Bytes.toBytes("s"))), "append ab + cd");
      byte[] cam = Bytes.toBytes("cam");
      check(table.checkAndMutate(CheckAndMutate.newBuilder(cam).ifNotExists(F, Bytes.toBytes("q"))
          .build(new Put(cam).addColumn(F, Bytes.toBytes("q"), Bytes.toBytes("1")))).isSuccess(), "checkAndPut ifNotExists");
      check(!table.checkAndMutate(CheckAndMutate.newBuilder(cam).ifNotExists(F, Bytes.toBytes("q"))
          .build(new Put(cam).addColumn(F, Bytes.toBytes("q"), Bytes.toBytes("2")))).isSuccess(), "checkAndPut ifNotExists again");
      check(table.checkAndMutate(CheckAndMutate.newBuilder(cam).ifEquals(F, Bytes.toBytes("q"), Bytes.toBytes("1"))
          .build(new Put(cam).addColumn(F, Bytes.toBytes("q"), Bytes.toBytes("3")))).isSuccess(), "checkAndPut ifEquals 1");
      checkEquals("3", str(table.get(new Get(cam)).getValue(F, Bytes.toBytes("q"))), "cam f:q after checkAndPut");
      check(table.checkAndMutate(CheckAndMutate.newBuilder(cam).ifEquals(F, Bytes.toBytes("q"), Bytes.toBytes("3"))
          .build(new Delete(cam))).isSuccess(), "checkAndDelete ifEquals 3");
      check(table.get(new Get(cam)).isEmpty(), "cam after checkAndDelete");
      RowMutations rm = new RowMutations(Bytes.toBytes("rm"));
      rm.add(new Put(Bytes.toBytes("rm")).addColumn(F, Bytes.toBytes("x"), Bytes.toBytes("1")));
      rm.add(new Put(Bytes.toBytes("rm")).addColumn(G, Bytes.toBytes("y"), Bytes.toBytes("2")));
      table.mutateRow(rm);
      checkEquals(2, table.get(new Get(Bytes.toBytes("rm"))).size(), "cells of rm after mutateRow");
    }

    // --- Disable, a write refused, enable, truncate (splits kept), delete.
    admin.disableTable(t);
    check(admin.isTableDisabled(t), "isTableDisabled after disableTable");
    try (Table table = conn.getTable(t)) {
      table.put(new Put(row(1)).addColumn(F, Bytes.toBytes("a"), Bytes.toBytes("x")));
      check(false, "a put to a disabled table must fail");
    } catch (TableNotEnabledException expected) {
      checks++;
    } catch (RetriesExhaustedWithDetailsException expected) {
      check(expected.getCause(0) instanceof TableNotEnabledException
          || String.valueOf(expected.getMessage()).contains("disabled"), "a put to a disabled table: " + expected);
    }
    admin.enableTable(t);
    check(admin.isTableEnabled(t), "isTableEnabled after enableTable");
    admin.disableTable(t);
    admin.truncateTable(t, true);
    check(admin.isTableEnabled(t), "a truncated table is enabled");
    checkEquals(4, admin.getRegions(t).size(), "regions after truncate with preserveSplits");
    try (Table table = conn.getTable(t)) {
      checkEquals(0, rowsOf(table.getScanner(new Scan())).size(), "rows after truncate");
    }
    admin.disableTable(t);
    admin.deleteTable(t);
    check(!admin.tableExists(t), "tableExists after deleteTable");
    try {
      admin.getDescriptor(t);
      check(false, "describing a deleted table must fail");
    } catch (TableNotFoundException expected) {
      checks++;
    }

    namespaces(conn, admin);

    // --- The table left for Basalt's own client to read (hbase_client_test.cc).
    if (admin.tableExists(keep)) {
      admin.disableTable(keep);
      admin.deleteTable(keep);
    }
    admin.createTable(TableDescriptorBuilder.newBuilder(keep).setValue(Bytes.toBytes("app.table"), Bytes.toBytes("keep"))
        .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(F).setMaxVersions(2).setInMemory(true)
            .setConfiguration("hbase.hstore.blockingStoreFiles", "30").build()).build(),
        new byte[][] {Bytes.toBytes("m")});
    try (Table table = conn.getTable(keep)) {
      for (int i = 0; i < 40; i++) {
        byte[] r = Bytes.toBytes(String.format("%c%02d", (char) ('a' + i % 26), i));
        table.put(new Put(r).addColumn(F, Bytes.toBytes("q" + (i % 3)), 1000L + i, Bytes.toBytes("value-" + i))
            .addColumn(F, new byte[] {0, (byte) 0xff}, 5L, new byte[] {(byte) i, 0, (byte) 0x80}));
      }
      table.put(new Put(Bytes.toBytes("a00")).addColumn(F, Bytes.toBytes("q0"), 2000L, Bytes.toBytes("newer")));
      try (PrintWriter out = new PrintWriter(dumpFile, StandardCharsets.UTF_8);
           ResultScanner scanner = table.getScanner(new Scan().readVersions(2))) {
        for (Result r : scanner) {
          for (Cell c : r.rawCells()) {
            out.println(hex(CellUtil.cloneRow(c)) + " " + Bytes.toString(CellUtil.cloneFamily(c)) + ":"
                + hex(CellUtil.cloneQualifier(c)) + " " + c.getTimestamp() + " " + hex(CellUtil.cloneValue(c)));
          }
        }
      }
    }
  }
}
