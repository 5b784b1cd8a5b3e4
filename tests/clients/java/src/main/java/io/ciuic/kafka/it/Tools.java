// tests/clients/java/.../Tools.java: runs Apache Kafka's command-line tools
// in this one JVM through their main classes (issue #15 part 2), so a batch
// of twenty commands pays one JVM start. Needs the tools classpath
// (build/java/tools-<v>/*: kafka_2.13, kafka-tools) next to this jar; works
// with 3.x and 4.x tools (each class moved is looked up under both names).
//
// SCRIPT has one command a line, tab-separated: NAME, MAINCLASS, ARGS...
// (blank lines and lines starting with # are skipped). For each command,
// OUTDIR/NAME.in (if present) is its standard input; its standard output
// and error (System.out/err and Scala's Console, which this class points at
// switchable streams before any tool class loads; System.in likewise) go to
// OUTDIR/NAME.out and NAME.err, and its exit status to NAME.rc: the code given to Kafka's
// Exit.exit (intercepted through Exit.setExitProcedure, so a tool cannot end
// the JVM), 0 when main returns, 99 when main throws. The shutdown hooks a
// tool registers with Exit.addShutdownHook run when its command ends.
// MAINCLASS "ck.checkpoints" is ours: ARGS are files that Kafka's own
// checkpoint readers parse (OffsetCheckpointFile for *-checkpoint,
// LeaderEpochCheckpointFile, PartitionMetadataFile, MetaProperties), one line
// of what each read per file; a file Kafka refuses makes the status 1.
// Single-threaded: commands run one after another.
package io.ciuic.kafka.it;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;

final class Tools {
  private Tools() {}

  /** Thrown by the intercepted Exit.exit so that a tool's main unwinds. */
  static final class ToolExit extends RuntimeException {
    final int code;

    ToolExit(int code) {
      super("exit " + code, null, false, false);
      this.code = code;
    }
  }

  /** The first code a command gave Exit.exit/halt (a tool that catches our
   *  throw and exits again keeps its first answer); null: none yet. */
  private static volatile Integer firstExit;

  /** Shutdown hooks a command registered through Exit.addShutdownHook; run
   *  (bounded) when the command ends, as the JVM would run them at its exit:
   *  4.x's console producer closes, so flushes, its producer only there. */
  private static final List<Runnable> hooks = new ArrayList<>();

  /** An OutputStream whose target is swapped per command. */
  static final class Switch extends OutputStream {
    volatile OutputStream target;

    Switch(OutputStream t) { target = t; }

    @Override public void write(int b) throws IOException { target.write(b); }

    @Override public void write(byte[] b, int off, int len) throws IOException { target.write(b, off, len); }

    @Override public void flush() throws IOException { target.flush(); }
  }

  /** An InputStream whose source is swapped per command: a tool may keep
   *  System.in from its first use (4.x's console producer does). */
  static final class SwitchIn extends InputStream {
    volatile InputStream source = new ByteArrayInputStream(new byte[0]);

    @Override public int read() throws IOException { return source.read(); }

    @Override public int read(byte[] b, int off, int len) throws IOException { return source.read(b, off, len); }

    @Override public int available() throws IOException { return source.available(); }
  }

  static boolean run(String script, String outDir) throws Exception {
    PrintStream realOut = System.out;
    Switch out = new Switch(realOut), err = new Switch(System.err);
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    SwitchIn in0 = new SwitchIn();
    System.setIn(in0);
    interceptExit();
    for (String line : Files.readAllLines(Path.of(script), StandardCharsets.UTF_8)) {
      if (line.isBlank() || line.startsWith("#")) continue;
      String[] f = line.split("\t");
      String name = f[0], main = f[1];
      String[] args = Arrays.copyOfRange(f, 2, f.length);
      Path in = Path.of(outDir, name + ".in");
      InputStream stdin = Files.exists(in) ? Files.newInputStream(in) : new ByteArrayInputStream(new byte[0]);
      ByteArrayOutputStream o = new ByteArrayOutputStream(), e = new ByteArrayOutputStream();
      out.target = o;
      err.target = e;
      in0.source = stdin;
      long t0 = System.nanoTime();
      firstExit = null;
      int rc;
      try {
        if (main.equals("ck.checkpoints")) {
          rc = checkpoints(args);
        } else {
          Method m = Class.forName(main).getMethod("main", String[].class);
          m.invoke(null, (Object) args);
          rc = 0;
        }
      } catch (InvocationTargetException ite) {
        Throwable c = ite.getCause();
        if (c instanceof ToolExit) {
          rc = ((ToolExit) c).code;
        } else {
          c.printStackTrace();
          rc = 99;
        }
      } catch (ToolExit te) {
        rc = te.code;
      } catch (Throwable t) {
        t.printStackTrace();
        rc = 99;
      } finally {
        System.out.flush();
        System.err.flush();
        out.target = realOut;
        err.target = realOut;
        stdin.close();
      }
      if (firstExit != null) rc = firstExit;
      runHooks();
      Files.write(Path.of(outDir, name + ".out"), o.toByteArray());
      Files.write(Path.of(outDir, name + ".err"), e.toByteArray());
      Files.writeString(Path.of(outDir, name + ".rc"), rc + "\n");
      realOut.printf("ran %s (%s) -> %d in %d ms%n", name, main, rc, (System.nanoTime() - t0) / 1_000_000);
      realOut.flush();
    }
    return true;  // every command ran; their statuses are in NAME.rc for the caller to judge
  }

