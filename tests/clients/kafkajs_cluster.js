// tests/clients/kafkajs_cluster.js: kafkajs' driver for tests/integration/test_cluster_clients.py.
//
// Usage: node kafkajs_cluster.js produce BOOTSTRAP TOPIC N CHUNK
//        node kafkajs_cluster.js consume BOOTSTRAP TOPIC GROUP FIRST HALF
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

// Lines from stdin, read lazily (the produce mode never reads any).
let stdinLines = null;
const waiting = [];
function nextLine(want) {
  if (!stdinLines) {
    stdinLines = [];
    readline.createInterface({ input: process.stdin }).on('line', (l) => {
      if (waiting.length) waiting.shift()(l);
      else stdinLines.push(l);
    });
  }
  const line = new Promise((resolve) => (stdinLines.length ? resolve(stdinLines.shift()) : waiting.push(resolve)));
  return withTimeout(line, 60000, 'the ' + want + ' line').then((l) => {
    const f = l.split(' ');
    if (f[0] !== want) throw new Error('expected ' + want + ', got ' + l);
    return f.slice(1);
  });
}

// Commits exactly `delivered` (next offsets), retrying retriable errors while
// the coordinator moves (60 s at most), then prints them.
async function commit(c, topic, delivered) {
  const offsets = Object.entries(delivered).map(([p, o]) => ({ topic, partition: Number(p), offset: String(o) }));
  const deadline = Date.now() + 60000;
  for (;;) {
    try {
      await withTimeout(c.commitOffsets(offsets), 30000, 'commitOffsets');
      break;
    } catch (e) {
      if (Date.now() > deadline || !e.retriable) throw e;
      out('note commitOffsets: ' + e.message + ', retrying');
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  for (const o of offsets.sort((a, b) => a.partition - b.partition)) out('committed ' + o.partition + ' ' + o.offset);
  flush();
}

// Runs one member until done(next, count) holds after a batch, printing each
// record it delivers; if pauseAt(count) holds after a batch (once), commits
// what it delivered, prints `paused` and waits for `resume` before the next
// batch. At the end commits what it delivered and leaves the group.
async function member(topic, group, done, pauseAt) {
  const c = kafka.consumer({ groupId: group, maxWaitTimeInMs: 200, maxBytesPerPartition: 4096,
    sessionTimeout: 10000, heartbeatInterval: 1000,
    retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 } });
  await c.connect();
  await c.subscribe({ topic, fromBeginning: true });
  const next = {};
  let count = 0;
  let finished = false;
  let paused = false;
  let resolveDone;
  let rejectDone;
  const reached = new Promise((resolve, reject) => { resolveDone = resolve; rejectDone = reject; });
  await c.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset }) => {
      if (finished) return;
      for (const m of batch.messages) {
        out('rec ' + batch.partition + ' ' + m.offset + ' ' + m.value.toString());
        next[batch.partition] = Number(m.offset) + 1;
        count++;
        resolveOffset(m.offset);
      }
      flush();
      try {
        if (!paused && pauseAt && pauseAt(count)) {
          paused = true;
          await commit(c, topic, next);
          out('paused');
          flush();
          await nextLine('resume');
        }
      } catch (e) {
        rejectDone(e);
        return;
      }
      if (done(next, count)) {
        finished = true;
        resolveDone();
      }
    },
  });
  await withTimeout(reached, 90000, 'the member to deliver its records');
  await commit(c, topic, next);
  await withTimeout(c.disconnect(), 30000, 'disconnect');
  return next;
}

async function consume(topic, group, first, half) {
  const mine = await member(topic, group, (next, count) => count >= half, (count) => count >= first);
  out('closed');
  flush();
  const ends = (await nextLine('go')).map(Number);
  out('member2');
  await member(topic, group, (next) => ends.every((e, p) => (next[p] !== undefined ? next[p] : mine[p] || 0) >= e));
  out('done');
}

async function main() {
  out('client kafkajs ' + version + ' idempotent=1');
  flush();
  const a = process.argv.slice(4);
  if (mode === 'produce') await produce(a[0], Number(a[1]), Number(a[2]));
  else if (mode === 'consume') await consume(a[0], a[1], Number(a[2]), Number(a[3]));
  else throw new Error('usage: produce BOOTSTRAP TOPIC N CHUNK | consume BOOTSTRAP TOPIC GROUP FIRST HALF');
  flush();
}

main().then(() => process.exit(0), (e) => {
  flush();
  console.error('FAIL: ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
