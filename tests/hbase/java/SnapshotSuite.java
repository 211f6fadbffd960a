// SnapshotSuite: HBase's Admin snapshot calls against Basalt with the unmodified HBase client,
// each checked: snapshot (with a TTL), listSnapshots and listTableSnapshots, cloneSnapshot,
// restoreSnapshot (HBase's rule: only a disabled table; a dropped one comes back), deleteSnapshot,
// and the exceptions HBase gives for a name taken, a snapshot or table missing, and a clone onto
// an existing table. Rows are compared through an ordered scan's digest.
// Usage: java SnapshotSuite (HOST:PORT | zk:QUORUM@PARENT) (Registry.java)
// Prints "N checks passed" and exits 0, or the first failed check and exits 1.
import java.security.MessageDigest;
import java.util.List;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableExistsException;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.TableNotDisabledException;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.SnapshotDescription;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.snapshot.SnapshotDoesNotExistException;
import org.apache.hadoop.hbase.snapshot.SnapshotExistsException;
import org.apache.hadoop.hbase.util.Bytes;

public final class SnapshotSuite {
  private static int checks = 0;
  private static final byte[] F = Bytes.toBytes("f");
  private static final byte[] Q = Bytes.toBytes("q");

  static void check(boolean ok, String what) {
    if (!ok) {
      System.out.println("FAILED: " + what);
      System.exit(1);
    }
    checks++;
  }

  // Whether `e` or one of its causes is a `kind`.
  static boolean causedBy(Throwable e, Class<?> kind) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (kind.isInstance(t)) return true;
    }
    return false;
  }

  // The rows and f:q values of a full scan, in order, as one SHA-256.
  static String digest(Connection conn, TableName t) throws Exception {
    MessageDigest md = MessageDigest.getInstance("SHA-256");
    int rows = 0;
    try (Table table = conn.getTable(t); ResultScanner scanner = table.getScanner(new Scan())) {
      for (Result r : scanner) {
        md.update(r.getRow());
        md.update((byte) '=');
        md.update(r.getValue(F, Q));
        md.update((byte) ';');
        rows++;
      }
    }
    return rows + ":" + Bytes.toHex(md.digest());
  }

  static void put(Connection conn, TableName t, int from, int to, String value) throws Exception {
    try (Table table = conn.getTable(t)) {
      for (int i = from; i < to; i++) {
        table.put(new Put(Bytes.toBytes(String.format("row%03d", i))).addColumn(F, Q, Bytes.toBytes(value)));
      }
    }
  }

  public static void main(String[] args) throws Exception {
    Configuration conf = HBaseConfiguration.create();
    Registry.configure(conf, args[0]);
    try (Connection conn = ConnectionFactory.createConnection(conf); Admin admin = conn.getAdmin()) {
      run(conn, admin);
    }
    System.out.println(checks + " checks passed");
    System.exit(0);
  }

  static void run(Connection conn, Admin admin) throws Exception {
    TableName t = TableName.valueOf("hb_snap");
    admin.createTable(TableDescriptorBuilder.newBuilder(t)
        .setColumnFamily(ColumnFamilyDescriptorBuilder.of(F)).build(), new byte[][] {Bytes.toBytes("row050")});
    put(conn, t, 0, 100, "v1");
    String before = digest(conn, t);
    check(before.startsWith("100:"), "100 rows before the snapshot: " + before);

    // Taken, and listed with its table, type and TTL.
    admin.snapshot("hb_snap_1", t);
    admin.snapshot("hb_snap_ttl", t, java.util.Collections.singletonMap("TTL", (Object) 86400L));
    List<SnapshotDescription> all = admin.listSnapshots();
    check(all.size() == 2, "two snapshots listed: " + all);
    SnapshotDescription first = null;
    for (SnapshotDescription d : all) {
      if (d.getName().equals("hb_snap_1")) first = d;
    }
    check(first != null && first.getTableName().equals(t), "hb_snap_1 is of hb_snap: " + first);
    check(first.getCreationTime() > 0, "it has a creation time");
    for (SnapshotDescription d : all) {
      if (d.getName().equals("hb_snap_ttl")) check(d.getTtl() == 86400, "its TTL: " + d.getTtl());
    }
    check(admin.listSnapshots(Pattern.compile("hb_snap_t.*")).size() == 1, "listSnapshots by pattern");
    check(admin.listTableSnapshots(Pattern.compile("hb_sn.*"), Pattern.compile(".*_1")).size() == 1,
        "listTableSnapshots by table and name pattern");
    try {
      admin.snapshot("hb_snap_1", t);
      check(false, "a snapshot name taken is refused");
    } catch (Exception e) {
      check(causedBy(e, SnapshotExistsException.class), "SnapshotExistsException: " + e);
    }

    // After it: overwrites and new rows; a clone has the rows of before, and its writes stay its own.
    put(conn, t, 0, 30, "after");
    put(conn, t, 100, 120, "after");
    TableName clone = TableName.valueOf("hb_snap_clone");
    admin.cloneSnapshot("hb_snap_1", clone);
    check(admin.isTableEnabled(clone), "a clone is enabled");
    check(digest(conn, clone).equals(before), "the clone holds the snapshot's rows");
    check(admin.getRegions(clone).size() == 2, "the clone has the snapshot's two regions");
    put(conn, clone, 0, 5, "clone");
    try {
      admin.cloneSnapshot("hb_snap_1", clone);
      check(false, "a clone onto an existing table is refused");
    } catch (Exception e) {
      check(causedBy(e, TableExistsException.class), "TableExistsException: " + e);
    }
    try {
      admin.cloneSnapshot("hb_no_such_snapshot", TableName.valueOf("hb_snap_x"));
      check(false, "a clone of a missing snapshot is refused");
    } catch (Exception e) {
      check(e.getMessage() != null && e.getMessage().contains("hb_no_such_snapshot"), "it names the snapshot: " + e);
    }

    // Restore: refused while enabled (HBase's rule), then the rows of before come back.
    try {
      admin.restoreSnapshot("hb_snap_1");
      check(false, "a restore of an enabled table is refused");
    } catch (Exception e) {
      check(causedBy(e, TableNotDisabledException.class), "TableNotDisabledException: " + e);
    }
    admin.disableTable(t);
    admin.restoreSnapshot("hb_snap_1");
    check(admin.isTableDisabled(t), "a restored table stays disabled");
    admin.enableTable(t);
    check(digest(conn, t).equals(before), "the restored table holds the snapshot's rows");

    // A dropped table comes back from its snapshot.
    admin.disableTable(t);
    admin.deleteTable(t);
    admin.restoreSnapshot("hb_snap_1");
    check(admin.tableExists(t) && admin.isTableEnabled(t), "a dropped table restored is back and enabled");
    check(digest(conn, t).equals(before), "with the snapshot's rows");

    // Deleted, gone from the list; deleting again is refused.
    admin.deleteSnapshot("hb_snap_1");
    admin.deleteSnapshot("hb_snap_ttl");
    check(admin.listSnapshots().isEmpty(), "no snapshot is listed after deleting both");
    try {
      admin.deleteSnapshot("hb_snap_1");
      check(false, "deleting a missing snapshot is refused");
    } catch (Exception e) {
      check(causedBy(e, SnapshotDoesNotExistException.class), "SnapshotDoesNotExistException: " + e);
    }
    // The clone outlives its snapshot.
    check(digest(conn, clone).startsWith("100:"), "the clone keeps its rows after the snapshot is deleted");
    for (TableName n : new TableName[] {t, clone}) {
      admin.disableTable(n);
      admin.deleteTable(n);
    }
  }
}
