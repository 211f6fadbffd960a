// How the tests' Java programs find Basalt, given one argument:
//   HOST:PORT          an HBase port, through the RPC registry (hbase.client.bootstrap.servers)
//   zk:QUORUM@PARENT   HBase's default registry: hbase.zookeeper.quorum, zookeeper.znode.parent
// and the client's other settings: every Java system property named hbase.* (java -Dhbase.x=y),
// as a client's hbase-site.xml would set them (its TLS: hbase.client.netty.tls.enabled, ...).
import org.apache.hadoop.conf.Configuration;

final class Registry {
  private Registry() {}

  static void configure(Configuration conf, String where) {
    for (String key : System.getProperties().stringPropertyNames()) {
      if (key.startsWith("hbase.")) conf.set(key, System.getProperty(key));
    }
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
