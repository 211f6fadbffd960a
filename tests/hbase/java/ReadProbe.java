// Reads one row of a table N times with the unmodified HBase client and no retries, and says
// how the first refusal came (its exception and causes), or that none was refused.
// Usage: java ReadProbe (HOST:PORT | zk:QUORUM@PARENT) TABLE N (Registry.java)
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.util.Bytes;

public final class ReadProbe {
  public static void main(String[] args) throws Exception {
    Configuration conf = HBaseConfiguration.create();
    Registry.configure(conf, args[0]);
    conf.setInt("hbase.client.retries.number", 0);
    int n = Integer.parseInt(args[2]);
    try (Connection conn = ConnectionFactory.createConnection(conf);
         Table table = conn.getTable(TableName.valueOf(args[1]))) {
      for (int i = 0; i < n; i++) {
        try {
          table.get(new Get(Bytes.toBytes("probe")));
        } catch (Exception e) {
          StringBuilder chain = new StringBuilder();
          for (Throwable t = e; t != null; t = t.getCause()) chain.append(' ').append(t.getClass().getName());
          System.out.println("REFUSED at " + i + ":" + chain + " | " + e.getMessage());
          System.exit(0);
        }
      }
      System.out.println("ALL " + n + " READ");
    }
    System.exit(0);
  }
}
