// What one user may do on a secured server: a Get, a Scan and a Put of TABLE's family cf; the
// table administration HBase's shell does (list, describe, flush, snapshot and list snapshots);
// then the creation of table NEW; three scanners of TABLE open at once; TABLE restored from NEW_snap
// (disabled, restored, enabled); and the deletion of snapshot DELETE when one is named. Each is
// tried once (no retries) and reported on a line of its own:
//   GET OK <value> | SCAN OK <rows> | PUT OK | LIST OK <table,...> | DESCRIBE OK <families>
//   | FLUSH OK | SNAPSHOT OK (NEW_snap, of TABLE) | SNAPSHOTS OK <snapshot/owner,...> | CREATE OK
//   | SCANNERS OK 3 | RESTORE OK | DELETE OK
// or, when refused, the step's name, REFUSED, its exception's class and causes, and the message.
// The user is the client's (its certificate and HADOOP_USER_NAME, set by the test as -D settings).
// Usage: java AuthProbe (HOST:PORT | zk:QUORUM@PARENT) TABLE NEW [DELETE] (Registry.java)
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.SnapshotDescription;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;

public final class AuthProbe {
  interface Step {
    String run() throws Exception;
  }

  static void report(String name, Step step) {
    try {
      System.out.println(name + " OK" + step.run());
    } catch (Exception e) {
      StringBuilder chain = new StringBuilder();
      for (Throwable t = e; t != null; t = t.getCause()) chain.append(' ').append(t.getClass().getName());
      String message = String.valueOf(e.getMessage()).replace('\n', ' ');
      System.out.println(name + " REFUSED" + chain + " | " + message);
    }
  }

  public static void main(String[] args) throws Exception {
    Configuration conf = HBaseConfiguration.create();
    Registry.configure(conf, args[0]);
    conf.setInt("hbase.client.retries.number", 0);
    byte[] cf = Bytes.toBytes("cf");
    try (Connection conn = ConnectionFactory.createConnection(conf);
         Table table = conn.getTable(TableName.valueOf(args[1]));
         Admin admin = conn.getAdmin()) {
      report("GET", () -> {
        Result r = table.get(new Get(Bytes.toBytes("r1")));
        return " " + Bytes.toString(r.getValue(cf, Bytes.toBytes("q")));
      });
      report("SCAN", () -> {
        int rows = 0;
        try (ResultScanner scanner = table.getScanner(new Scan())) {
          for (Result r : scanner) rows++;
        }
        return " " + rows;
      });
      report("PUT", () -> {
        table.put(new Put(Bytes.toBytes("r2")).addColumn(cf, Bytes.toBytes("q"), Bytes.toBytes("two")));
        return "";
      });
      TableName name = TableName.valueOf(args[1]);
      report("LIST", () -> {
        StringBuilder names = new StringBuilder();
        for (TableName t : admin.listTableNames()) names.append(names.length() == 0 ? " " : ",").append(t);
        return names.toString();
      });
      report("DESCRIBE", () -> " " + admin.getDescriptor(name).getColumnFamilyCount());
      report("FLUSH", () -> {
        admin.flush(name);
        return "";
      });
      report("SNAPSHOT", () -> {
        admin.snapshot(args[2] + "_snap", name);
        return "";
      });
      report("SNAPSHOTS", () -> {
        StringBuilder names = new StringBuilder();
        for (SnapshotDescription d : admin.listSnapshots()) {
          names.append(names.length() == 0 ? " " : ",").append(d.getName()).append('/').append(d.getOwner());
        }
        return names.toString();
      });
      report("CREATE", () -> {
        admin.createTable(TableDescriptorBuilder.newBuilder(TableName.valueOf(args[2]))
            .setColumnFamily(ColumnFamilyDescriptorBuilder.of(cf)).build());
        return "";
      });
      report("SCANNERS", () -> {
        java.util.List<ResultScanner> open = new java.util.ArrayList<>();
        try {
          for (int i = 0; i < 3; i++) {
            ResultScanner scanner = table.getScanner(new Scan().setCaching(1));
            open.add(scanner);
            scanner.next();  // (opens it on the server, which holds it for the next row)
          }
        } finally {
          for (ResultScanner scanner : open) scanner.close();
        }
        return " " + open.size();
      });
      report("RESTORE", () -> {
        admin.disableTable(name);
        try {
          admin.restoreSnapshot(args[2] + "_snap");
        } finally {
          admin.enableTable(name);
        }
        return "";
      });
      if (args.length > 3) {
        report("DELETE", () -> {
          admin.deleteSnapshot(args[3]);
          return "";
        });
      }
    } catch (Exception e) {
      System.out.println("CONNECTION REFUSED " + e.getClass().getName() + " | " + e.getMessage());
    }
    System.exit(0);
  }
}
