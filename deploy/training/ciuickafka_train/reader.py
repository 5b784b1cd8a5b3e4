"""ciuickafka_train/reader.py: one reader's stream (runs inside a DataLoader worker).

`read_chunks(spec)` creates its own confluent-kafka consumer (after the
fork: librdkafka's threads do not survive one), assigns the partitions of
its units with explicit offsets (assign, no group membership, nothing
committed) and yields chunks: several batches of compact token bytes in one
transfer (through the worker's shared-memory ring, ring.py, or as tensors
that torch shares when a chunk does not fit a slot or there are no workers), with,
per batch, the progress of the units it drew from. The main process widens
to int64 and counts a batch as delivered only when it hands it to the
trainer (loader.py), so prefetched chunks are never in the cursor.

Order is deterministic in epoch mode: per topic the reader fetches up to 8
units (partitions) at once and emits from them in turns of `block` records
(a shuffle window when shuffling) in a fixed (or seed+epoch shuffled) unit
order; with several topics a
seeded weighted draw picks the topic of each sample. Shuffle permutes
windows of `shuffle_window` records inside a unit (seed, epoch, topic,
partition, window bounds), so a window delivered in part is replayed from
its bounds and the first k of the same permutation are skipped. Live mode
reads its partitions together, in arrival order, and ships a partial batch
when no record arrived for `live_flush_s`; a strided unit fetches its whole
partition and keeps only the offsets of its residues (and none it was told
were delivered before).

Bounded: a reader buffers about 64 MiB of records (split over its active
units, at least 2 turns each) before a partition is paused; with no progress and a broker error for
`timeout_s`, the stream raises BrokerUnreachable; a unit whose offsets were
deleted under it raises OffsetsDeleted.

One stream per worker, used by one thread: not thread-safe.
"""

import bisect
import random
import time
from collections import deque

import numpy as np
import torch
import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from . import records
from .errors import BrokerUnreachable, OffsetsDeleted, TrainReaderError
from .plan import INF, window_permutation

WAIT = object()
END = object()


# librdkafka 2.3.0 made the wait after a full fetch queue a setting (fetch.queue.backoff.ms);
# before it the consumer waited a fixed second, and older clients refuse the key.
_QUEUE_BACKOFF_SINCE = 0x020300ff


def consumer_config(bootstrap, reader_tag, mode, extra, libversion=None):
    """The consumer settings, chosen for throughput (documented in the README)."""
    if libversion is None:
        libversion = confluent_kafka.libversion()[1]
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": "ciuickafka-train-unused-" + reader_tag,  # required by the client; never joined
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "error",        # deleted offsets surface, never a silent jump
        "allow.auto.create.topics": False,
        # per partition per Fetch: 1 MiB interleaves the partitions finely, so the unit being
        # emitted finds its records without pulling others' far ahead (larger made the
        # byte-budget backstop pause partitions and librdkafka drop their prefetch)
        "fetch.message.max.bytes": 1 << 20,
        "fetch.max.bytes": 64 << 20,
        "queued.max.messages.kbytes": 65536,
        "queued.min.messages": 100000,
        "fetch.wait.max.ms": 100 if mode == "live" else 500,
        "fetch.min.bytes": 1,
        "check.crcs": False,
        "socket.receive.buffer.bytes": 4 << 20,
    }
    if libversion >= _QUEUE_BACKOFF_SINCE:
        # the default (1 s) idles a reader whose queue was full each time it drains it
        conf["fetch.queue.backoff.ms"] = 50
    conf.update(extra)
    return conf


