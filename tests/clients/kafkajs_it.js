// tests/clients/kafkajs_it.js: kafkajs 2.2.4 integration client (tests/integration/test_kafkajs.py).
//
// Usage: node kafkajs_it.js PORT [group]
// 1. admin: createTopics (2 partitions, waitForLeaders), a duplicate create
//    (returns false), fetchTopicMetadata, fetchTopicOffsets.
// 2. producer (acks -1, GZIP) sends 300 keyed messages with headers to
//    explicit partitions.
// 3. reading back WITHOUT a consumer group: kafkajs' Consumer API needs a
//    group (FindCoordinator/JoinGroup/SyncGroup, issue #5), so this uses
//    kafkajs' own cluster and broker objects (internal, not public API) to
//    send kafkajs' Fetch request (its newest version the broker advertises)
//    and decode the answer with kafkajs' decoders (gzip included).
// With `group`, step 3 is instead kafkajs' public Consumer (groupId,
// subscribe fromBeginning, eachMessage) on consumer groups (issue #5):
// ctest integration_kafkajs_group_consumer.
// Exits 0 when every check holds; prints what differed otherwise.
'use strict';
const { Kafka, CompressionTypes, logLevel } = require('kafkajs');

const port = process.argv[2];
const TOPIC = 'kjs-topic';
const N = 300;
const kafka = new Kafka({
  clientId: 'ck-it-kafkajs',
  brokers: ['127.0.0.1:' + port],
  logLevel: logLevel.WARN,
  connectionTimeout: 5000,
  requestTimeout: 15000,
  retry: { retries: 3 },
});

function fail(msg) {
  throw new Error(msg);
}

async function admin() {
  const a = kafka.admin();
  await a.connect();
  const created = await a.createTopics({
    topics: [{ topic: TOPIC, numPartitions: 2, replicationFactor: 1 }],
    waitForLeaders: true,
    timeout: 10000,
  });
  if (created !== true) fail('createTopics returned ' + created);
  const again = await a.createTopics({ topics: [{ topic: TOPIC, numPartitions: 2 }], timeout: 10000 });
  if (again !== false) fail('createTopics of an existing topic returned ' + again + ', want false');
  const md = await a.fetchTopicMetadata({ topics: [TOPIC] });
  const t = md.topics.find((x) => x.name === TOPIC);
  if (!t) fail('fetchTopicMetadata: no ' + TOPIC + ' in ' + JSON.stringify(md));
  const parts = t.partitions.map((p) => p.partitionId).sort();
  if (JSON.stringify(parts) !== '[0,1]') fail('partitions ' + JSON.stringify(t.partitions));
  for (const p of t.partitions) {
    if (p.partitionErrorCode !== 0 || p.leader < 0) fail('partition metadata ' + JSON.stringify(p));
  }
  const topics = await a.listTopics();
  if (!topics.includes(TOPIC)) fail('listTopics ' + JSON.stringify(topics));
  await a.disconnect();
}

async function produce() {
  const p = kafka.producer({ allowAutoTopicCreation: false });
  await p.connect();
  const sent = { 0: [], 1: [] };
  // Several sends, so there are several batches per partition.
  for (let chunk = 0; chunk < 3; chunk++) {
    const messages = [];
    for (let i = chunk * (N / 3); i < (chunk + 1) * (N / 3); i++) {
      const m = {
        key: 'key-' + i,
        value: 'value-' + i + '-' + 'xyz'.repeat(i % 17),
        partition: i % 2,
        headers: { idx: String(i) },
      };
      messages.push(m);
      sent[i % 2].push(m);
    }
    const res = await p.send({ topic: TOPIC, acks: -1, compression: CompressionTypes.GZIP, messages });
    for (const r of res) {
      if (r.errorCode !== 0) fail('produce result ' + JSON.stringify(r));
    }
  }
  await p.disconnect();
  return sent;
}

