// tests/clients/kafkajs_txn.js: kafkajs 2.2.4's transactional producer
// against the real broker (tests/integration/test_kafkajs.py txn; issue #13).
//
// Usage: node kafkajs_txn.js PORT
// kafkajs sends InitProducerId v0-1, AddPartitionsToTxn v0-1, EndTxn v0-1,
// AddOffsetsToTxn and TxnOffsetCommit v0-1 (no KIP-447 fencing), so it sees
// the pre-v2 error codes (INVALID_PRODUCER_EPOCH for a fenced producer).
// 1. a transaction of 40 messages over 2 partitions, committed; one of 20,
//    aborted (sent before the abort);
// 2. sendOffsets in a committed transaction: the group's offset is what
//    was sent, read with admin.fetchOffsets; an aborted sendOffsets leaves
//    it unchanged;
// 3. kafkajs' Consumer (read_committed, its default) reads exactly the
//    committed messages, in order per partition;
// 4. a second producer with the same transactionalId fences the first: the
//    first one's commit is refused.
// Exits 0 when every check holds; prints what differed otherwise.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const port = process.argv[2];
const TOPIC = 'kjs-txn';
const kafka = new Kafka({
  clientId: 'ck-it-kafkajs-txn',
  brokers: ['127.0.0.1:' + port],
  logLevel: logLevel.NOTHING,
  connectionTimeout: 5000,
  requestTimeout: 15000,
  retry: { retries: 8, initialRetryTime: 100 },
});

function fail(msg) {
  throw new Error(msg);
}

function txnProducer(id) {
  return kafka.producer({ transactionalId: id, idempotent: true, maxInFlightRequests: 1 });
}

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 2, replicationFactor: 1 }], waitForLeaders: true });

  const p = txnProducer('kjs-tx');
  await p.connect();
  const committed = { 0: [], 1: [] };
  let t = await p.transaction();
  const msgs = [];
  for (let i = 0; i < 40; i++) {
    msgs.push({ partition: i % 2, value: 'c' + i });
    committed[i % 2].push('c' + i);
  }
  await t.send({ topic: TOPIC, messages: msgs });
  await t.commit();
  t = await p.transaction();
  const aborted = [];
  for (let i = 0; i < 20; i++) aborted.push({ partition: i % 2, value: 'a' + i });
  await t.send({ topic: TOPIC, messages: aborted });
  await t.abort();

  // Offsets in a transaction: aborted first (no change), then committed.
  const GROUP = 'kjs-txn-group';
  t = await p.transaction();
  await t.sendOffsets({ consumerGroupId: GROUP, topics: [{ topic: TOPIC, partitions: [{ partition: 0, offset: '5' }] }] });
  await t.abort();
  t = await p.transaction();
  await t.send({ topic: TOPIC, messages: [{ partition: 1, value: 'c-last' }] });
  committed[1].push('c-last');
  await t.sendOffsets({ consumerGroupId: GROUP, topics: [{ topic: TOPIC, partitions: [{ partition: 0, offset: '7' }] }] });
  await t.commit();
  const offsets = await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] });
  const p0 = offsets[0].partitions.find((x) => x.partition === 0);
  if (!p0 || p0.offset !== '7') fail('fetchOffsets after the committed sendOffsets: ' + JSON.stringify(offsets));

  // Read back with kafkajs' Consumer (read_committed is its default).
  const consumer = kafka.consumer({ groupId: 'kjs-txn-reader', maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
  const got = { 0: [], 1: [] };
  const want = committed[0].length + committed[1].length;
  let seen = 0;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('consumer read ' + seen + ' of ' + want + ': ' + JSON.stringify(got))), 30000);
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        got[partition].push(message.value.toString());
        seen++;
        if (seen >= want) {
          clearTimeout(timer);
          resolve();
        }
      },
    }).catch(reject);
  });
  // A little longer: nothing aborted may follow.
  await new Promise((r) => setTimeout(r, 1000));
  await consumer.disconnect();
  if (JSON.stringify(got) !== JSON.stringify(committed))
    fail('read_committed consumer saw ' + JSON.stringify(got) + ', want ' + JSON.stringify(committed));

  // Fencing: a second producer with the same id.
  const zombie = p;
  t = await zombie.transaction();
  await t.send({ topic: TOPIC, messages: [{ partition: 0, value: 'zombie' }] });
  const successor = txnProducer('kjs-tx');
  await successor.connect();
  const st = await successor.transaction();  // InitProducerId: fences the zombie, aborting its transaction
  await st.send({ topic: TOPIC, messages: [{ partition: 0, value: 'successor' }] });
  await st.commit();
  let refused = null;
  try {
    await t.commit();
  } catch (e) {
    refused = e;
  }
  if (refused === null) fail('the fenced producer committed');
  await successor.disconnect();
  await zombie.disconnect().catch(() => {});
  await admin.disconnect();
  console.log('[kafkajs txn] committed ' + want + ' messages read back exactly; aborted 20 invisible; ' +
              'offsets committed with the transaction; fenced commit refused: ' + (refused.type || refused.name));
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error('FAIL: ' + (e && e.stack ? e.stack : e));
    process.exit(1);
  },
);
