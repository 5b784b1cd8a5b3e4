// tests/clients/kafkajs_group.js: kafkajs 2.2.4 consumer group and group admin
// (tests/integration/test_groups_kafkajs.py).
//
// Usage: node kafkajs_group.js PORT
// 1. 3,000 keyed messages to a 3-partition topic (explicit partitions).
// 2. a Consumer (autoCommit off) with eachBatch, resolving each offset and
//    calling commitOffsets after every batch: reads all of them exactly once,
//    in order per partition. While it runs: admin listGroups has the group
//    (protocolType consumer), describeGroups says Stable with 1 member and
//    its client id, deleteGroups of the live group fails (GROUP_NOT_EMPTY).
// 3. after disconnect: describeGroups says Empty; fetchOffsets equals the
//    end offsets (fetchTopicOffsets high).
// 4. 600 more messages; a second run of the group reads exactly those (it
//    resumes from the commits).
// 5. resetOffsets earliest; a third run re-reads all 3,600 from offset 0.
// 6. deleteGroups: gone from listGroups, fetchOffsets answers -1.
// Exits 0 when every check holds; prints what differed otherwise.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const port = process.argv[2];
const TOPIC = 'kjs-group-topic';
const GROUP = 'ck-it-kafkajs-group-admin';
const PARTS = 3;
const kafka = new Kafka({
  clientId: 'ck-it-kafkajs-group',
  brokers: ['127.0.0.1:' + port],
  logLevel: logLevel.WARN,
  connectionTimeout: 5000,
  requestTimeout: 15000,
  retry: { retries: 5 },
});

function fail(msg) {
  throw new Error(msg);
}

function expect(cond, msg) {
  if (!cond) fail(msg);
}

async function produce(admin, from, count) {
  const p = kafka.producer({ allowAutoTopicCreation: false });
  await p.connect();
  const messages = [];
  for (let i = from; i < from + count; i++) {
    messages.push({ key: 'k' + i, value: 'v' + i, partition: i % PARTS });
  }
  for (let i = 0; i < messages.length; i += 500) {
    const res = await p.send({ topic: TOPIC, acks: -1, messages: messages.slice(i, i + 500) });
    for (const r of res) expect(r.errorCode === 0, 'produce ' + JSON.stringify(r));
  }
  await p.disconnect();
}

// Runs the group until `want` messages were read (or 40 s); checks each was
// read once, in order, continuing from `start[partition]`. `during` runs
// once the first batch was committed (the group is Stable then).
async function consume(want, start, during) {
  const consumer = kafka.consumer({ groupId: GROUP, maxWaitTimeInMs: 200, sessionTimeout: 10000,
    heartbeatInterval: 1000 });
  await consumer.connect();
  await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
  const next = Object.assign({}, start);
  let got = 0;
  let batches = 0;
  let duringDone = !during;
  let duringErr = null;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('consume: timed out with ' + got + ' of ' + want)), 40000);
    consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
        for (const m of batch.messages) {
          const want = next[batch.partition];
          if (m.offset !== String(want)) {
            reject(new Error('partition ' + batch.partition + ': read offset ' + m.offset + ', want ' + want));
            return;
          }
          const idx = Number(m.key.toString().slice(1));
          if (idx % PARTS !== batch.partition || m.value.toString() !== 'v' + idx) {
            reject(new Error('bad message ' + m.key + '=' + m.value + ' on partition ' + batch.partition));
            return;
          }
          next[batch.partition] = want + 1;
          got++;
          resolveOffset(m.offset);
        }
        if (batch.messages.length > 0) {
          const last = batch.messages[batch.messages.length - 1].offset;
          await consumer.commitOffsets([{ topic: TOPIC, partition: batch.partition,
            offset: String(Number(last) + 1) }]);
          batches++;
        }
        await heartbeat();
        if (!duringDone && batches > 0) {
          duringDone = true;
          try { await during(); } catch (e) { duringErr = e; }
        }
        if (duringErr) { reject(duringErr); return; }
        if (got >= want && duringDone) { clearTimeout(timer); resolve(); }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  expect(got === want, 'read ' + got + ', want ' + want);
  return next;
}

