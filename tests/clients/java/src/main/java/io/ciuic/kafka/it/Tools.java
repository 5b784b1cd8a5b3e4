// tests/clients/java/.../Tools.java: runs Apache Kafka's command-line tools
// in this one JVM through their main classes (issue #15 part 2), so a batch
// of twenty commands pays one JVM start. Needs the tools classpath
// (build/java/tools-<v>/*: kafka_2.13, kafka-tools) next to this jar.
//
// SCRIPT has one command a line, tab-separated: NAME, MAINCLASS, ARGS...
// (blank lines and lines starting with # are skipped). For each command,
// OUTDIR/NAME.in (if present) is its standard input; its standard output
// and error (System.out/err and Scala's Console, which this class points at
// switchable streams before any tool class loads) go to OUTDIR/NAME.out and
// NAME.err, and its exit status to NAME.rc: the code given to Kafka's
// Exit.exit (intercepted through Exit.setExitProcedure, so a tool cannot end
// the JVM), 0 when main returns, 99 when main throws.
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

  /** An OutputStream whose target is swapped per command. */
  static final class Switch extends OutputStream {
    volatile OutputStream target;

    Switch(OutputStream t) { target = t; }

    @Override public void write(int b) throws IOException { target.write(b); }

    @Override public void write(byte[] b, int off, int len) throws IOException { target.write(b, off, len); }

    @Override public void flush() throws IOException { target.flush(); }
  }

  static boolean run(String script, String outDir) throws Exception {
    PrintStream realOut = System.out;
    Switch out = new Switch(realOut), err = new Switch(System.err);
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    interceptExit();
    boolean allRan = true;
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
      System.setIn(stdin);
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
      Files.write(Path.of(outDir, name + ".out"), o.toByteArray());
      Files.write(Path.of(outDir, name + ".err"), e.toByteArray());
      Files.writeString(Path.of(outDir, name + ".rc"), rc + "\n");
      realOut.printf("ran %s (%s) -> %d in %d ms%n", name, main, rc, (System.nanoTime() - t0) / 1_000_000);
      realOut.flush();
    }
    return allRan;
  }

  /** Exit.setExitProcedure / setHaltProcedure: throw; setShutdownHookAdder: ignore the hook. */
  private static void interceptExit() throws Exception {
    Class<?> exit = Class.forName("org.apache.kafka.common.utils.Exit");
    Class<?> proc = Class.forName("org.apache.kafka.common.utils.Exit$Procedure");
    Object thrower = Proxy.newProxyInstance(Tools.class.getClassLoader(), new Class<?>[] {proc}, (p, m, a) -> {
      if (m.getDeclaringClass() == Object.class) return m.invoke(thrower(), a);
      if (firstExit == null) firstExit = (Integer) a[0];
      throw new ToolExit((Integer) a[0]);
    });
    exit.getMethod("setExitProcedure", proc).invoke(null, thrower);
    exit.getMethod("setHaltProcedure", proc).invoke(null, thrower);
    Class<?> hook = Class.forName("org.apache.kafka.common.utils.Exit$ShutdownHookAdder");
    Object ignore = Proxy.newProxyInstance(Tools.class.getClassLoader(), new Class<?>[] {hook}, (p, m, a) -> {
      if (m.getDeclaringClass() == Object.class) return m.invoke(thrower(), a);
      return null;
    });
    exit.getMethod("setShutdownHookAdder", hook).invoke(null, ignore);
  }

  private static Object thrower() { return Tools.class; }

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
          Object f = Class.forName("kafka.server.checkpoints.OffsetCheckpointFile")
              .getConstructor(File.class, failureChannel).newInstance(file, null);
          Object ck = f.getClass().getMethod("checkpoint").invoke(f);
          read = ck.getClass().getMethod("read").invoke(ck);
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