class _Active:
    __slots__ = ("unit", "key", "tp", "buf", "fetch_next", "fetched_all", "paused", "window", "wpos",
                 "wlo", "whi", "next", "skip", "nbytes", "filter", "ex_lo", "ex_end")

    def __init__(self, unit, ti):
        self.unit = unit
        self.key = unit_key(ti, unit)
        self.tp = (unit.topic, unit.partition)
        self.buf = deque()
        self.fetch_next = unit.lo
        self.fetched_all = unit.lo >= unit.hi
        self.paused = False
        self.window = None
        self.wpos = 0
        self.wlo = self.whi = 0
        self.next = unit.lo
        self.skip = unit.skip
        self.nbytes = 0
        # live strides: only some offsets of the partition are this unit's to deliver
        self.filter = unit.share > 1 or bool(unit.exclude)
        self.ex_lo = [a for a, _ in unit.exclude]
        self.ex_end = unit.exclude[-1][1] if unit.exclude else 0

    def mine(self, o):
        u = self.unit
        if u.share > 1 and (o - u.base) % u.share not in u.ks:
            return False
        if o < self.ex_end:
            i = bisect.bisect_right(self.ex_lo, o) - 1
            if i >= 0 and o < u.exclude[i][1]:
                return False  # delivered before the checkpoint
        return True

    def progress(self):
        if self.window is not None:
            return (self.next, self.wlo, self.whi, self.wpos)
        if self.unit.window and self.next < self.unit.hi:
            return (self.next, self.unit.lo, self.unit.hi, self.skip)
        return (self.next, 0, 0, 0)


