// HBase replicating into Basalt, driven with the unmodified HBase client: run by
// hbase_replication_test.cc against a real HBase 2.6.0 (the source) and a Basalt server (the
// sink), each reached by Registry.java's forms.
//
// Usage:
//   java Replication create SOURCE TABLE [SPLITS]
//       TABLE on the source: family f, 3 versions, not replicated; SPLITS, comma-separated, its
//       regions' start keys after the first (enable_table_replication makes the same on the peer).
//   java Replication peer SOURCE SINK PEER_KEY TABLE
//       the source adds the sink as its peer 'basalt' with CLUSTER_KEY PEER_KEY, DISABLED (HBase's
//       add_peer ... STATE => "DISABLED": the source keeps the edits for it from now on), and
//       enables the table's replication (enable_table_replication: it makes the table on the
//       peer, as the source describes it).
//   java Replication enable SOURCE
//       the peer starts taking the edits kept for it (enable_peer).
//   java Replication write SOURCE TABLE FROM TO [PAUSE_MS [STOP_FILE]]
//       rows r<FROM>.. one batch each (a Put of f:q and f:w), and along the way overwrites,
//       DeleteColumn of f:w, Delete of one version, and whole-row deletes, so that every kind of
//       cell is shipped; PAUSE_MS between batches; up to row TO, or with STOP_FILE until that file
//       exists (TO then a cap). A batch the client gave up on is counted and reported (exit 3),
//       never hidden.
//   java Replication digest REGISTRY TABLE
//       one line: "rows R cells C sha256 H" over an ordered scan of every version (row, family,
//       qualifier, timestamp, value of each cell), so that two clusters compare in one line.
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Row;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.replication.ReplicationPeerConfig;
import org.apache.hadoop.hbase.util.Bytes;

public final class Replication {
  private static final byte[] F = Bytes.toBytes("f");
  private static final byte[] Q = Bytes.toBytes("q");
  private static final byte[] W = Bytes.toBytes("w");

  private static Connection connect(String where) throws Exception {
    Configuration conf = HBaseConfiguration.create();
    Registry.configure(conf, where);
    conf.setInt("hbase.client.retries.number", 60);
    conf.setInt("hbase.client.pause", 200);
    conf.setInt("hbase.client.operation.timeout", 120000);
    return ConnectionFactory.createConnection(conf);
  }

  private static void create(Connection conn, String table, int scope, String splits) throws Exception {
    byte[][] keys = new byte[0][];
    if (splits != null && !splits.isEmpty()) {
      String[] parts = splits.split(",");
      keys = new byte[parts.length][];
      for (int i = 0; i < parts.length; i++) keys[i] = Bytes.toBytes(parts[i]);
    }
    TableDescriptor desc = TableDescriptorBuilder.newBuilder(TableName.valueOf(table))
        .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(F).setMaxVersions(3).setScope(scope).build())
        .build();
    try (Admin admin = conn.getAdmin()) {
      if (keys.length > 0) {
        admin.createTable(desc, keys);
      } else {
        admin.createTable(desc);
      }
    }
  }

  private static void peer(String source, String sink, String peerKey, String table) throws Exception {
    try (Connection s = connect(source); Admin admin = s.getAdmin()) {
      admin.addReplicationPeer("basalt", ReplicationPeerConfig.newBuilder().setClusterKey(peerKey).build(), false);
      System.out.println("Replication: peer " + admin.getReplicationPeerConfig("basalt").getClusterKey() + ", disabled");
      admin.enableTableReplication(TableName.valueOf(table));
    }
    try (Connection s = connect(sink); Admin admin = s.getAdmin()) {
      System.out.println("Replication: on the peer " + admin.getDescriptor(TableName.valueOf(table)));
    }
  }

  private static int write(String source, String table, int from, int to, int pauseMs, String stopFile)
      throws Exception {
    int failed = 0;
    int i = from;
    try (Connection s = connect(source); Table t = s.getTable(TableName.valueOf(table))) {
      for (; i < to && (stopFile == null || !new java.io.File(stopFile).exists()); i++) {
        List<Row> batch = new ArrayList<>();
        byte[] row = Bytes.toBytes(String.format("r%06d", i));
        batch.add(new Put(row).addColumn(F, Q, Bytes.toBytes("v" + i)).addColumn(F, W, Bytes.toBytes("w" + i)));
        if (i % 13 == 0) batch.add(new Put(Bytes.toBytes(String.format("r%06d", i / 2))).addColumn(F, Q, Bytes.toBytes("again" + i)));
        if (i % 7 == 3) batch.add(new Delete(Bytes.toBytes(String.format("r%06d", i - 3))).addColumns(F, W));
        if (i % 11 == 5) batch.add(new Delete(Bytes.toBytes(String.format("r%06d", i - 5))));
        if (i % 17 == 8) batch.add(new Delete(Bytes.toBytes(String.format("r%06d", i / 2))).addColumn(F, Q));
        try {
          t.batch(batch, new Object[batch.size()]);
        } catch (Exception e) {
          failed++;
          System.err.println("Replication: batch " + i + " failed: " + e);
        }
        if (pauseMs > 0) Thread.sleep(pauseMs);
      }
    }
    System.out.println("Replication: wrote rows " + from + " to " + i + ", " + failed + " batches failed");
    return failed;
  }

  private static void digest(String where, String table) throws Exception {
    MessageDigest sha = MessageDigest.getInstance("SHA-256");
    long rows = 0;
    long cells = 0;
    try (Connection c = connect(where); Table t = c.getTable(TableName.valueOf(table));
         ResultScanner scanner = t.getScanner(new Scan().readAllVersions())) {
      for (Result r : scanner) {
        rows++;
        for (Cell cell : r.rawCells()) {
          cells++;
          for (byte[] part : new byte[][] {CellUtil.cloneRow(cell), CellUtil.cloneFamily(cell),
                                           CellUtil.cloneQualifier(cell), Bytes.toBytes(cell.getTimestamp()),
                                           CellUtil.cloneValue(cell)}) {
            sha.update(Bytes.toBytes(part.length));
            sha.update(part);
          }
        }
      }
    }
    System.out.println("rows " + rows + " cells " + cells + " sha256 " + HexFormat.of().formatHex(sha.digest()));
  }

  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "create":
        try (Connection s = connect(args[1])) {
          create(s, args[2], 0, args.length > 3 ? args[3] : null);
        }
        break;
      case "peer":
        peer(args[1], args[2], args[3], args[4]);
        break;
      case "enable":
        try (Connection s = connect(args[1]); Admin admin = s.getAdmin()) {
          admin.enableReplicationPeer("basalt");
        }
        break;
      case "write":
        if (write(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]),
                  args.length > 5 ? Integer.parseInt(args[5]) : 0, args.length > 6 ? args[6] : null) > 0) {
          System.exit(3);
        }
        break;
      case "digest":
        digest(args[1], args[2]);
        break;
      default:
        throw new IllegalArgumentException("unknown command " + args[0]);
    }
    System.exit(0);
  }
}
