// Writes rows one Put at a time with the unmodified HBase client, riding through whatever the
// server goes through (a split, a kill -9 and restart), and records each Put the client saw
// acknowledged. Run by hbase_client_test.cc, which then reads every acknowledged row back.
//
// Usage: java Writer (HOST:PORT | zk:QUORUM@PARENT) TABLE ROWS ACKED_FILE (Registry.java)
//   rows "w000000".. of family f, qualifier q, value "v" + the row's number; ACKED_FILE gets one
//   line per acknowledged row, flushed at once. A Put the client gave up on is reported on
//   stderr and not recorded (it may or may not have been applied). Exit 0 when all were tried.
import java.io.FileWriter;
import java.io.PrintWriter;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.util.Bytes;

public final class Writer {
  public static void main(String[] args) throws Exception {
    Configuration conf = HBaseConfiguration.create();
    Registry.configure(conf, args[0]);
    conf.setInt("hbase.client.retries.number", 40);
    conf.setInt("hbase.client.pause", 100);
    conf.setInt("hbase.rpc.timeout", 5000);
    conf.setInt("hbase.client.operation.timeout", 90000);
    int rows = Integer.parseInt(args[2]);
    int failed = 0;
    try (Connection conn = ConnectionFactory.createConnection(conf);
         Table table = conn.getTable(TableName.valueOf(args[1]));
         PrintWriter acked = new PrintWriter(new FileWriter(args[3]))) {
      for (int i = 0; i < rows; i++) {
        String row = String.format("w%06d", i);
        try {
          table.put(new Put(Bytes.toBytes(row)).addColumn(Bytes.toBytes("f"), Bytes.toBytes("q"), Bytes.toBytes("v" + i)));
          acked.println(row);
          acked.flush();
        } catch (Exception e) {
          failed++;
          System.err.println("gave up on " + row + ": " + e);
        }
      }
    }
    System.out.println("Writer: " + rows + " tried, " + failed + " given up");
    System.exit(0);
  }
}