class Stream:
    def __init__(self, spec, ring=None):
        self.s = spec
        self.ring = ring
        self.topics = spec["topics"]
        self.tindex = {t: i for i, t in enumerate(self.topics)}
        self.live = spec["mode"] == "live"
        self.B = spec["batch_size"]
        self.S = spec["shuffle_window"] if spec["shuffle"] else 0
        # Records a unit may buffer before its partition is paused. Pausing makes librdkafka drop
        # what it prefetched for the partition (it fetches again on resume), so it is a backstop
        # for a prefetching unit, not flow control: consume() is only called when the emitting
        # unit is empty, which bounds the buffers in the common case.
        self.block = self.S or max(self.B, 256)   # records per turn when interleaving units
        self.max_active = 8                        # units (partitions) fetched at once per topic
        self.budget = 64 << 20                     # buffered record bytes per reader, all units'
        self.turn = [0] * len(spec["topics"])
        self.left = [self.block] * len(spec["topics"])
        self.queues = [deque(u for u in spec["units"] if u.topic == t) for t in self.topics]
        self.active = [[] for _ in self.topics]   # per topic: [emitting, prefetching...]
        self.by_tp = {}
        self.done = [not q for q in self.queues]
        self.dirty = {}
        self.rng = random.Random("mix:%d:%d:%d" % (spec["seed"], spec["epoch"], spec["reader"]))
        self.weights = spec["weights"]
        self.last_error = None
        self.c = None

    # --- fetching -------------------------------------------------------------------
    def _on_error(self, err):
        self.last_error = err

    def _open(self):
        conf = consumer_config(self.s["bootstrap"], "%d-%d" % (self.s["rank"], self.s["reader"]),
                               self.s["mode"], self.s["consumer_config"])
        conf["error_cb"] = self._on_error
        self.c = Consumer(conf)

    def _activate(self, ti):
        """Starts fetching the next unit(s) of topic ti; False when none is left."""
        acts = self.active[ti]
        q = self.queues[ti]
        while q and len(acts) < self.max_active:
            u = q[0]
            if (u.topic, u.partition) in self.by_tp:
                break  # same partition still being read: wait for it
            q.popleft()
            a = _Active(u, ti)
            acts.append(a)
            self.by_tp[a.tp] = a
            self.dirty[a.key] = a
            if not a.fetched_all:
                self._assign(u)
        return bool(acts)

    def _assign(self, u):
        tp = TopicPartition(u.topic, u.partition, u.lo)
        self.c.incremental_assign([tp])
        # librdkafka keeps a partition's pause flag across unassign/assign: clear it
        self.c.resume([TopicPartition(u.topic, u.partition)])

    def _finish(self, a):
        a.next = a.unit.hi
        a.window = None
        self.dirty[a.key] = a
        self.by_tp.pop(a.tp, None)
        try:
            self.c.incremental_unassign([TopicPartition(a.unit.topic, a.unit.partition)])
        except Exception:  # noqa: BLE001 - already unassigned (fetched nothing)
            pass

    def _fetched(self, a):
        a.fetched_all = True
        if not a.paused:
            self.c.pause([TopicPartition(a.unit.topic, a.unit.partition)])
            a.paused = True

    def pump(self, timeout):
        """One consume() call; returns the number of records buffered."""
        msgs = self.c.consume(num_messages=2048, timeout=timeout)
        got = 0
        for m in msgs:
            err = m.error()
            if err is not None:
                code = err.code()
                a = self.by_tp.get((m.topic(), m.partition()))
                if code == KafkaError._PARTITION_EOF:
                    if a is not None and m.offset() >= a.unit.hi:
                        self._fetched(a)
                    elif a is not None and self.live:
                        self.caught_up = True
                    continue
                if code in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                    raise OffsetsDeleted(
                        "topic %r partition %s: offset %s is no longer in the log (retention or DeleteRecords "
                        "removed it): start a new epoch with set_epoch(), or load a newer checkpoint (%s)"
                        % (m.topic(), m.partition(), a.fetch_next if a else "?", err.str()))
                self.last_error = err
                continue
            a = self.by_tp.get((m.topic(), m.partition()))
            if a is None:
                continue
            o = m.offset()
            if o < a.fetch_next:
                continue
            if o >= a.unit.hi:
                self._fetched(a)
                continue
            a.fetch_next = o + 1
            if a.filter and not a.mine(o):
                self.progress_at = time.monotonic()  # the broker answers; nothing to deliver
                continue
            v = m.value()
            a.buf.append((o, v))
            a.nbytes += len(v)
            got += 1
            if o + 1 >= a.unit.hi:
                self._fetched(a)
        n_active = sum(len(acts) for acts in self.active) or 1
        for acts in self.active:
            for a in acts:
                if not a.fetched_all:
                    # a backstop, not flow control: librdkafka drops what it prefetched for a paused
                    # partition; round-robin emission keeps the units' buffers level
                    limit = max(self.budget // n_active, 2 * self.block * (a.nbytes // max(1, len(a.buf)) + 1))
                    if not a.paused and a.nbytes > limit:
                        self.c.pause([TopicPartition(a.unit.topic, a.unit.partition)])
                        a.paused = True
                    elif a.paused and a.nbytes <= limit // 2:
                        self.c.resume([TopicPartition(a.unit.topic, a.unit.partition)])
                        a.paused = False
        if got:
            self.progress_at = time.monotonic()
        elif self.last_error is not None and time.monotonic() - self.progress_at > self.s["timeout_s"]:
            raise BrokerUnreachable(
                "no records from %s for %.0f s and the client reports: %s; check that the broker runs and is "
                "reachable" % (self.s["bootstrap"], self.s["timeout_s"], self.last_error.str()))
        return got

    # --- emitting -------------------------------------------------------------------
    def _pop(self, a):
        """The next record of unit a in delivery order, WAIT or END."""
        if self.S == 0:
            if a.buf:
                o, v = a.buf.popleft()
                a.nbytes -= len(v)
                a.next = o + 1
                return o, v
            return END if a.fetched_all else WAIT
        if a.window is None:
            if a.unit.window:
                if not a.fetched_all:
                    return WAIT
                n = len(a.buf)
                if n == 0:
                    return END
            elif len(a.buf) >= self.S or (a.fetched_all and a.buf):
                n = min(self.S, len(a.buf))
            elif a.fetched_all:
                return END
            else:
                return WAIT
            recs = [a.buf.popleft() for _ in range(n)]
            a.nbytes -= sum(len(v) for _, v in recs)
            lo, hi = (a.unit.lo, a.unit.hi) if a.unit.window else (recs[0][0], recs[-1][0] + 1)
            perm = window_permutation(self.s["seed"], self.s["epoch"], a.unit.topic, a.unit.partition, lo, hi, n)
            a.window = [recs[i] for i in perm]
            a.wlo, a.whi = lo, hi
            a.wpos = a.skip if a.unit.window else 0
            a.skip = 0
            if a.wpos >= n:
                a.window = None
                a.next = hi
                return self._pop(a)
        rec = a.window[a.wpos]
        a.wpos += 1
        if a.wpos == len(a.window):
            a.window = None
            a.next = a.whi
        return rec

    def take(self, ti):
        """(partition, offset, value) from topic ti, WAIT, or END (topic exhausted).
        The topic's active units take turns of `block` records (a shuffle window when
        shuffling), in unit order: deterministic, and every partition drains evenly."""
        while True:
            acts = self.active[ti]
            if len(acts) < self.max_active:
                self._activate(ti)
            if not acts:
                return END
            i = self.turn[ti] % len(acts)
            a = acts[i]
            r = self._pop(a)
            if r is END:
                acts.pop(i)
                self._finish(a)
                self.turn[ti] = i
                self.left[ti] = self.block
                continue
            if r is WAIT:
                return WAIT
            self.dirty[a.key] = a
            self.left[ti] -= 1
            if self.left[ti] == 0 or (self.S and a.window is None):
                self.turn[ti] = i + 1
                self.left[ti] = self.block
            return a.unit.partition, r[0], r[1]

    def take_live(self):
        """Any available record (weighted over topics with data), or WAIT."""
        cands = [ti for ti in range(len(self.topics)) if any(a.buf for a in self.active[ti])]
        if not cands:
            return WAIT
        if len(cands) > 1 and self.weights:
            ti = self.rng.choices(cands, [self.weights[i] for i in cands])[0]
        else:
            ti = cands[0] if len(cands) == 1 else cands[self.rng.randrange(len(cands))]
        acts = [a for a in self.active[ti] if a.buf]
        a = acts[self.rng.randrange(len(acts))] if len(acts) > 1 else acts[0]
        o, v = a.buf.popleft()
        a.nbytes -= len(v)
        a.next = o + 1
        self.dirty[a.key] = a
        return ti, a.unit.partition, o, v

    def pick(self):
        live = [ti for ti in range(len(self.topics)) if not self.done[ti]]
        if not live:
            return None
        if len(live) == 1:
            return live[0]
        w = [self.weights[i] for i in live] if self.weights else None
        return self.rng.choices(live, w)[0] if w else live[self.rng.randrange(len(live))]

    # --- batches and chunks ---------------------------------------------------------
    def batches(self):
        """Yields (rows, delta): rows = [(ti, partition, offset, value)], delta = {key: progress}."""
        self.progress_at = time.monotonic()
        self.caught_up = False
        if self.live:
            for ti in range(len(self.topics)):
                while self._activate_live(ti):
                    pass
        rows = []
        ti = None
        idle, idle_at = False, 0.0
        last_rec = time.monotonic()
        while True:
            if self.live:
                r = self.take_live()
                if r is WAIT:
                    now = time.monotonic()
                    if now - last_rec >= self.s["live_flush_s"] and (not idle or now - idle_at >= 0.5):
                        if rows:
                            yield rows, self._delta()
                            rows = []
                        # idle: ship what is pending; while idle, an empty chunk every 0.5 s hands
                        # control back to the DataLoader worker loop so it sees a shutdown
                        yield None
                        idle, idle_at = True, now
                    if not any(self.active):
                        return
                    if self.pump(0.05 if rows else 0.2):
                        last_rec = time.monotonic()
                    continue
                rows.append(r)
                last_rec = time.monotonic()
                idle = False
            else:
                if ti is None:
                    ti = self.pick()
                    if ti is None:
                        break
                r = self.take(ti)
                if r is WAIT:
                    self.pump(0.2)
                    continue
                if r is END:
                    self.done[ti] = True
                    ti = None
                    continue
                rows.append((ti,) + r)
                ti = None
            if len(rows) >= self.B:
                yield rows, self._delta()
                rows = []
        if rows:
            yield rows, self._delta()

    def _activate_live(self, ti):
        q = self.queues[ti]
        if not q:
            return False
        u = q.popleft()
        a = _Active(u, ti)
        self.active[ti].append(a)
        self.by_tp[a.tp] = a
        self._assign(u)
        return True

    def _delta(self):
        d = {k: a.progress() for k, a in self.dirty.items()}
        self.dirty = {}
        return d

    def high_watermarks(self):
        out = {}
        for acts in self.active:
            for a in acts:
                try:
                    lo, hi = self.c.get_watermark_offsets(TopicPartition(a.unit.topic, a.unit.partition),
                                                          cached=True)
                except Exception:  # noqa: BLE001 - not known yet
                    continue
                if hi >= 0:
                    out[(a.key[0], a.unit.partition)] = hi
        return out

    def chunks(self):
        self._open()
        try:
            pending, pending_bytes = [], 0
            started = time.monotonic()
            for item in self.batches():
                if item is None:
                    yield self._pack(pending)
                    pending, pending_bytes = [], 0
                    started = time.monotonic()
                    continue
                pending.append(item)
                pending_bytes += sum(len(r[3]) for r in item[0])
                bpt = self.s["batches_per_transfer"]
                if (len(pending) >= bpt if bpt else pending_bytes >= (2 << 20) or len(pending) >= 64) or (
                        self.live and time.monotonic() - started >= self.s["live_flush_s"]):
                    yield self._pack(pending)
                    pending, pending_bytes = [], 0
                    started = time.monotonic()
            if pending:
                yield self._pack(pending)
        finally:
            self.c.close()

    def _pack(self, pending):
        datas, lens, tis, parts, offs, metas = [], [], [], [], [], []
        for rows, delta in pending:
            values = [r[3] for r in rows]
            width, lengths, data = records.decode_batch(values)
            datas.append(data)
            lens.append(lengths)
            tis.append(np.fromiter((r[0] for r in rows), np.int16, len(rows)))
            parts.append(np.fromiter((r[1] for r in rows), np.int32, len(rows)))
            offs.append(np.fromiter((r[2] for r in rows), np.int64, len(rows)))
            metas.append((len(rows), width, int(data.shape[0]), delta, sum(len(v) for v in values)))
        chunk = {
            "batches": metas,
            "hw": self.high_watermarks() if self.live else {},
            "reader": self.s["reader"],
            "worker": self.s.get("worker", 0),
        }
        fields = [datas, lens, tis, parts, offs]
        desc = self.ring.put(fields) if self.ring is not None and pending else None
        if desc is not None:
            chunk["ring"] = desc
            return chunk
        empty = [np.zeros(0, np.uint8), np.zeros(0, np.int32), np.zeros(0, np.int16), np.zeros(0, np.int32),
                 np.zeros(0, np.int64)]
        for name, f, e in zip(("data", "lengths", "topic", "partition", "offset"), fields, empty):
            chunk[name] = torch.from_numpy(np.concatenate([e] + f))
        return chunk


def unit_key(ti, u):
    """The cursor's key of a unit: strides of one partition share lo and differ by residue."""
    return (ti, u.partition, u.lo, u.ks[0])


def read_chunks(spec, ring=None):
    """The stream, with client errors turned into TrainReaderErrors: a KafkaException cannot be
    pickled back to the DataLoader's main process (its class lives in the C extension), which
    would leave the trainer waiting forever."""
    try:
        yield from Stream(spec, ring).chunks()
    except KafkaException as e:
        raise TrainReaderError("reader %d (rank %d): the Kafka client failed: %s (bootstrap %s)" % (
            spec["reader"], spec["rank"], e.args[0] if e.args else e, spec["bootstrap"])) from None


__all__ = ["read_chunks", "consumer_config", "INF"]