  /** Exit.setExitProcedure / setHaltProcedure: throw; setShutdownHookAdder: keep the hook for runHooks. */
  private static void interceptExit() throws Exception {
    Class<?> exit;
    try {
      exit = Class.forName("org.apache.kafka.common.utils.Exit");  // 3.x
    } catch (ClassNotFoundException e) {
      exit = Class.forName("org.apache.kafka.common.utils.internals.Exit");  // 4.x
    }
    Class<?> proc = Class.forName(exit.getName() + "$Procedure");
    Object thrower = Proxy.newProxyInstance(Tools.class.getClassLoader(), new Class<?>[] {proc}, (p, m, a) -> {
      if (m.getDeclaringClass() == Object.class) return m.invoke(thrower(), a);
      if (firstExit == null) firstExit = (Integer) a[0];
      throw new ToolExit((Integer) a[0]);
    });
    exit.getMethod("setExitProcedure", proc).invoke(null, thrower);
    exit.getMethod("setHaltProcedure", proc).invoke(null, thrower);
    Class<?> hook = Class.forName(exit.getName() + "$ShutdownHookAdder");
    Object keep = Proxy.newProxyInstance(Tools.class.getClassLoader(), new Class<?>[] {hook}, (p, m, a) -> {
      if (m.getDeclaringClass() == Object.class) return m.invoke(thrower(), a);
      synchronized (hooks) {
        hooks.add((Runnable) a[1]);
      }
      return null;
    });
    exit.getMethod("setShutdownHookAdder", hook).invoke(null, keep);
  }

  private static Object thrower() { return Tools.class; }

  private static void runHooks() throws InterruptedException {
    List<Runnable> now;
    synchronized (hooks) {
      now = new ArrayList<>(hooks);
      hooks.clear();
    }
    for (Runnable r : now) {
      Thread t = new Thread(r, "tool-shutdown-hook");
      t.setDaemon(true);
      t.start();
      t.join(30_000);
      if (t.isAlive()) System.out.println("shutdown hook still running after 30 s");
    }
  }

  /** Reads each file with Kafka's own reader for its kind; prints what it read. */
  private static int checkpoints(String[] files) throws Exception {
    int rc = 0;
    Class<?> failureChannel = Class.forName("org.apache.kafka.storage.internals.log.LogDirFailureChannel");
    for (String name : files) {
      File file = new File(name);
      String base = file.getName();
      try {
        Object read;
        if (base.equals("leader-epoch-checkpoint")) {
          Object f = Class.forName("org.apache.kafka.storage.internals.checkpoint.LeaderEpochCheckpointFile")
              .getConstructor(File.class, failureChannel).newInstance(file, null);
          read = f.getClass().getMethod("read").invoke(f);
        } else if (base.equals("partition.metadata")) {
          Object f = Class.forName("org.apache.kafka.storage.internals.checkpoint.PartitionMetadataFile")
              .getConstructor(File.class, failureChannel).newInstance(file, null);
          Object md = f.getClass().getMethod("read").invoke(f);
          read = "topicId=" + md.getClass().getMethod("topicId").invoke(md);
        } else if (base.equals("meta.properties")) {
          Class<?> utils = Class.forName("org.apache.kafka.metadata.properties.PropertiesUtils");
          Properties props = (Properties) utils.getMethod("readPropertiesFile", String.class).invoke(null, name);
          Class<?> b = Class.forName("org.apache.kafka.metadata.properties.MetaProperties$Builder");
          Object builder = b.getConstructor(Properties.class).newInstance(props);
          read = b.getMethod("build").invoke(builder);
        } else if (base.endsWith("-checkpoint")) {
          Class<?> c;
          try {
            c = Class.forName("org.apache.kafka.storage.internals.checkpoint.OffsetCheckpointFile");  // 4.x
          } catch (ClassNotFoundException e) {
            c = Class.forName("kafka.server.checkpoints.OffsetCheckpointFile");  // 3.x (Scala)
          }
          Object f = c.getConstructor(File.class, failureChannel).newInstance(file, null);
          if (c.getName().startsWith("kafka.")) {
            Object ck = c.getMethod("checkpoint").invoke(f);
            read = ck.getClass().getMethod("read").invoke(ck);
          } else {
            // A map: print its entries sorted as the 3.x reader's (partition,offset) list.
            Map<?, ?> m = (Map<?, ?>) c.getMethod("read").invoke(f);
            List<String> es = new ArrayList<>();
            m.forEach((k, v) -> es.add("(" + k + "," + v + ")"));
            java.util.Collections.sort(es);
            read = es;
          }
        } else {
          throw new IllegalArgumentException("no Kafka reader for " + base);
        }
        String s = String.valueOf(read);
        if (read instanceof List) s = ((List<?>) read).size() + " entries " + s;
        System.out.println(name + ": " + s);
      } catch (InvocationTargetException ite) {
        rc = 1;
        System.out.println(name + ": REFUSED " + ite.getCause());
      } catch (Exception e) {
        rc = 1;
        System.out.println(name + ": REFUSED " + e);
      }
    }
    return rc;
  }
}
