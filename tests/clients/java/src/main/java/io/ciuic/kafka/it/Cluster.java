// tests/clients/java/.../Cluster.java: the Java client's driver for
// tests/integration/test_cluster_clients.py (issue #12), run as
//   cluster produce BOOTSTRAP TOPIC N CHUNK
//   cluster consume BOOTSTRAP TOPIC GROUP FIRST HALF
// The line protocol is described in test_cluster_clients.py. The producer is
// kafka-clients' default since 3.0: idempotent, acks=all, retrying until
// delivery.timeout.ms; records go to explicit partitions, a chunk at a time
// (send, then flush). The group members are classic consumers (subscribe,
// auto commit off, 4 KiB a partition per fetch so member 1 stops inside
// partitions) committing exactly what they delivered with commitSync
// (retried while the coordinator moves); member 1 pauses after FIRST
// records until the test says `resume`, the same consumer going on.
// Single-threaded; every wait is bounded.
package io.ciuic.kafka.it;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BiPredicate;
import java.util.function.IntPredicate;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

final class Cluster {
  private Cluster() {}

  private static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

  static boolean run(String[] args) throws Exception {
    Properties v = new Properties();
    try (var in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
      if (in != null) v.load(in);
    }
    OUT.println("client kafka-clients " + v.getProperty("version", "unknown") + " idempotent=1");
    OUT.flush();
    if (args.length == 6 && args[1].equals("produce")) {
      produce(args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]));
    } else if (args.length == 7 && args[1].equals("consume")) {
      consume(args[2], args[3], args[4], Integer.parseInt(args[5]), Integer.parseInt(args[6]));
    } else {
      System.err.println("usage: cluster produce BOOTSTRAP TOPIC N CHUNK | cluster consume BOOTSTRAP TOPIC GROUP FIRST HALF");
      return false;
    }
    OUT.flush();
    return true;
  }

  private static void produce(String bootstrap, String topic, int n, int chunk) throws Exception {
    Map<String, Object> c = new HashMap<>();
    c.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    c.put(ProducerConfig.CLIENT_ID_CONFIG, "ck-cc-java");
    c.put(ProducerConfig.ACKS_CONFIG, "all");
    c.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    c.put(ProducerConfig.LINGER_MS_CONFIG, 5);
    c.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, 100);
    c.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10000);
    c.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120000);
    c.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    c.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    int acked = 0, failed = 0;
    try (KafkaProducer<String, String> p = new KafkaProducer<>(c)) {
      for (int start = 0; start < n; start += chunk) {
        List<Future<RecordMetadata>> fs = new ArrayList<>();
        for (int i = start; i < Math.min(n, start + chunk); i++) {
          fs.add(p.send(new ProducerRecord<>(topic, i % 3, "k" + i, String.format("v%06d", i))));
        }
        p.flush();
        for (int j = 0; j < fs.size(); j++) {
          try {
            RecordMetadata md = fs.get(j).get(1, TimeUnit.SECONDS);
            OUT.printf("ack %d %d %d%n", md.partition(), md.offset(), start + j);
            acked++;
          } catch (ExecutionException e) {
            OUT.printf("err %d %s%n", start + j, e.getCause());
            failed++;
          }
        }
        OUT.flush();
      }
    }
    OUT.printf("produced %d %d%n", acked, failed);
  }

  private static final BufferedReader IN =
      new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

  private static String[] waitLine(String want) throws IOException {
    String line = IN.readLine();
    Check.that(line != null && (line.equals(want) || line.startsWith(want + " ")),
        "expected `" + want + "`, got " + line);
    String[] f = line.split(" ");
    return Arrays.copyOfRange(f, 1, f.length);
  }

  /** commitSync of exactly `delivered`, retrying retriable errors (the coordinator moving) for 60 s; prints it. */
  private static void commit(KafkaConsumer<String, String> k, String topic, Map<Integer, Long> delivered) {
    Map<TopicPartition, OffsetAndMetadata> offsets = new TreeMap<>(
        (a, b) -> Integer.compare(a.partition(), b.partition()));
    delivered.forEach((p, o) -> offsets.put(new TopicPartition(topic, p), new OffsetAndMetadata(o)));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (true) {
      try {
        k.commitSync(offsets, Duration.ofSeconds(30));
        break;
      } catch (RetriableException e) {
        Check.that(System.nanoTime() < deadline, "commit retried for 60 s: " + e);
        OUT.println("note commit: " + e + ", retrying");
      }
    }
    offsets.forEach((tp, om) -> OUT.printf("committed %d %d%n", tp.partition(), om.offset()));
    OUT.flush();
  }

  /**
   * One member: polls until done(next, count), printing what it delivers; once pauseAt(count) holds (if given)
   * commits, prints `paused` and waits for `resume`. Commits what it delivered and leaves; returns its next offsets.
   */
  private static Map<Integer, Long> member(String bootstrap, String topic, String group,
                                           BiPredicate<Map<Integer, Long>, Integer> done,
                                           IntPredicate pauseAt) throws Exception {
    Map<String, Object> c = new HashMap<>();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    c.put(ConsumerConfig.CLIENT_ID_CONFIG, "ck-cc-java");
    c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    c.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 4096);
    c.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 200);
    c.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10000);
    c.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1000);
    c.put(ConsumerConfig.RETRY_BACKOFF_MS_CONFIG, 100);
    c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    Map<Integer, Long> next = new HashMap<>();
    int count = 0;
    boolean paused = false;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    try (KafkaConsumer<String, String> k = new KafkaConsumer<>(c)) {
      k.subscribe(List.of(topic));
      while (!done.test(next, count)) {
        Check.that(System.nanoTime() < deadline, "member of " + group + ": " + count + " records in 90 s");
        for (ConsumerRecord<String, String> r : k.poll(Duration.ofMillis(200))) {
          OUT.printf("rec %d %d %s%n", r.partition(), r.offset(), r.value());
          next.put(r.partition(), r.offset() + 1);
          count++;
        }
        OUT.flush();
        if (!paused && pauseAt != null && pauseAt.test(count)) {
          paused = true;
          commit(k, topic, next);
          OUT.println("paused");
          OUT.flush();
          waitLine("resume");
        }
      }
      commit(k, topic, next);
    }
    return next;
  }

  private static void consume(String bootstrap, String topic, String group, int first, int half) throws Exception {
    Map<Integer, Long> mine = member(bootstrap, topic, group, (nx, count) -> count >= half, count -> count >= first);
    OUT.println("closed");
    OUT.flush();
    String[] f = waitLine("go");
    Map<Integer, Long> ends = new HashMap<>();
    for (int p = 0; p < f.length; p++) ends.put(p, Long.parseLong(f[p]));
    OUT.println("member2");
    member(bootstrap, topic, group, (nx, count) -> ends.entrySet().stream().allMatch(
        e -> nx.getOrDefault(e.getKey(), mine.getOrDefault(e.getKey(), 0L)) >= e.getValue()), null);
    OUT.println("done");
  }
}
