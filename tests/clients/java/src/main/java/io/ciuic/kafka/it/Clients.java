// tests/clients/java/.../Clients.java: the Java client (kafka-clients 3.9.x
// or 4.x, whichever the jar was built with) against one running broker
// (issue #15 part 1). A table of named checks run in order; each asserts
// the values it got back (counts, contents, offsets, configs, assignments),
// and a failed check does not stop the others. Every topic and group name
// starts with the run's tag, so two client versions can share one broker.
// Single-threaded: consumers of one group are polled in turn by this thread.
package io.ciuic.kafka.it;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ThrottlingQuotaExceededException;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

final class Clients {
  private static final Duration WAIT = Duration.ofSeconds(30);

  @FunctionalInterface
  interface Body {
    String run() throws Exception;
  }

  private final String bootstrap;
  private final String tag;
  private final LinkedHashMap<String, Body> checks = new LinkedHashMap<>();
  private Admin admin;

  Clients(String bootstrap, String tag) {
    this.bootstrap = bootstrap;
    this.tag = tag;
    checks.put("describe_cluster", this::describeCluster);
    checks.put("topic_lifecycle", this::topicLifecycle);
    checks.put("produce_lz4", () -> produceAndRead("lz4"));
    checks.put("produce_zstd", () -> produceAndRead("zstd"));
    checks.put("produce_gzip", () -> produceAndRead("gzip"));
    checks.put("produce_snappy", () -> produceAndRead("snappy"));
    checks.put("list_offsets_delete_records", this::listOffsetsDeleteRecords);
    checks.put("describe_log_dirs", this::describeLogDirs);
    checks.put("consumer_seek_times_pause", this::seekTimesPause);
    checks.put("group_range", () -> twoMemberGroup("range"));
    checks.put("group_cooperative_sticky", () -> twoMemberGroup("cooperative-sticky"));
    checks.put("group_static_membership", this::staticMembership);
    checks.put("group_admin_offsets", this::groupAdminOffsets);
    checks.put("transactional_copy", this::transactionalCopy);
    checks.put("transaction_admin_fencing", this::transactionAdminFencing);
    checks.put("headers_and_limits", this::headersAndLimits);
    checks.put("broker_configs_elect_max_timestamp", this::brokerConfigsElectMaxTimestamp);
    checks.put("controller_mutation_quota", this::controllerMutationQuota);
  }