async function fetchWithoutGroup(sent) {
  const createCluster = Object.getOwnPropertySymbols(kafka)
    .find((s) => s.description === 'private:Kafka:createCluster');
  if (!createCluster) fail('kafkajs internals changed: no createCluster symbol');
  const cluster = kafka[createCluster]({ allowAutoTopicCreation: false });
  await cluster.connect();
  await cluster.addTargetTopic(TOPIC);
  const got = { 0: [], 1: [] };
  const offsets = { 0: '0', 1: '0' };
  const deadline = Date.now() + 30000;
  while ((got[0].length < sent[0].length || got[1].length < sent[1].length) && Date.now() < deadline) {
    const leaders = cluster.findLeaderForPartitions(TOPIC, [0, 1]);
    for (const nodeId of Object.keys(leaders)) {
      const broker = await cluster.findBroker({ nodeId });
      const resp = await broker.fetch({
        replicaId: -1,
        isolationLevel: 1,
        maxWaitTime: 200,
        minBytes: 1,
        maxBytes: 1 << 20,
        topics: [{
          topic: TOPIC,
          partitions: leaders[nodeId].map((p) => ({ partition: p, fetchOffset: offsets[p], maxBytes: 1 << 20 })),
        }],
      });
      for (const t of resp.responses) {
        for (const p of t.partitions) {
          if (p.errorCode !== 0) fail('fetch partition ' + p.partition + ' error ' + p.errorCode);
          for (const m of p.messages) {
            if (BigInt(m.offset) < BigInt(offsets[p.partition])) continue; // whole-batch rule
            got[p.partition].push(m);
            offsets[p.partition] = String(BigInt(m.offset) + 1n);
          }
          if (p.highWatermark !== String(sent[p.partition].length)) {
            fail('partition ' + p.partition + ' high watermark ' + p.highWatermark);
          }
        }
      }
    }
  }
  await cluster.disconnect();
  for (const part of [0, 1]) {
    const want = sent[part];
    const have = got[part];
    if (have.length !== want.length) fail('partition ' + part + ': read ' + have.length + ', want ' + want.length);
    for (let i = 0; i < want.length; i++) {
      const h = have[i];
      const w = want[i];
      const hv = h.value.toString();
      const hk = h.key.toString();
      const hidx = h.headers && h.headers.idx ? h.headers.idx.toString() : undefined;
      if (h.offset !== String(i) || hk !== w.key || hv !== w.value || hidx !== w.headers.idx) {
        fail('partition ' + part + ' #' + i + ': got offset ' + h.offset + ' key ' + hk + ' value ' + hv +
             ' header ' + hidx + '; want key ' + w.key + ' value ' + w.value);
      }
    }
  }
  // fetchTopicOffsets agrees with what was read.
  const a = kafka.admin();
  await a.connect();
  const offs = await a.fetchTopicOffsets(TOPIC);
  await a.disconnect();
  for (const o of offs) {
    if (o.high !== String(sent[o.partition].length) || o.low !== '0') {
      fail('fetchTopicOffsets ' + JSON.stringify(o));
    }
  }
}

async function consumeWithGroup(sent) {
  const consumer = kafka.consumer({ groupId: 'ck-it-kafkajs-group', maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
  const got = { 0: [], 1: [] };
  const total = sent[0].length + sent[1].length;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('group consumer: timed out with ' +
      (got[0].length + got[1].length) + ' of ' + total)), 60000);
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        got[partition].push(message);
        if (got[0].length + got[1].length === total) { clearTimeout(timer); resolve(); }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  for (const part of [0, 1]) {
    for (let i = 0; i < sent[part].length; i++) {
      const h = got[part][i];
      if (!h || h.offset !== String(i) || h.key.toString() !== sent[part][i].key ||
          h.value.toString() !== sent[part][i].value) {
        fail('group consumer partition ' + part + ' #' + i + ': ' + (h && h.offset));
      }
    }
  }
}

async function main() {
  await admin();
  console.log('admin: ok');
  const sent = await produce();
  console.log('producer (GZIP): ok');
  if (process.argv[3] === 'group') {
    await consumeWithGroup(sent);
    console.log('group consumer: ok');
  } else {
    await fetchWithoutGroup(sent);
    console.log('fetch without group: ok');
  }
}

const timer = setTimeout(() => { console.error('kafkajs_it: timed out'); process.exit(2); }, 90000);
main().then(() => { clearTimeout(timer); process.exit(0); })
  .catch((e) => { console.error('FAIL:', e && e.stack ? e.stack : e); process.exit(1); });
