// How the tests' Java programs find Basalt, given one argument:
//   HOST:PORT          an HBase port, through the RPC registry (hbase.client.bootstrap.servers)
//   zk:QUORUM@PARENT   HBase's default registry: hbase.zookeeper.quorum, zookeeper.znode.parent
import org.apache.hadoop.conf.Configuration;

final class Registry {
  private Registry() {}

  static void configure(Configuration conf, String where) {
    if (where.startsWith("zk:")) {
      String[] zk = where.substring(3).split("@", 2);
      conf.set("hbase.zookeeper.quorum", zk[0]);
      conf.set("zookeeper.znode.parent", zk[1]);
    } else {
      conf.set("hbase.client.registry.impl", "org.apache.hadoop.hbase.client.RpcConnectionRegistry");
      conf.set("hbase.client.bootstrap.servers", where);
    }
  }
}
