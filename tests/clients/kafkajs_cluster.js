// tests/clients/kafkajs_cluster.js: kafkajs' driver for tests/integration/test_cluster_clients.py.
//
// Usage: node kafkajs_cluster.js produce BOOTSTRAP TOPIC N CHUNK
//        node kafkajs_cluster.js consume BOOTSTRAP TOPIC GROUP HALF
// The line protocol is described in test_cluster_clients.py. The producer is
// kafkajs' idempotent one (acks -1, one request in flight); send() answers a
// base offset per partition, and a partition's records of one send() are one
// batch, so record j of a partition is at baseOffset + j. The consumer runs
// eachBatch with autoCommit off (4 KiB a partition per fetch, so member 1
// stops inside partitions) and commits explicitly with commitOffsets.
// Every wait is bounded; any error exits 1 with the reason on stderr.
'use strict';
const readline = require('readline');
const { Kafka, logLevel } = require('kafkajs');
const { version } = require('kafkajs/package.json');

const PARTS = 3;
const [mode, bootstrap] = process.argv.slice(2, 4);
const kafka = new Kafka({
  clientId: 'ck-cc-kafkajs',
  brokers: bootstrap.split(','),
  logLevel: logLevel.NOTHING,
  connectionTimeout: 3000,
  requestTimeout: 15000,
  retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 },
});

const lines = [];
function out(line) {
  lines.push(line);
}
function flush() {
  if (lines.length) process.stdout.write(lines.splice(0).join('\n') + '\n');
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('timed out: ' + what)), ms); }),
  ]).finally(() => clearTimeout(timer));
}

async function produce(topic, n, chunk) {
  const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
  await p.connect();
  let acked = 0;
  for (let start = 0; start < n; start += chunk) {
    const idx = [];
    for (let i = start; i < Math.min(n, start + chunk); i++) idx.push(i);
    const messages = idx.map((i) => ({ key: 'k' + i, value: 'v' + String(i).padStart(6, '0'), partition: i % PARTS }));
    // kafkajs 2.2.4's send() keeps, across its retries, the answers of the
    // brokers that already answered (sendMessages.js, responsePerBroker):
    // when a partition's new leader is a broker that answered for another
    // partition before the retry, that partition is never sent and send()
    // resolves without it. Its records are sent again here (kafkajs rolled
    // their sequence numbers back, so a copy that did reach the old leader
    // is a duplicate the new leader must recognise).
    const base = {};
    for (let attempt = 0; Object.keys(base).length < PARTS; attempt++) {
      if (attempt === 5) throw new Error('no offsets for partitions after 5 sends: ' + JSON.stringify(base));
      const todo = messages.filter((m) => base[m.partition] === undefined);
      const res = await withTimeout(p.send({ topic, acks: -1, messages: todo }), 120000, 'send of ' + start);
      for (const r of res) {
        if (r.errorCode !== 0) throw new Error('send: ' + JSON.stringify(r));
        if (base[r.partition] === undefined) base[r.partition] = BigInt(r.baseOffset);
      }
      const missing = [...new Set(todo.map((m) => m.partition))].filter((q) => base[q] === undefined);
      if (missing.length) out('note send() of records ' + start + '.. resolved without partition(s) ' + missing.join(',') + ', sending them again');
    }
    const seen = {};
    for (const i of idx) {
      const q = i % PARTS;
      const j = seen[q] || 0;
      seen[q] = j + 1;
      out('ack ' + q + ' ' + (base[q] + BigInt(j)) + ' ' + i);
      acked++;
    }
    flush();
  }
  await p.disconnect();
  out('produced ' + acked + ' 0');
}

// Runs one member until done(next) holds after a batch; prints each record
// it delivers; commits exactly the next offsets of what it delivered, prints
// them, and leaves the group.
async function member(topic, group, start, done) {
  const c = kafka.consumer({ groupId: group, maxWaitTimeInMs: 200, maxBytesPerPartition: 4096, sessionTimeout: 10000, heartbeatInterval: 1000,
    retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 } });
  await c.connect();
  await c.subscribe({ topic, fromBeginning: true });
  const next = Object.assign({}, start);
  const delivered = {};
  let count = 0;
  let finished = false;
  let resolveDone;
  const reached = new Promise((resolve) => { resolveDone = resolve; });
  await c.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset }) => {
      if (finished) return;
      for (const m of batch.messages) {
        out('rec ' + batch.partition + ' ' + m.offset + ' ' + m.value.toString());
        next[batch.partition] = Number(m.offset) + 1;
        delivered[batch.partition] = next[batch.partition];
        count++;
        resolveOffset(m.offset);
      }
      flush();
      if (done(next, count)) {
        finished = true;
        resolveDone();
      }
    },
  });
  await withTimeout(reached, 90000, 'the member to deliver its records');
  const offsets = Object.entries(delivered).map(([p, o]) => ({ topic, partition: Number(p), offset: String(o) }));
  await withTimeout(c.commitOffsets(offsets), 60000, 'commitOffsets');
  for (const o of offsets.sort((a, b) => a.partition - b.partition)) out('committed ' + o.partition + ' ' + o.offset);
  await withTimeout(c.disconnect(), 30000, 'disconnect');
  return next;
}

async function consume(topic, group, half) {
  const first = await member(topic, group, {}, (next, count) => count >= half);
  out('closed');
  flush();
  const rl = readline.createInterface({ input: process.stdin });
  const go = await withTimeout(new Promise((resolve) => rl.once('line', resolve)), 60000, 'the go line');
  rl.close();
  const f = go.split(' ');
  if (f[0] !== 'go') throw new Error('expected go, got ' + go);
  const ends = f.slice(1).map(Number);
  out('member2');
  await member(topic, group, {}, (next) => ends.every((e, p) => (next[p] !== undefined ? next[p] : first[p] || 0) >= e));
  out('done');
}

async function main() {
  out('client kafkajs ' + version + ' idempotent=1');
  flush();
  const a = process.argv.slice(4);
  if (mode === 'produce') await produce(a[0], Number(a[1]), Number(a[2]));
  else if (mode === 'consume') await consume(a[0], a[1], Number(a[2]));
  else throw new Error('usage: produce BOOTSTRAP TOPIC N CHUNK | consume BOOTSTRAP TOPIC GROUP HALF');
  flush();
}

main().then(() => process.exit(0), (e) => {
  flush();
  console.error('FAIL: ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
