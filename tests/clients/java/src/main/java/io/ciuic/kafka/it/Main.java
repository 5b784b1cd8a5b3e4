// tests/clients/java/.../Main.java: entry point of ck-java-it.jar, one JVM
// per run so the integration tests pay the JVM start once (issue #15).
//   clients BOOTSTRAP TAG   every Java-client check (Clients.java) against
//                           the broker; topic and group names start with TAG
//   tools SCRIPT OUTDIR     Kafka's command-line tools run in this JVM
//                           (Tools.java), one output file per command
//   cluster produce|consume ...  the driver of test_cluster_clients.py
//                           (Cluster.java: its own line protocol)
// Prints "ok NAME: detail" or "FAIL NAME: why" per check and exits 1 if any
// check failed, 2 on a usage error. Single-threaded.
package io.ciuic.kafka.it;

public final class Main {
  private Main() {}

  public static void main(String[] args) throws Exception {
    if (args.length == 3 && args[0].equals("clients")) {
      System.exit(new Clients(args[1], args[2]).runAll() ? 0 : 1);
    } else if (args.length == 3 && args[0].equals("tools")) {
      System.exit(Tools.run(args[1], args[2]) ? 0 : 1);
    } else if (args.length >= 2 && args[0].equals("cluster")) {
      System.exit(Cluster.run(args) ? 0 : 1);
    }
    System.err.println("usage: clients BOOTSTRAP TAG | tools SCRIPT OUTDIR | cluster ...");
    System.exit(2);
  }
}