  boolean runAll() {
    Properties v = new Properties();
    try (var in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
      if (in != null) v.load(in);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    String version = v.getProperty("version", "unknown");
    System.out.println("kafka-clients " + version + " against " + bootstrap);
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
    int failed = 0, ran = 0;
    try (Admin a = Admin.create(p)) {
      admin = a;
      String only = System.getProperty("ck.only", "");
      for (Map.Entry<String, Body> c : checks.entrySet()) {
        if (!only.isEmpty() && !List.of(only.split(",")).contains(c.getKey())) continue;
        long t0 = System.nanoTime();
        ran++;
        try {
          String detail = c.getValue().run();
          System.out.printf("ok %s (%d ms): %s%n", c.getKey(), (System.nanoTime() - t0) / 1_000_000, detail);
        } catch (Throwable t) {
          failed++;
          Throwable cause = t instanceof ExecutionException && t.getCause() != null ? t.getCause() : t;
          System.out.printf("FAIL %s: %s%n", c.getKey(), cause);
          cause.printStackTrace(System.out);
        }
        System.out.flush();
      }
    }
    System.out.printf("%d passed, %d failed%n", ran - failed, failed);
    return failed == 0;
  }

  // ---- helpers -------------------------------------------------------------

  private String t(String name) { return tag + "-" + name; }

  private void createTopic(String name, int partitions, Map<String, String> configs) throws Exception {
    admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1).configs(configs))).all().get();
    Check.eventually(WAIT, "leaders of " + name, () -> {
      try {
        TopicDescription d = admin.describeTopics(List.of(name)).allTopicNames().get().get(name);
        return d.partitions().size() == partitions && d.partitions().stream().allMatch(i -> i.leader() != null);
      } catch (Exception e) {
        return false;
      }
    });
  }

  private KafkaProducer<String, String> producer(Map<String, Object> extra) {
    Map<String, Object> c = new HashMap<>();
    c.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    c.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    c.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    c.putAll(extra);
    return new KafkaProducer<>(c);
  }

  private KafkaConsumer<String, String> consumer(Map<String, Object> extra) {
    Map<String, Object> c = new HashMap<>();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    c.putAll(extra);
    return new KafkaConsumer<>(c);
  }

  /** Produces n records "k<i>"/"v<i>" round-robin over the partitions and returns their metadata. */
  private List<RecordMetadata> produce(String topic, int partitions, int n, Map<String, Object> extra) throws Exception {
    List<Future<RecordMetadata>> fs = new ArrayList<>();
    try (KafkaProducer<String, String> p = producer(extra)) {
      for (int i = 0; i < n; i++) fs.add(p.send(new ProducerRecord<>(topic, i % partitions, "k" + i, "v" + i)));
      p.flush();
    }
    List<RecordMetadata> out = new ArrayList<>();
    for (Future<RecordMetadata> f : fs) out.add(f.get());
    return out;
  }

  /** Reads every record of topic with assign() from the beginning until want records arrived. */
  private List<ConsumerRecord<String, String>> readAll(String topic, int partitions, int want, Map<String, Object> extra) {
    List<ConsumerRecord<String, String>> got = new ArrayList<>();
    try (KafkaConsumer<String, String> c = consumer(extra)) {
      List<TopicPartition> tps = new ArrayList<>();
      for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
      c.assign(tps);
      c.seekToBeginning(tps);
      long end = System.nanoTime() + WAIT.toNanos();
      while (got.size() < want && System.nanoTime() < end) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) got.add(r);
      }
      // One more short poll: nothing beyond want may arrive.
      for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) got.add(r);
    }
    return got;
  }

  private Map<TopicPartition, Long> endOffsets(String topic, int partitions) throws Exception {
    Map<TopicPartition, OffsetSpec> q = new HashMap<>();
    for (int i = 0; i < partitions; i++) q.put(new TopicPartition(topic, i), OffsetSpec.latest());
    Map<TopicPartition, Long> out = new HashMap<>();
    admin.listOffsets(q).all().get().forEach((tp, info) -> out.put(tp, info.offset()));
    return out;
  }

  private Config topicConfig(String topic) throws Exception {
    ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
    return admin.describeConfigs(List.of(r)).all().get().get(r);
  }

  // ---- checks --------------------------------------------------------------

  private String describeCluster() throws Exception {
    DescribeClusterResult r = admin.describeCluster();
    Collection<Node> nodes = r.nodes().get();
    Node controller = r.controller().get();
    String clusterId = r.clusterId().get();
    Check.eq(1, nodes.size(), "node count");
    Node n = nodes.iterator().next();
    Check.eq("127.0.0.1", n.host(), "node host");
    Check.eq(bootstrap, n.host() + ":" + n.port(), "node address");
    Check.that(controller != null && controller.id() == n.id(), "controller " + controller + " is the node " + n);
    Check.that(clusterId != null && !clusterId.isEmpty(), "cluster id present");
    return "node " + n.id() + " at " + n.host() + ":" + n.port() + ", cluster " + clusterId;
  }

  // controller_mutation_rate (KIP-599) as the admin client meets it: a
  // quota of 2 partitions per second on a second admin client's id fills a
  // bucket of 22 (Kafka's default 11 windows of 1 s); a topic of 30
  // partitions passes (the bucket was not below zero), the next one is
  // refused with ThrottlingQuotaExceededException and the time to wait when
  // the client is told not to retry, and created when it retries (the
  // default: it waits out the throttle and sends again).
  private String controllerMutationQuota() throws Exception {
    String cid = t("mutations");
    ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, cid));
    admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity,
        List.of(new ClientQuotaAlteration.Op("controller_mutation_rate", 2.0))))).all().get();
    Map<ClientQuotaEntity, Map<String, Double>> shown = admin.describeClientQuotas(ClientQuotaFilter.containsOnly(
        List.of(ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.CLIENT_ID, cid)))).entities().get();
    Check.eq(Map.of("controller_mutation_rate", 2.0), shown.get(entity), "the quota described");
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(AdminClientConfig.CLIENT_ID_CONFIG, cid);
    p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
    String a = t("mq-a"), b = t("mq-b"), c = t("mq-c");
    int throttle;
    try (Admin q = Admin.create(p)) {
      q.createTopics(List.of(new NewTopic(a, 30, (short) 1))).all().get();
      try {
        q.createTopics(List.of(new NewTopic(b, 1, (short) 1)), new CreateTopicsOptions().retryOnQuotaViolation(false))
            .all().get();
        throw new Check.Failure(b + " created over the quota");
      } catch (ExecutionException e) {
        Check.that(e.getCause() instanceof ThrottlingQuotaExceededException,
            "refused with ThrottlingQuotaExceededException: " + e.getCause());
        throttle = ((ThrottlingQuotaExceededException) e.getCause()).throttleTimeMs();
        // The bucket is 8 below zero at 2 per second: at most 4 s.
        Check.that(throttle > 0 && throttle <= 4000, "throttle time in (0, 4000] ms: " + throttle);
      }
      q.createTopics(List.of(new NewTopic(c, 1, (short) 1))).all().get();
      Set<String> names = admin.listTopics().names().get();
      Check.that(names.contains(a) && names.contains(c) && !names.contains(b), "topics after: " + names);
    }
    admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity,
        List.of(new ClientQuotaAlteration.Op("controller_mutation_rate", null))))).all().get();
    admin.deleteTopics(List.of(a, c)).all().get();
    return "30 partitions passed, the next topic refused (throttle " + throttle + " ms), then created on retry";
  }

  private String topicLifecycle() throws Exception {
    String name = t("admin");
    createTopic(name, 3, Map.of("retention.ms", "123456"));
    Check.that(admin.listTopics().names().get().contains(name), "listTopics has " + name);
    TopicDescription d = admin.describeTopics(List.of(name)).allTopicNames().get().get(name);
    Check.eq(3, d.partitions().size(), "partitions after create");
    Check.that(d.topicId() != null && !d.topicId().toString().isEmpty(), "topic id present");
    for (var p : d.partitions()) {
      Check.eq(1, p.replicas().size(), "replicas of partition " + p.partition());
      Check.eq(1, p.isr().size(), "isr of partition " + p.partition());
    }
    ConfigEntry ret = topicConfig(name).get("retention.ms");
    Check.eq("123456", ret.value(), "retention.ms after create");
    Check.eq(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, ret.source(), "retention.ms source");
    ConfigEntry seg = topicConfig(name).get("segment.bytes");
    Check.that(seg != null && seg.source() != ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG,
        "segment.bytes is a default: " + seg);

    ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, name);
    admin.incrementalAlterConfigs(Map.of(r, List.of(
        new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.SET),
        new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE)))).all().get();
    Config after = topicConfig(name);
    Check.eq("compact", after.get("cleanup.policy").value(), "cleanup.policy after alter");
    Check.that(after.get("retention.ms").source() != ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG,
        "retention.ms back to its default: " + after.get("retention.ms"));
    // A bad value is refused and changes nothing.
    try {
      admin.incrementalAlterConfigs(Map.of(r, List.of(new AlterConfigOp(
          new ConfigEntry("retention.ms", "not-a-number"), AlterConfigOp.OpType.SET)))).all().get();
      throw new Check.Failure("retention.ms=not-a-number accepted");
    } catch (ExecutionException e) {
      Check.that(e.getCause() instanceof org.apache.kafka.common.errors.InvalidConfigurationException
          || e.getCause() instanceof org.apache.kafka.common.errors.InvalidRequestException,
          "bad value refused with InvalidConfiguration: " + e.getCause());
    }

    admin.createPartitions(Map.of(name, NewPartitions.increaseTo(5))).all().get();
    Check.eventually(WAIT, name + " with 5 partitions", () -> {
      try {
        return admin.describeTopics(List.of(name)).allTopicNames().get().get(name).partitions().size() == 5;
      } catch (Exception e) {
        return false;
      }
    });
    admin.deleteTopics(List.of(name)).all().get();
    Check.eventually(WAIT, name + " gone from listTopics", () -> {
      try {
        return !admin.listTopics().names().get().contains(name);
      } catch (Exception e) {
        return false;
      }
    });
    return "created 3 partitions with retention.ms, altered cleanup.policy, 3->5 partitions, deleted";
  }

  private String produceAndRead(String codec) throws Exception {
    String topic = t("produce-" + codec);
    int parts = 3, n = 3000;
    createTopic(topic, parts, Map.of());
    List<RecordMetadata> md = produce(topic, parts, n, Map.of(
        ProducerConfig.ACKS_CONFIG, "all", ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
        ProducerConfig.COMPRESSION_TYPE_CONFIG, codec, ProducerConfig.LINGER_MS_CONFIG, 5));
    // Per partition the acknowledged offsets are exactly 0..n/parts-1 in send order.
    long[] next = new long[parts];
    for (int i = 0; i < n; i++) {
      RecordMetadata m = md.get(i);
      Check.eq(i % parts, m.partition(), "partition of record " + i);
      Check.eq(next[m.partition()]++, m.offset(), "offset of record " + i);
    }
    Map<TopicPartition, Long> ends = endOffsets(topic, parts);
    for (int i = 0; i < parts; i++) Check.eq((long) n / parts, ends.get(new TopicPartition(topic, i)), "end offset " + i);
    List<ConsumerRecord<String, String>> got = readAll(topic, parts, n, Map.of());
    Check.eq(n, got.size(), "records read back");
    Set<Integer> seen = new HashSet<>();
    for (ConsumerRecord<String, String> r : got) {
      int i = Integer.parseInt(r.key().substring(1));
      Check.eq("v" + i, r.value(), "value of " + r.key());
      Check.eq(i % parts, r.partition(), "partition of " + r.key());
      Check.eq((long) (i / parts), r.offset(), "offset of " + r.key());
      Check.that(seen.add(i), "record " + i + " read twice");
    }
    return n + " idempotent acks=all " + codec + " records, offsets 0.." + (n / parts - 1) + " per partition, read back";
  }

  private String listOffsetsDeleteRecords() throws Exception {
    String topic = t("offsets");
    createTopic(topic, 2, Map.of());
    produce(topic, 2, 200, Map.of());
    TopicPartition p0 = new TopicPartition(topic, 0), p1 = new TopicPartition(topic, 1);
    var early = admin.listOffsets(Map.of(p0, OffsetSpec.earliest(), p1, OffsetSpec.earliest())).all().get();
    Check.eq(0L, early.get(p0).offset(), "earliest p0");
    var late = admin.listOffsets(Map.of(p0, OffsetSpec.latest(), p1, OffsetSpec.latest())).all().get();
    Check.eq(100L, late.get(p0).offset(), "latest p0");
    Check.eq(100L, late.get(p1).offset(), "latest p1");
    var del = admin.deleteRecords(Map.of(p0, RecordsToDelete.beforeOffset(40))).lowWatermarks();
    Check.eq(40L, del.get(p0).get().lowWatermark(), "low watermark after deleteRecords");
    var early2 = admin.listOffsets(Map.of(p0, OffsetSpec.earliest(), p1, OffsetSpec.earliest())).all().get();
    Check.eq(40L, early2.get(p0).offset(), "earliest p0 after deleteRecords");
    Check.eq(0L, early2.get(p1).offset(), "earliest p1 untouched");
    List<ConsumerRecord<String, String>> got = readAll(topic, 1, 60, Map.of());
    Check.eq(60, got.size(), "records left in p0");
    Check.eq(40L, got.get(0).offset(), "first offset left in p0");
    return "earliest 0 / latest 100, deleteRecords(40) -> low watermark 40, 60 records left";
  }

  private String describeLogDirs() throws Exception {
    String topic = t("offsets");  // made and filled by list_offsets_delete_records
    int node = admin.describeCluster().nodes().get().iterator().next().id();
    Map<String, LogDirDescription> dirs = admin.describeLogDirs(List.of(node)).allDescriptions().get().get(node);
    Check.eq(1, dirs.size(), "log dirs of node " + node);
    Map.Entry<String, LogDirDescription> dir = dirs.entrySet().iterator().next();
    Check.that(dir.getValue().error() == null, "log dir error: " + dir.getValue().error());
    Map<TopicPartition, ReplicaInfo> reps = dir.getValue().replicaInfos();
    ReplicaInfo p1 = reps.get(new TopicPartition(topic, 1));
    Check.that(p1 != null, topic + "-1 listed in " + dir.getKey());
    Check.that(p1.size() > 100 * 4, topic + "-1 size " + p1.size() + " bytes covers 100 records");
    Check.that(!p1.isFuture(), "not a future replica");
    return dir.getKey() + ": " + reps.size() + " partitions, " + topic + "-1 " + p1.size() + " bytes";
  }

  private String seekTimesPause() throws Exception {
    String topic = t("seek");
    createTopic(topic, 2, Map.of());
    long base = System.currentTimeMillis() - 100_000;
    try (KafkaProducer<String, String> p = producer(Map.of())) {
      for (int i = 0; i < 100; i++) {
        p.send(new ProducerRecord<>(topic, 0, base + i * 1000L, "k" + i, "v" + i));
        p.send(new ProducerRecord<>(topic, 1, base + i * 1000L, "k" + i, "w" + i));
      }
      p.flush();
    }
    TopicPartition p0 = new TopicPartition(topic, 0), p1 = new TopicPartition(topic, 1);
    try (KafkaConsumer<String, String> c = consumer(Map.of(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 10))) {
      c.assign(List.of(p0, p1));
      Map<TopicPartition, OffsetAndTimestamp> ts = c.offsetsForTimes(Map.of(p0, base + 5500, p1, base + 1_000_000));
      Check.eq(6L, ts.get(p0).offset(), "offsetsForTimes(base+5.5s) offset");
      Check.eq(base + 6000, ts.get(p0).timestamp(), "offsetsForTimes(base+5.5s) timestamp");
      Check.that(ts.get(p1) == null, "offsetsForTimes after the last record is null: " + ts.get(p1));
      Check.eq(Map.of(p0, 0L, p1, 0L), c.beginningOffsets(List.of(p0, p1)), "beginningOffsets");
      Check.eq(Map.of(p0, 100L, p1, 100L), c.endOffsets(List.of(p0, p1)), "endOffsets");

      c.seek(p0, 50);
      c.seek(p1, 90);
      c.pause(List.of(p1));
      Check.eq(Set.of(p1), c.paused(), "paused set");
      List<ConsumerRecord<String, String>> got = new ArrayList<>();
      long end = System.nanoTime() + WAIT.toNanos();
      while (got.size() < 50 && System.nanoTime() < end) c.poll(Duration.ofMillis(200)).forEach(got::add);
      c.poll(Duration.ofMillis(300)).forEach(got::add);
      Check.eq(50, got.size(), "records from p0 while p1 paused");
      for (int i = 0; i < 50; i++) {
        Check.eq(p0.partition(), got.get(i).partition(), "partition while p1 paused");
        Check.eq(50L + i, got.get(i).offset(), "offset after seek(50)");
        Check.eq("v" + (50 + i), got.get(i).value(), "value after seek(50)");
      }
      Check.eq(90L, c.position(p1), "paused partition's position");
      c.resume(List.of(p1));
      got.clear();
      end = System.nanoTime() + WAIT.toNanos();
      while (got.size() < 10 && System.nanoTime() < end) c.poll(Duration.ofMillis(200)).forEach(got::add);
      Check.eq(10, got.size(), "records from p1 after resume");
      Check.eq(90L, got.get(0).offset(), "first offset after resume");
      Check.eq("w99", got.get(9).value(), "last value after resume");
    }
    return "offsetsForTimes -> 6, seek(50) + pause/resume read exactly p0 50..99 then p1 90..99";
  }

  /** Polls every consumer in turn until cond holds. */
  private static void pollUntil(List<KafkaConsumer<String, String>> cs, Map<Integer, List<ConsumerRecord<String, String>>> sink,
      String what, java.util.function.BooleanSupplier cond) {
    long end = System.nanoTime() + WAIT.toNanos();
    while (!cond.getAsBoolean()) {
      if (System.nanoTime() > end) throw new Check.Failure("timed out waiting for " + what);
      for (int i = 0; i < cs.size(); i++) {
        for (ConsumerRecord<String, String> r : cs.get(i).poll(Duration.ofMillis(100))) {
          sink.computeIfAbsent(i, k -> new ArrayList<>()).add(r);
        }
      }
    }
  }

  private static int total(Map<Integer, List<ConsumerRecord<String, String>>> sink) {
    return sink.values().stream().mapToInt(List::size).sum();
  }

  private String twoMemberGroup(String assignor) throws Exception {
    String topic = t("grp-" + assignor), group = t("g-" + assignor);
    int parts = 4, n = 400;
    createTopic(topic, parts, Map.of());
    produce(topic, parts, n, Map.of());
    String cls = assignor.equals("range") ? "org.apache.kafka.clients.consumer.RangeAssignor"
        : "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
    Map<String, Object> cfg = Map.of(ConsumerConfig.GROUP_ID_CONFIG, group,
        ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, cls,
        ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 20,
        ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10000, ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
    AtomicReference<Collection<TopicPartition>> firstRevoked = new AtomicReference<>();
    AtomicInteger revokeCalls = new AtomicInteger();
    Map<Integer, List<ConsumerRecord<String, String>>> sink = new HashMap<>();
    try (KafkaConsumer<String, String> a = consumer(cfg); KafkaConsumer<String, String> b = consumer(cfg)) {
      a.subscribe(List.of(topic), new ConsumerRebalanceListener() {
        @Override public void onPartitionsRevoked(Collection<TopicPartition> ps) {
          if (!ps.isEmpty()) {
            revokeCalls.incrementAndGet();
            firstRevoked.compareAndSet(null, new ArrayList<>(ps));
          }
        }
        @Override public void onPartitionsAssigned(Collection<TopicPartition> ps) {}
      });
      // a alone first: it owns all four, then b joins and takes two.
      pollUntil(List.of(a), sink, "first member owns 4 partitions", () -> a.assignment().size() == parts);
      b.subscribe(List.of(topic));
      List<KafkaConsumer<String, String>> both = List.of(a, b);
      pollUntil(both, sink, "both members own 2 partitions",
          () -> a.assignment().size() == 2 && b.assignment().size() == 2);
      Set<TopicPartition> union = new HashSet<>(a.assignment());
      union.addAll(b.assignment());
      Check.eq(parts, union.size(), "assignments cover every partition once");
      if (assignor.equals("range")) {
        Check.eq(Set.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)).equals(a.assignment())
            || Set.of(new TopicPartition(topic, 2), new TopicPartition(topic, 3)).equals(a.assignment()), true,
            "range gives a contiguous pair, got " + a.assignment());
        Check.eq(parts, firstRevoked.get().size(), "eager rebalance revokes every partition");
      } else {
        // Cooperative: a gives up only what moves to b.
        Check.eq(2, firstRevoked.get().size(), "cooperative rebalance revokes only the 2 moving partitions");
        Check.eq(new HashSet<>(firstRevoked.get()), b.assignment(), "revoked partitions are b's");
      }
      pollUntil(both, sink, n + " records", () -> {
        // Records from before b joined may be read again by b (no commit yet); count distinct.
        Set<String> keys = new HashSet<>();
        sink.values().forEach(l -> l.forEach(r -> keys.add(r.key())));
        return keys.size() == n;
      });
      a.commitSync();
      AtomicReference<Exception> asyncErr = new AtomicReference<>();
      AtomicReference<Map<TopicPartition, OffsetAndMetadata>> asyncDone = new AtomicReference<>();
      b.commitAsync((offsets, e) -> {
        asyncErr.set(e);
        asyncDone.set(offsets);
      });
      long end = System.nanoTime() + WAIT.toNanos();
      while (asyncDone.get() == null && System.nanoTime() < end) b.poll(Duration.ofMillis(100));
      Check.that(asyncDone.get() != null, "commitAsync callback ran");
      Check.that(asyncErr.get() == null, "commitAsync error: " + asyncErr.get());
      Check.eq(b.assignment(), asyncDone.get().keySet(), "commitAsync covered b's partitions");

      ConsumerGroupDescription g = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
      Check.eq("Stable", g.state().toString(), "group state");
      Check.eq(2, g.members().size(), "members");
      Check.eq(assignor, g.partitionAssignor(), "group's assignor");
      int assigned = 0;
      for (MemberDescription m : g.members()) assigned += m.assignment().topicPartitions().size();
      Check.eq(parts, assigned, "partitions in members' assignments");
      Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
          .partitionsToOffsetAndMetadata().get();
      Map<TopicPartition, Long> ends = endOffsets(topic, parts);
      Check.eq(parts, committed.size(), "committed partitions");
      for (var e : committed.entrySet()) Check.eq(ends.get(e.getKey()), e.getValue().offset(), "committed " + e.getKey());
      Check.eq(committed.get(a.assignment().iterator().next()),
          a.committed(Set.of(a.assignment().iterator().next())).get(a.assignment().iterator().next()),
          "consumer.committed() = admin's offsets");
    }
    return "2 members over " + parts + " partitions, " + n + " records, committed = end offsets, revoked "
        + firstRevoked.get().size() + " on join";
  }

  private String staticMembership() throws Exception {
    String topic = t("static"), group = t("g-static");
    createTopic(topic, 2, Map.of());
    produce(topic, 2, 20, Map.of());
    Map<String, Object> cfg = Map.of(ConsumerConfig.GROUP_ID_CONFIG, group,
        ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, tag + "-instance-1",
        ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 20000, ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
    int gen1;
    Set<TopicPartition> first;
    Map<Integer, List<ConsumerRecord<String, String>>> sink = new HashMap<>();
    try (KafkaConsumer<String, String> c = consumer(cfg)) {
      c.subscribe(List.of(topic));
      pollUntil(List.of(c), sink, "20 records", () -> total(sink) == 20);
      c.commitSync();
      gen1 = c.groupMetadata().generationId();
      first = new HashSet<>(c.assignment());
      ConsumerGroupDescription g = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
      Check.eq(1, g.members().size(), "members");
      Check.eq(java.util.Optional.of(tag + "-instance-1"), g.members().iterator().next().groupInstanceId(),
          "member's group.instance.id");
    }
    // A static member's close sends no LeaveGroup: the group keeps it, and the
    // same instance id rejoins within the session timeout in the same generation.
    ConsumerGroupDescription kept = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
    Check.eq(1, kept.members().size(), "static member kept after close");
    produce(topic, 2, 10, Map.of());
    sink.clear();
    try (KafkaConsumer<String, String> c = consumer(cfg)) {
      c.subscribe(List.of(topic));
      pollUntil(List.of(c), sink, "10 new records", () -> total(sink) == 10);
      Check.eq(gen1, c.groupMetadata().generationId(), "generation after the static rejoin");
      Check.eq(first, c.assignment(), "assignment after the static rejoin");
      for (ConsumerRecord<String, String> r : sink.get(0)) Check.that(r.offset() >= 10, "resumed at the commit: " + r);
    }
    return "instance id kept across close, rejoined in generation " + gen1 + " with the same partitions";
  }

  private String groupAdminOffsets() throws Exception {
    String topic = t("grp-range"), group = t("g-range");  // left by group_range, now empty
    Check.eventually(WAIT, group + " listed", () -> {
      try {
        return admin.listConsumerGroups().all().get().stream().anyMatch(l -> l.groupId().equals(group));
      } catch (Exception e) {
        return false;
      }
    });
    ConsumerGroupDescription g = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
    Check.eq("Empty", g.state().toString(), "state after both members closed");
    Map<TopicPartition, OffsetAndMetadata> to = new HashMap<>();
    for (int i = 0; i < 4; i++) to.put(new TopicPartition(topic, i), new OffsetAndMetadata(7 + i, "reset by test"));
    admin.alterConsumerGroupOffsets(group, to).all().get();
    Map<TopicPartition, OffsetAndMetadata> got = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
    for (int i = 0; i < 4; i++) {
      OffsetAndMetadata o = got.get(new TopicPartition(topic, i));
      Check.eq(7L + i, o.offset(), "altered offset " + i);
      Check.eq("reset by test", o.metadata(), "altered metadata " + i);
    }
    // A consumer of the group starts at the altered offsets.
    try (KafkaConsumer<String, String> c = consumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, group))) {
      TopicPartition p2 = new TopicPartition(topic, 2);
      c.assign(List.of(p2));
      List<ConsumerRecord<String, String>> rs = new ArrayList<>();
      long end = System.nanoTime() + WAIT.toNanos();
      while (rs.isEmpty() && System.nanoTime() < end) c.poll(Duration.ofMillis(200)).forEach(rs::add);
      Check.that(!rs.isEmpty(), "records after alter");
      Check.eq(9L, rs.get(0).offset(), "first offset read after alter");
    }
    // OffsetDelete: one partition's commit goes, the others stay.
    TopicPartition p3 = new TopicPartition(topic, 3);
    admin.deleteConsumerGroupOffsets(group, Set.of(p3)).all().get();
    Map<TopicPartition, OffsetAndMetadata> left = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
    Check.eq(3, left.size(), "offsets left after deleteConsumerGroupOffsets");
    Check.that(!left.containsKey(p3), "partition 3's offset deleted: " + left);
    admin.deleteConsumerGroups(List.of(group)).all().get();
    Check.that(admin.listConsumerGroups().all().get().stream().noneMatch(l -> l.groupId().equals(group)),
        group + " gone after deleteConsumerGroups");
    Check.eq(Collections.emptyMap(), admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(),
        "offsets after delete");
    return "listed, Empty, offsets altered to 7..10 (+metadata) and used, one partition's deleted, group deleted";
  }

  private String transactionalCopy() throws Exception {
    String in = t("txn-in"), out = t("txn-out"), group = t("g-txn");
    createTopic(in, 2, Map.of());
    createTopic(out, 2, Map.of());
    produce(in, 2, 100, Map.of());
    int copied = 0, batches = 0, aborted = 0;
    try (KafkaProducer<String, String> p = producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, tag + "-copier",
             ProducerConfig.COMPRESSION_TYPE_CONFIG, "zstd"));
         KafkaConsumer<String, String> c = consumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, group,
             ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed", ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 30))) {
      p.initTransactions();
      c.subscribe(List.of(in));
      long end = System.nanoTime() + WAIT.toNanos();
      while (copied < 100 && System.nanoTime() < end) {
        ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
        if (rs.isEmpty()) continue;
        // The second batch is aborted once: its copies must never be seen, and
        // the consumer rewinds to its last committed offsets to copy it again.
        boolean abort = batches++ == 1;
        p.beginTransaction();
        Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
        for (ConsumerRecord<String, String> r : rs) {
          p.send(new ProducerRecord<>(out, r.partition(), r.key(), (abort ? "aborted-" : "copy-") + r.value()));
          next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
        }
        p.sendOffsetsToTransaction(next, c.groupMetadata());
        if (abort) {
          p.flush();  // written before the abort (unsent records would just be dropped)
          p.abortTransaction();
          aborted += rs.count();
          Map<TopicPartition, OffsetAndMetadata> committed = c.committed(c.assignment());
          for (TopicPartition tp : c.assignment()) {
            OffsetAndMetadata o = committed.get(tp);
            c.seek(tp, o == null ? 0 : o.offset());
          }
        } else {
          p.commitTransaction();
          copied += rs.count();
        }
      }
    }
    Check.eq(100, copied, "records copied in committed transactions");
    Check.that(aborted > 0, "one transaction was aborted");
    Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
        .partitionsToOffsetAndMetadata().get();
    Check.eq(50L, committed.get(new TopicPartition(in, 0)).offset(), "group offset of " + in + "-0");
    Check.eq(50L, committed.get(new TopicPartition(in, 1)).offset(), "group offset of " + in + "-1");
    List<ConsumerRecord<String, String>> rc = readAll(out, 2, 100,
        Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"));
    Check.eq(100, rc.size(), "read_committed records in " + out);
    Set<String> values = new HashSet<>();
    for (ConsumerRecord<String, String> r : rc) {
      Check.that(r.value().startsWith("copy-v"), "committed value " + r.value());
      values.add(r.value());
    }
    Check.eq(100, values.size(), "distinct copies");
    List<ConsumerRecord<String, String>> ru = readAll(out, 2, 100 + aborted,
        Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted"));
    Check.eq(100 + aborted, ru.size(), "read_uncommitted sees the aborted records too");
    return "100 records copied exactly once in " + (batches - 1) + " committed transactions, " + aborted
        + " aborted copies hidden from read_committed, group offsets 50/50";
  }

  private String transactionAdminFencing() throws Exception {
    String topic = t("fence"), id = tag + "-fenced";
    createTopic(topic, 1, Map.of());
    TopicPartition tp = new TopicPartition(topic, 0);
    Map<String, Object> cfg = Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
    try (KafkaProducer<String, String> first = producer(cfg)) {
      first.initTransactions();
      first.beginTransaction();
      first.send(new ProducerRecord<>(topic, 0, "a", "first-1")).get();
      var d = admin.describeTransactions(List.of(id)).all().get().get(id);
      Check.eq("ONGOING", d.state().name(), "describeTransactions state while open");
      Check.eq(Set.of(tp), d.topicPartitions(), "describeTransactions partitions");
      long pid = d.producerId();
      Check.that(admin.listTransactions().all().get().stream()
          .anyMatch(l -> l.transactionalId().equals(id) && l.producerId() == pid), "listTransactions has " + id);
      var ps = admin.describeProducers(List.of(tp)).all().get().get(tp).activeProducers();
      Check.eq(1, ps.size(), "describeProducers: producers of " + tp);
      Check.eq(pid, ps.get(0).producerId(), "describeProducers producer id");
      Check.eq(java.util.OptionalLong.of(0), ps.get(0).currentTransactionStartOffset(), "open transaction's first offset");
      // A second producer with the same id fences the first and aborts its transaction.
      try (KafkaProducer<String, String> second = producer(cfg)) {
        second.initTransactions();
        try {
          first.send(new ProducerRecord<>(topic, 0, "a", "first-2")).get();
          first.commitTransaction();
          throw new Check.Failure("the fenced producer committed");
        } catch (ExecutionException | org.apache.kafka.common.KafkaException e) {
          Throwable c = e instanceof ExecutionException ? e.getCause() : e;
          Check.that(c instanceof org.apache.kafka.common.errors.ProducerFencedException
              || c instanceof org.apache.kafka.common.errors.InvalidProducerEpochException
              || c.getCause() instanceof org.apache.kafka.common.errors.ProducerFencedException,
              "the first producer is fenced: " + c);
        }
        second.beginTransaction();
        second.send(new ProducerRecord<>(topic, 0, "b", "second"));
        second.commitTransaction();
        // EndTxn answers once PrepareCommit is written; the markers follow (as in Kafka).
        Check.eventually(WAIT, id + " in CompleteCommit", () -> {
          try {
            return admin.describeTransactions(List.of(id)).all().get().get(id).state().name().equals("COMPLETE_COMMIT");
          } catch (Exception e) {
            return false;
          }
        });
        var after = admin.describeTransactions(List.of(id)).all().get().get(id);
        Check.eq(pid, after.producerId(), "same producer id, new epoch");
        Check.that(after.producerEpoch() > d.producerEpoch(), "epoch bumped: " + d.producerEpoch() + " -> " + after.producerEpoch());
      }
    }
    List<ConsumerRecord<String, String>> rc = readAll(topic, 1, 1, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"));
    Check.eq(1, rc.size(), "read_committed records after fencing");
    Check.eq("second", rc.get(0).value(), "only the second producer's record is committed");
    return "describe/listTransactions and describeProducers of an open transaction; fenced by a new producer, its record aborted";
  }

  private String headersAndLimits() throws Exception {
    String topic = t("headers");
    createTopic(topic, 1, Map.of("max.message.bytes", "10000"));
    try (KafkaProducer<String, String> p = producer(Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, "zstd"))) {
      ProducerRecord<String, String> r = new ProducerRecord<>(topic, 0, "h", "with headers");
      r.headers().add("trace", "abc".getBytes(StandardCharsets.UTF_8)).add("empty", new byte[0]).add("null", null);
      RecordMetadata m = p.send(r).get();
      Check.eq(0L, m.offset(), "offset of the record with headers");
      // Over the topic's max.message.bytes (incompressible, so zstd cannot shrink it).
      byte[] noise = new byte[20000];
      new java.util.Random(7).nextBytes(noise);
      try {
        p.send(new ProducerRecord<>(topic, 0, "big", java.util.Base64.getEncoder().encodeToString(noise))).get();
        throw new Check.Failure("a record over max.message.bytes was accepted");
      } catch (ExecutionException e) {
        Check.that(e.getCause() instanceof org.apache.kafka.common.errors.RecordTooLargeException,
            "over max.message.bytes: RecordTooLargeException, got " + e.getCause());
      }
      Check.eq(1L, p.send(new ProducerRecord<>(topic, 0, "after", "small")).get().offset(), "offset after the refusal");
    }
    List<ConsumerRecord<String, String>> got = readAll(topic, 1, 2, Map.of());
    Check.eq(2, got.size(), "records read");
    var hs = got.get(0).headers().toArray();
    Check.eq(3, hs.length, "header count");
    Check.eq("trace", hs[0].key(), "header 0 key");
    Check.eq("abc", new String(hs[0].value(), StandardCharsets.UTF_8), "header 0 value");
    Check.eq(0, hs[1].value().length, "empty header value");
    Check.that(hs[2].value() == null, "null header value stays null");
    Check.eq("small", got.get(1).value(), "record after the refusal");
    return "3 headers (value, empty, null) round-trip through zstd; 27 KB record refused with RecordTooLargeException";
  }

  private String brokerConfigsElectMaxTimestamp() throws Exception {
    int node = admin.describeCluster().nodes().get().iterator().next().id();
    ConfigResource br = new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(node));
    Config bc = admin.describeConfigs(List.of(br)).all().get().get(br);
    Check.that(bc.get("log.dirs") != null && !bc.get("log.dirs").value().isEmpty(), "broker log.dirs: " + bc.get("log.dirs"));
    ConfigEntry np = bc.get("num.partitions");
    Check.that(np != null && np.value().equals("1"), "broker num.partitions (default 1): " + np);
    String topic = t("seek");  // made by consumer_seek_times_pause: timestamps base + i s
    TopicPartition p0 = new TopicPartition(topic, 0);
    var max = admin.listOffsets(Map.of(p0, OffsetSpec.maxTimestamp())).all().get().get(p0);
    Check.eq(99L, max.offset(), "OffsetSpec.maxTimestamp offset");
    var first = admin.listOffsets(Map.of(p0, OffsetSpec.forTimestamp(0))).all().get().get(p0);
    Check.eq(0L, first.offset(), "forTimestamp(0) offset");
    Check.eq(max.timestamp() - 99_000, first.timestamp(), "first and max timestamps 99 s apart");
    var el = admin.electLeaders(org.apache.kafka.common.ElectionType.PREFERRED, Set.of(p0)).partitions().get();
    Check.that(el.get(p0).isPresent() && el.get(p0).get() instanceof org.apache.kafka.common.errors.ElectionNotNeededException,
        "preferred election on a single node is not needed: " + el);
    return "broker configs described, maxTimestamp -> offset 99, preferred election not needed";
  }
}