async function offsetsOf(admin) {
  const res = await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] });
  const t = res.find((x) => x.topic === TOPIC);
  expect(t, 'fetchOffsets: no topic in ' + JSON.stringify(res));
  const out = {};
  for (const p of t.partitions) out[p.partition] = p.offset;
  return out;
}

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  expect(await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTS }], waitForLeaders: true }),
    'createTopics');
  await produce(admin, 0, 3000);
  const zero = { 0: 0, 1: 0, 2: 0 };

  // 2. eachBatch + commitOffsets, admin calls while the group runs.
  let next = await consume(3000, zero, async () => {
    const { groups } = await admin.listGroups();
    const g = groups.find((x) => x.groupId === GROUP);
    expect(g && g.protocolType === 'consumer', 'listGroups: ' + JSON.stringify(groups));
    const d = await admin.describeGroups([GROUP]);
    const dg = d.groups[0];
    expect(dg.groupId === GROUP && dg.errorCode === 0 && dg.state === 'Stable' && dg.protocolType === 'consumer' &&
      dg.members.length === 1 && dg.members[0].clientId === 'ck-it-kafkajs-group' && dg.protocol !== '',
    'describeGroups while running: ' + JSON.stringify(dg));
    let refused = null;
    try {
      await admin.deleteGroups([GROUP]);
    } catch (e) {
      refused = e;
    }
    // Kafka's GROUP_NOT_EMPTY (68; kafkajs calls it NON_EMPTY_GROUP).
    expect(refused && refused.groups && refused.groups.length === 1 && refused.groups[0].errorCode === 68,
      'deleteGroups of a live group: ' + (refused ? JSON.stringify(refused.groups || refused.message) : 'succeeded'));
  });
  console.log('eachBatch + commitOffsets: 3000 read once; listGroups/describeGroups/deleteGroups(live) ok');

  // 3. Empty group, committed offsets = end offsets.
  const d = await admin.describeGroups([GROUP]);
  expect(d.groups[0].state === 'Empty' && d.groups[0].members.length === 0,
    'describeGroups after disconnect: ' + JSON.stringify(d.groups[0]));
  const high = {};
  for (const o of await admin.fetchTopicOffsets(TOPIC)) high[o.partition] = o.high;
  let committed = await offsetsOf(admin);
  expect(JSON.stringify(committed) === JSON.stringify(high),
    'fetchOffsets ' + JSON.stringify(committed) + ' != end offsets ' + JSON.stringify(high));
  console.log('fetchOffsets = end offsets: ' + JSON.stringify(committed));

  // 4. resume from the commits.
  await produce(admin, 3000, 600);
  for (const p of Object.keys(committed)) expect(Number(committed[p]) === next[p], 'commit vs read position');
  next = await consume(600, next);
  console.log('second run resumed from the commits: 600 read once');

  // 5. resetOffsets earliest: a third run reads everything again from 0.
  await admin.resetOffsets({ groupId: GROUP, topic: TOPIC, earliest: true });
  committed = await offsetsOf(admin);
  // kafkajs commits the "earliest" sentinel -2 itself (and resolves it when a consumer starts).
  for (const p of Object.keys(committed)) {
    expect(committed[p] === '-2' || committed[p] === '0', 'fetchOffsets after resetOffsets ' + JSON.stringify(committed));
  }
  console.log('after resetOffsets earliest, fetchOffsets: ' + JSON.stringify(committed));
  await consume(3600, zero);
  console.log('third run after resetOffsets: 3600 re-read from offset 0');

  // 6. deleteGroups.
  const del = await admin.deleteGroups([GROUP]);
  expect(del.length === 1 && del[0].groupId === GROUP && del[0].errorCode === 0, 'deleteGroups ' + JSON.stringify(del));
  const { groups } = await admin.listGroups();
  expect(!groups.find((x) => x.groupId === GROUP), 'listGroups after delete: ' + JSON.stringify(groups));
  committed = await offsetsOf(admin);
  for (const p of Object.keys(committed)) expect(committed[p] === '-1', 'fetchOffsets after delete ' + JSON.stringify(committed));
  console.log('deleteGroups: gone, offsets -1');
  await admin.disconnect();
}

const timer = setTimeout(() => { console.error('kafkajs_group: timed out'); process.exit(2); }, 150000);
main().then(() => { clearTimeout(timer); process.exit(0); })
  .catch((e) => { console.error('FAIL:', e && e.stack ? e.stack : e); process.exit(1); });
