"""tests/integration/test_training.py: the training reader (issue #17) against the real broker.

Usage: test_training.py --broker BIN --work DIR SCENARIO

Scenarios (each its own broker; samples are written with SampleWriter, and
every sample's first token is its unique id, so a delivery can be checked
by content and by provenance):

- exactly_once: topics of 8 and of 2 partitions (readers outnumber
  partitions), 2 simulated ranks x 3 DataLoader workers, unshuffled and
  shuffled: every (topic, partition, offset) below the snapshot delivered
  exactly once, the ids equal those written, the provenance matches the
  content; variable-length samples come padded with an attention_mask;
  a weighted mix of both topics delivers each exactly once too. Chunks
  cross from the workers through the shared-memory rings by default; with
  the rings off, and with slots too small for some chunks (those go as
  tensors), every sample is still delivered once.
- resume: 2 trainer processes (training_trainer.py, rank 0 and 1 of 2, 3
  workers, shuffled with windows of 64) checkpoint after 5 batches, take
  2 more, and are killed -9 mid-epoch; resuming from each rank's own
  state (2 x 3) and, separately, from the merged state with 3 ranks x 1
  worker: what was delivered up to the checkpoints plus what the resumed
  ranks deliver is one epoch exactly (no id lost, none twice).
- live: epoch mode stops at the snapshot though records arrive during the
  epoch (and the next epoch has them); live mode delivers records produced
  after it started, within 5 s of their acknowledgement (~0.2 s here).
- starvation: the data_loading % scraped from the loader's prometheus_client
  port is below 10 % while data is plentiful and above 90 % once the
  producer has stopped and the trainer waits.
- distributed: two processes in a gloo process group; the loader takes
  rank and world size from torch.distributed and rank 0's snapshot, while
  a producer keeps writing: each sample once, and each partition's offsets
  one contiguous run from 0 (one snapshot for both ranks).
- live_strides: live mode with more readers than partitions (2 ranks x 3
  workers, 2 partitions): strides inside a partition, every worker delivers,
  each offset once; resume from own states (3 and 2 workers) and from the
  merged state with 3 ranks x 1 worker (two ranks striding one partition),
  then from those 3 ranks' own states (shared strides continue as they were;
  the same own state with 2 workers is refused with CheckpointMismatch).
- commit: commit_group commits the last state_dict()'s delivered prefix with
  the checkpoint id as metadata, without joining; resume ignores the group;
  a rank whose range is not the partition's first commits nothing for it.
- With CK_TRAINING_CLIENT=<version> (ctest's *_confluent_2x entries put the
  pinned confluent-kafka 2.x first on PYTHONPATH), the scenario first checks
  that this is the confluent-kafka imported.
- errors: unknown topic (TopicNotFound, and the topic is not created),
  unreachable broker (BrokerUnreachable), a checkpoint of another topic
  (CheckpointMismatch), a checkpoint whose offsets were deleted
  (DeleteRecords; OffsetsDeleted): each within its bound, naming the topic.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kafka_wire as kw  # noqa: E402
from harness import check, wait_until  # noqa: E402

sys.path.insert(0, os.path.join(harness.REPO, "deploy", "training"))
import torch  # noqa: E402
from ciuickafka_train import (BrokerUnreachable, CheckpointMismatch, OffsetsDeleted, SampleWriter,  # noqa: E402
                              TopicLoader, TopicNotFound)

TRAINER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "training_trainer.py")
# How long run_ranks waits for its samples (a bound on a hang, not a timing check).
RANKS_BOUND_S = 30


def write(b, topic, ids, seq_len=8, var=False):
    with SampleWriter(b.bootstrap, topic, seq_len=None if var else seq_len) as w:
        for i in ids:
            n = (1 + i % 11) if var else seq_len
            w.write([i] + [i % 997] * (n - 1))


def epoch_of(b, topic):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "ck-test-marks"})
    try:
        md = c.list_topics(timeout=10)
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                for p in md.topics[topic].partitions}
    finally:
        c.close()


def read_all(b, topics, ranks, workers, **kw_):
    """Every batch of one epoch over `ranks` simulated ranks (one after another)."""
    got = []
    for r in range(ranks):
        L = TopicLoader(b.bootstrap, topics, batch_size=16, rank=r, world_size=ranks, num_workers=workers, **kw_)
        for batch in L:
            ids = batch["input_ids"]
            check(ids.dtype == torch.int64 and ids.dim() == 2, "input_ids %s %s" % (ids.dtype, ids.shape))
            if "attention_mask" in batch:
                m = batch["attention_mask"]
                check(m.shape == ids.shape and bool((m[:, 0] == 1).all()), "attention mask")
                check(bool(((ids * (1 - m)) == 0).all()), "padding is 0 outside the mask")
            for i, (t, p, o) in enumerate(batch["provenance"]):
                got.append((t, p, o, int(ids[i, 0])))
        check(L.state_dict()["complete"], "rank %d's state is not complete after its epoch" % r)
    return got


def check_once(got, b, topic, ids, what):
    mine = [g for g in got if g[0] == topic]
    marks = epoch_of(b, topic)
    want = {(p, o) for p, (lo, hi) in marks.items() for o in range(lo, hi)}
    seen = [(p, o) for _, p, o, _ in mine]
    check(len(seen) == len(set(seen)), "%s: %d deliveries, %d distinct" % (what, len(seen), len(set(seen))))
    check(set(seen) == want, "%s: delivered %d offsets, the epoch has %d (missing %s)" % (
        what, len(set(seen)), len(want), sorted(want - set(seen))[:5]))
    check(sorted(i for *_, i in mine) == sorted(ids), "%s: the ids delivered are not those written" % what)
    # provenance matches content: a second read by offset gives the same id
    by_off = {(p, o): i for _, p, o, i in mine}
    check(len(by_off) == len(ids), "%s: provenance" % what)
    print("[test] %s: %d samples, each once" % (what, len(mine)), flush=True)


def exactly_once(ctx):
    b = ctx.broker()
    b.create_topic("t8", 8)
    b.create_topic("t2", 2)
    ids8 = list(range(0, 1500))
    ids2 = list(range(100000, 101000))
    write(b, "t8", ids8)
    write(b, "t2", ids2, var=True)
    check_once(read_all(b, "t8", 2, 3), b, "t8", ids8, "t8 2x3")
    check_once(read_all(b, "t2", 2, 3), b, "t2", ids2, "t2 2x3")
    sh = read_all(b, "t2", 2, 3, shuffle=True, shuffle_window=50, seed=3)
    check_once(sh, b, "t2", ids2, "t2 2x3 shuffled")
    plain = read_all(b, "t2", 1, 0)
    check([g[3] for g in sh] != [g[3] for g in plain], "shuffle changed nothing")
    again = read_all(b, "t2", 2, 3, shuffle=True, shuffle_window=50, seed=3)
    check([g[3] for g in again] == [g[3] for g in sh], "the shuffle is not deterministic for one seed and epoch")
    # how chunks cross from the workers: the shared-memory rings (default), torch's tensors (rings
    # off), and both in one read (slots too small for a full batch: those go as tensors)
    L = TopicLoader(b.bootstrap, "t8", batch_size=16, num_workers=3)
    check(sum(batch["input_ids"].shape[0] for batch in L) == len(ids8), "t8 with 3 workers")
    check(L.transfers["ring"] > 0 and L.transfers["tensors"] == 0, "default transfers %s" % L.transfers)
    got = read_all(b, "t8", 2, 3, ring_slot_bytes=0)
    check_once(got, b, "t8", ids8, "t8 2x3 without rings")
    got = read_all(b, "t8", 2, 3, ring_slot_bytes=512, batches_per_transfer=1)
    check_once(got, b, "t8", ids8, "t8 2x3 with 512-byte slots")
    mixed = read_all(b, ["t8", "t2"], 2, 3, weights=[3, 1])
    check_once(mixed, b, "t8", ids8, "mix t8")
    check_once(mixed, b, "t2", ids2, "mix t2")


def trainer(ctx, b, rank, world, workers, log, ckpt=None, resume=None, topic="tr", extra=()):
    cmd = [harness.PYTHON, TRAINER, "--bootstrap", b.bootstrap, "--topic", topic, "--rank", str(rank),
           "--world", str(world), "--workers", str(workers), "--log", log, "--shuffle"] + list(extra)
    if ckpt:
        cmd += ["--checkpoint-at", "5", "--ckpt", ckpt]
    if resume:
        cmd += ["--resume", resume]
    print("[harness] run: %s" % " ".join(cmd), flush=True)
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(x) for x in f if x.endswith("\n")]


def delivered_before(path):
    out = []
    for x in lines(path):
        if "checkpoint" in x:
            return out
        if "ids" in x:
            out += x["ids"]
    raise harness.TestFailure("%s has no checkpoint line" % path)


def finish(procs, what, timeout=60):
    for p in procs:
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            raise harness.TestFailure("%s: trainer timed out:\n%s" % (what, out.decode()[-3000:]))
        check(p.returncode == 0, "%s: trainer exited %d:\n%s" % (what, p.returncode, out.decode()[-3000:]))


def resume(ctx):
    b = ctx.broker()
    b.create_topic("tr", 2)
    ids = list(range(2000))
    write(b, "tr", ids)
    w = ctx.work
    procs = [trainer(ctx, b, r, 2, 3, os.path.join(w, "run1.%d.log" % r), ckpt=os.path.join(w, "ckpt.%d" % r))
             for r in range(2)]
    try:
        for r in range(2):
            wait_until(lambda: any("after" in x for x in lines(os.path.join(w, "run1.%d.log" % r)))
                       or procs[r].poll() is not None, 60, "rank %d's checkpoint and two more batches" % r)
            if procs[r].poll() is not None:
                raise harness.TestFailure("rank %d exited before it was killed:\n%s" % (
                    r, procs[r].stdout.read().decode()[-3000:]))
    finally:
        for p in procs:
            p.kill()
            p.wait()
    before = delivered_before(os.path.join(w, "run1.0.log")) + delivered_before(os.path.join(w, "run1.1.log"))
    lost = [i for r in range(2) for x in lines(os.path.join(w, "run1.%d.log" % r)) if "after" in x for i in x["after"]]
    check(len(before) == 2 * 5 * 16 and lost, "before: %d ids, lost after the checkpoint: %d" % (len(before), len(lost)))
    print("[test] killed -9 mid-epoch: %d delivered before the checkpoints, %d after them (lost)" %
          (len(before), len(lost)), flush=True)
    states = [torch.load(os.path.join(w, "ckpt.%d" % r)) for r in range(2)]

    def verify(prefix, n, what):
        after = []
        for r in range(n):
            xs = lines(os.path.join(w, "%s.%d.log" % (prefix, r)))
            check(xs and xs[-1].get("done"), "%s: rank %d did not finish its epoch" % (what, r))
            after += [i for x in xs if "ids" in x for i in x["ids"]]
        allv = before + after
        check(len(allv) == len(set(allv)), "%s: %d ids delivered twice" % (what, len(allv) - len(set(allv))))
        check(sorted(allv) == ids, "%s: %d ids missing" % (what, len(set(ids) - set(allv))))
        print("[test] %s: %d before + %d after = one epoch exactly" % (what, len(before), len(after)), flush=True)

    # Same topology: each rank its own state.
    procs = [trainer(ctx, b, r, 2, 3, os.path.join(w, "same.%d.log" % r), resume=os.path.join(w, "ckpt.%d" % r))
             for r in range(2)]
    finish(procs, "resume 2x3")
    verify("same", 2, "resume with 2 ranks x 3 workers")

    # World 2 -> 3, workers 3 -> 1, from the merged state.
    merged = TopicLoader.merge_state_dicts(states)
    torch.save(merged, os.path.join(w, "merged"))
    try:
        TopicLoader(b.bootstrap, "tr", batch_size=16, rank=0, world_size=3, shuffle=True, seed=7).load_state_dict(
            states[0])
        raise harness.TestFailure("a rank's own state loaded into another world size")
    except CheckpointMismatch as e:
        check("merge_state_dicts" in str(e), "message: %s" % e)
    procs = [trainer(ctx, b, r, 3, 1, os.path.join(w, "merged.%d.log" % r), resume=os.path.join(w, "merged"))
             for r in range(3)]
    finish(procs, "resume 3x1")
    verify("merged", 3, "resume with 3 ranks x 1 worker from the merged state")


def distributed(ctx):
    """Two gloo ranks: the loader takes rank/world from torch.distributed and rank 0's snapshot,
    though records keep arriving while the ranks start (each rank's own ListOffsets would differ)."""
    b = ctx.broker()
    b.create_topic("td", 2)
    write(b, "td", range(1000))
    stop = threading.Event()
    extra_ids = iter(range(10000, 10000000))

    def keep_writing():
        with SampleWriter(b.bootstrap, "td", seq_len=8) as w:
            while not stop.is_set():
                for _ in range(20):
                    i = next(extra_ids)
                    w.write([i] + [0] * 7)
                w.flush()
    th = threading.Thread(target=keep_writing, daemon=True)
    th.start()
    w = ctx.work
    url = "tcp://127.0.0.1:%d" % harness.free_port()
    try:
        procs = [trainer(ctx, b, r, 2, 2, os.path.join(w, "dist.%d.log" % r), topic="td", extra=["--dist", url])
                 for r in range(2)]
        finish(procs, "distributed", timeout=90)
    finally:
        stop.set()
        th.join(30)
    got = [i for r in range(2) for x in lines(os.path.join(w, "dist.%d.log" % r)) if "ids" in x for i in x["ids"]]
    check(len(got) == len(set(got)), "distributed: %d ids twice" % (len(got) - len(set(got))))
    check(set(range(1000)) <= set(got), "distributed: %d of the first 1000 missing" % len(set(range(1000)) - set(got)))
    # No gap: the epoch is every offset below ONE snapshot (rank 0's, broadcast), so each
    # partition's delivered offsets are one contiguous run from 0.
    at = [tuple(pa) for r in range(2) for x in lines(os.path.join(w, "dist.%d.log" % r)) if "at" in x for pa in x["at"]]
    for p in (0, 1):
        offs = sorted(o for pp, o in at if pp == p)
        check(offs == list(range(len(offs))), "distributed: partition %d's offsets are not 0..%d (gaps: the ranks "
              "disagreed on the snapshot?)" % (p, len(offs) - 1))
    print("[test] distributed: 2 gloo ranks, %d samples (1000 + %d produced meanwhile), each once" %
          (len(got), len(got) - 1000), flush=True)


def live(ctx):
    b = ctx.broker()
    b.create_topic("lv", 2)
    write(b, "lv", range(200))
    # Epoch mode: records produced during the epoch are not part of it.
    L = TopicLoader(b.bootstrap, "lv", batch_size=10, num_workers=1)
    got = []
    for i, batch in enumerate(L):
        got += batch["input_ids"][:, 0].tolist()
        if i == 0:
            write(b, "lv", range(200, 300))
    check(sorted(got) == list(range(200)), "epoch mode read %d records, want the 200 of the snapshot" % len(got))
    print("[test] epoch mode: stopped at the snapshot (200), 100 produced during the epoch left out", flush=True)
    # The next epoch has all 300.
    got = [i for batch in L for i in batch["input_ids"][:, 0].tolist()]
    check(sorted(got) == list(range(300)) and L.epoch == 1, "epoch 1 read %d (epoch %d)" % (len(got), L.epoch))
    # Live mode: everything, then what arrives later.
    L = TopicLoader(b.bootstrap, "lv", batch_size=10, num_workers=1, mode="live")
    got = []
    t_new = None
    for batch in L:
        got += batch["input_ids"][:, 0].tolist()
        if len(got) >= 300 and t_new is None:
            check(sorted(got) == list(range(300)), "live mode: first %d" % len(got))
            write(b, "lv", range(300, 350))
            t_new = time.monotonic()
        if len(got) >= 350:
            t_got = time.monotonic()
            break
    check(sorted(got) == list(range(350)), "live mode delivered %d, want 350" % len(got))
    check(t_got - t_new < 5.0, "live mode took %.1f s to deliver new records" % (t_got - t_new))
    print("[test] live mode: 50 records produced after start delivered %.2f s after they were acknowledged" %
          (t_got - t_new), flush=True)


def write_spread(b, topic, ids, partitions=2):
    """Sample i to partition i % partitions (SampleWriter's sticky partitioner would put a small
    burst in one partition)."""
    from confluent_kafka import Producer
    from ciuickafka_train import records
    pr = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
    for i in ids:
        pr.produce(topic, records.encode([i] + [i % 997] * 7), partition=i % partitions)
    check(pr.flush(10) == 0, "records left unsent")


def read_live(L, want, what, deadline_s=60.0, until=None):
    """Batches of a live loader until `want` samples (and until() holds): [(partition, offset, id)];
    the iterator is then dropped (its workers shut down). A watchdog fails the test past the deadline."""
    got = []
    timer = threading.Timer(deadline_s, lambda: (print("[test] FAIL: %s: %d of %d after %.0f s" % (
        what, len(got), want, deadline_s), flush=True), os._exit(1)))
    timer.daemon = True
    timer.start()
    try:
        it = iter(L)
        while len(got) < want or (until is not None and not until()):
            batch = next(it)
            ids = batch["input_ids"][:, 0].tolist()
            got += [(p, o, i) for (_, p, o), i in zip(batch["provenance"], ids)]
    finally:
        timer.cancel()
    del it
    return got


def live_strides(ctx):
    """Live mode with more readers than partitions: 2 ranks x 3 workers on 2 partitions. Each rank
    takes one partition and its 3 workers deliver its offsets in strides (o % 3); every worker
    delivers, every offset once, and the ranks resume exactly from their own states (same and
    other num_workers), from the merged state with 3 ranks x 1 worker (ranks sharing a partition), and
    then from those ranks' own states."""
    b = ctx.broker()
    b.create_topic("ls", 2)
    write_spread(b, "ls", range(600))
    marks = epoch_of(b, "ls")
    check(all(hi > 60 for _, hi in marks.values()), "both partitions need records: %s" % marks)
    seen = []
    states = []
    t0 = time.monotonic()
    for r in range(2):
        L = TopicLoader(b.bootstrap, "ls", batch_size=5, rank=r, world_size=2, num_workers=3, mode="live",
                        batches_per_transfer=1)
        # half the partition, and on until every stride delivered (a worker that idles fails here, by
        # the deadline); the DataLoader takes the workers' chunks in turn, so that is soon
        got = read_live(L, marks[r][1] // 2, "rank %d: half its partition, something from every worker" % r,
                        until=lambda: len(L._progress) == 3 and all(v[0] > key[2] for key, v in L._progress.items()))
        units = L._assigned
        check(len(units) == 3 and {u.partition for u in units} == {r} and sorted(u.ks[0] for u in units) == [0, 1, 2]
              and all(u.share == 3 for u in units), "rank %d: not 3 strides of partition %d: %s" % (r, r, units))
        st = L.state_dict()
        rows = [x for x in st["strides"] if x[1] == r]
        check(len(rows) == 3 and all(x[5] > x[2] for x in rows),
              "rank %d: a worker delivered nothing (strides %s): readers beyond the partitions idle" % (r, rows))
        check({p for p, _, _ in got} == {r}, "rank %d read another partition" % r)
        seen += got
        states.append(st)
    print("[test] 2x3 on 2 partitions: every worker delivered (strides), %d samples in %.1f s"
          % (len(seen), time.monotonic() - t0), flush=True)
    write_spread(b, "ls", range(600, 800))
    marks = epoch_of(b, "ls")
    # own states, one with the same workers and one with 2 (strides re-cut from the frontier)
    for r, workers in ((0, 3), (1, 2)):
        L = TopicLoader(b.bootstrap, "ls", batch_size=5, rank=r, world_size=2, num_workers=workers, mode="live")
        L.load_state_dict(states[r])
        done = sum(1 for p, _, _ in seen if p == r)
        seen += read_live(L, marks[r][1] - done, "rank %d resumed with %d workers" % (r, workers))
    offs = [(p, o) for p, o, _ in seen]
    check(len(offs) == len(set(offs)), "resume delivered %d twice" % (len(offs) - len(set(offs))))
    check(set(offs) == {(p, o) for p, (lo, hi) in marks.items() for o in range(lo, hi)}, "resume lost offsets")
    check(sorted(i for *_, i in seen) == list(range(800)), "ids differ from those written")
    print("[test] own-state resume (3 and 2 workers): 800 samples, each once", flush=True)
    # merged halfway states -> 3 ranks x 1 worker: ranks 0 and 1 share partition 0's strides
    merged = TopicLoader.merge_state_dicts(states)
    halfway = set()
    for st in states:
        for t, p, a, b2 in st["delivered"]:
            halfway |= {(p, o) for o in range(a, b2)}
        for t, p, base, share, ks, nxt in st["strides"]:
            halfway |= {(p, o) for o in range(base, nxt) if (o - base) % share in ks}
    loaders = [TopicLoader(b.bootstrap, "ls", batch_size=5, rank=r, world_size=3, num_workers=1, mode="live")
               for r in range(3)]
    for L in loaders:
        L.load_state_dict(merged)
    every = {(p, o) for p, (lo, hi) in marks.items() for o in range(lo, hi)}
    results, stop, stopped = run_ranks(loaders, len(every - halfway), "3x1 merged resume")
    rest = [x for r in results for x in r]
    check(len(rest) == len(set(rest)) and not set(rest) & halfway, "merged resume delivered a sample twice")
    check(halfway | set(rest) == every, "merged resume lost offsets")
    check(all(results), "a rank of 3x1 delivered nothing")
    print("[test] merged resume 3x1 (2 ranks striding partition 0): the rest, each once", flush=True)
    # stop the 3 ranks after one more batch each (new records wake every stride), then resume each
    # from its OWN state: ranks 0 and 1 share partition 0, so their strides continue as they were
    stop.set()
    write_spread(b, "ls", range(800, 830))
    wait_until(lambda: all(e.is_set() for e in stopped), 20, "each 3x1 rank's next batch")
    seen = halfway | {x for r in results for x in r}
    states = [L.state_dict() for L in loaders]
    bad = TopicLoader(b.bootstrap, "ls", batch_size=5, rank=0, world_size=3, num_workers=2, mode="live")
    bad.load_state_dict(states[0])
    try:
        iter(bad)
        check(False, "own state of shared strides loaded into another num_workers")
    except CheckpointMismatch as e:
        check("merge_state_dicts" in str(e) and "num_workers" in str(e), "message: %s" % e)
    write_spread(b, "ls", range(830, 890))
    marks = epoch_of(b, "ls")
    every = {(p, o) for p, (lo, hi) in marks.items() for o in range(lo, hi)}
    loaders = [TopicLoader(b.bootstrap, "ls", batch_size=5, rank=r, world_size=3, num_workers=1, mode="live")
               for r in range(3)]
    for L, st in zip(loaders, states):
        L.load_state_dict(st)
    results, _, _ = run_ranks(loaders, len(every - seen), "3x1 own-state resume")
    rest = [x for r in results for x in r]
    check(len(rest) == len(set(rest)) and not set(rest) & seen, "own-state 3x1 resume delivered a sample twice")
    check(seen | set(rest) == every, "own-state 3x1 resume lost offsets")
    print("[test] own-state resume 3x1 (shared strides kept; 2 workers refused): 890 samples, each once", flush=True)


def run_ranks(loaders, want, what):
    """Iterates each loader in its own thread until `want` samples came in all: per rank
    [(partition, offset)], an event that makes each stop after its next batch, and per rank an
    event set once it stopped (its iterator dropped, so state_dict() is what it appended)."""
    results, failed = [[] for _ in loaders], []
    stop, stopped = threading.Event(), [threading.Event() for _ in loaders]
    # Each rank's iterator (its plan, then the fork of its DataLoader workers) is made here, one
    # after another, before any thread runs: in training each rank is its own process, and a fork
    # while another thread of this process is inside librdkafka (a rank planning) could give the
    # worker a lock that no thread of the child will ever release.
    pending = [iter(L) for L in loaders]

    def run(i):
        it, pending[i] = pending[i], None
        try:
            for batch in it:
                results[i] += [(p, o) for _, p, o in batch["provenance"]]
                if stop.is_set():
                    break
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            failed.append("rank %d: %r" % (i, e))
        finally:
            it = None  # dropped: its workers stop, as a rank's loop ending does
            stopped[i].set()
    for i in range(len(loaders)):
        threading.Thread(target=run, args=(i,), daemon=True).start()
    t0 = time.monotonic()
    try:
        wait_until(lambda: failed or sum(len(x) for x in results) >= want, RANKS_BOUND_S,
                   "%s: %d samples" % (what, want))
    except harness.TestFailure:
        print("[test] %s: per rank %s samples after %.0f s" % (what, [len(x) for x in results], time.monotonic() - t0),
              flush=True)
        raise
    print("[test] %s: %d samples in %.1f s" % (what, want, time.monotonic() - t0), flush=True)
    check(not failed, "%s failed: %s" % (what, failed))
    return results, stop, stopped


def group_offsets(b, group):
    """{(topic, partition): (offset, metadata)} of a group (OffsetFetch via kafka-python's admin),
    and the group's state and member count (DescribeGroups)."""
    from kafka import KafkaAdminClient
    a = KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=10000)
    try:
        offs = {(tp.topic, tp.partition): (om.offset, om.metadata)
                for tp, om in a.list_consumer_group_offsets(group).items()}
        desc = a.describe_consumer_groups([group])[0]
        return offs, desc.state, len(desc.members)
    finally:
        a.close()


def commit(ctx):
    """commit_group: the loader commits the last state_dict()'s delivered prefix with the checkpoint
    id as OffsetCommit metadata, without joining the group; lag tools see it; resuming comes from the
    checkpoint, not the group; a rank never commits past what it can prove was delivered."""
    from confluent_kafka import Consumer, TopicPartition
    b = ctx.broker()
    b.create_topic("cm", 2)
    write_spread(b, "cm", range(400))
    marks = epoch_of(b, "cm")
    # 2 ranks x 1 worker: a whole partition each (unshuffled, in offset order)
    L = TopicLoader(b.bootstrap, "cm", batch_size=10, rank=0, world_size=2, num_workers=1, commit_group="trainers")
    it = iter(L)
    got = [o for _ in range(5) for _, _, o in next(it)["provenance"]]
    st = L.state_dict()
    t0 = time.monotonic()
    done = L.commit("ck-5")
    took = time.monotonic() - t0
    part = st["assigned"][0][1]
    check(done == {("cm", part): max(got) + 1}, "committed %s, delivered up to %d" % (done, max(got)))
    _ = [next(it) for _ in range(3)]  # delivered after the checkpoint: not in its commit
    check(L.commit("ck-5") == done, "commit() committed the live cursor, not the last state_dict()")
    offs, state, members = group_offsets(b, "trainers")
    check(offs.get(("cm", part), (None,))[0] == max(got) + 1, "the group holds %s" % offs)
    check("checkpoint=ck-5" in offs[("cm", part)][1] and "epoch=0" in offs[("cm", part)][1],
          "metadata %r" % offs[("cm", part)][1])
    check(members == 0 and state in ("Empty", ""), "the loader joined the group: %s, %d member(s)" % (state, members))
    # a lag tool's view: committed offset vs the log end (confluent-kafka committed(), no join)
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "trainers", "enable.auto.commit": False})
    try:
        co = c.committed([TopicPartition("cm", part)], timeout=10)[0].offset
    finally:
        c.close()
    lag = marks[part][1] - co
    check(lag == marks[part][1] - 50, "lag %d" % lag)
    print("[test] checkpoint ck-5 committed in %.2f s: cm[%d] offset %d metadata %r, lag %d, group %s with no "
          "members" % (took, part, co, offs[("cm", part)][1], lag, state), flush=True)
    del it
    # resuming comes from the checkpoint even when the group says otherwise
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "trainers", "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition("cm", part, 3)], asynchronous=False)
    finally:
        c.close()
    L2 = TopicLoader(b.bootstrap, "cm", batch_size=10, rank=0, world_size=2, num_workers=1, commit_group="trainers")
    L2.load_state_dict(st)
    rest = [o for batch in L2 for _, _, o in batch["provenance"]]
    check(sorted(rest) == list(range(max(got) + 1, marks[part][1])), "resume did not start at the checkpoint")
    L2.state_dict()
    L2.commit("ck-end")
    offs, _, _ = group_offsets(b, "trainers")
    check(offs[("cm", part)][0] == marks[part][1] and "checkpoint=ck-end" in offs[("cm", part)][1],
          "end of epoch: %s" % offs)
    # 3 ranks x 1 worker on 2 partitions: offset ranges, partition 0 split between ranks 0 and 1.
    # Rank 1 finishes first; rank 0's range starts the partition, so only rank 0 may commit it.
    Ls = [TopicLoader(b.bootstrap, "cm", batch_size=10, rank=r, world_size=3, num_workers=1,
                      commit_group="split") for r in (1, 0)]
    ends = {}
    for Lr in Ls:
        n = sum(len(batch["provenance"]) for batch in Lr)
        check(n > 0, "rank %d delivered nothing" % Lr.rank)
        Lr.state_dict()
        ends[Lr.rank] = Lr.commit("ck-split")
        if Lr.rank == 1:
            offs, _, _ = group_offsets(b, "split")
            check(("cm", 0) not in offs and ("cm", 0) not in ends[1],
                  "rank 1 committed partition 0 though ranks before it had delivered nothing: %s" % offs)
    offs, _, _ = group_offsets(b, "split")
    r0 = [a for t, p, a, b2 in Ls[1].state_dict()["assigned"] if p == 0]
    r0_end = max(b2 for t, p, a, b2 in Ls[1].state_dict()["assigned"] if p == 0)
    check(min(r0) == marks[0][0] and offs[("cm", 0)][0] == r0_end < marks[0][1],
          "partition 0: committed %s, rank 0's range ends at %d of %d" % (offs.get(("cm", 0)), r0_end, marks[0][1]))
    print("[test] split partition: rank 1 (middle range) did not commit it; rank 0 committed %d of %d (its prefix)"
          % (r0_end, marks[0][1]), flush=True)


def scrape_pct(port):
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read().decode()
    for line in text.splitlines():
        if line.startswith("ck_train_data_loading_percent{"):
            return float(line.rsplit(" ", 1)[1]), text
    return None, text


def starvation(ctx):
    b = ctx.broker()
    b.create_topic("st", 2)
    write(b, "st", range(6000))
    port = harness.free_port()
    L = TopicLoader(b.bootstrap, "st", batch_size=16, num_workers=1, mode="live", metrics_port=port,
                    metrics_window_s=2.0)
    steps = [0]
    stop = threading.Event()

    def train():
        for _batch in L:
            time.sleep(0.02)  # the "GPU step" of this simulated trainer: its compute, not a test wait
            steps[0] += 1
            if stop.is_set():
                return
    th = threading.Thread(target=train, daemon=True)
    th.start()
    seen = {}

    def low():
        pct, text = scrape_pct(port)
        seen["low"] = pct
        return steps[0] > 120 and pct is not None and pct < 10
    wait_until(low, 40, "data_loading %% < 10 while data is plentiful", interval=0.2)
    _, text = scrape_pct(port)
    check('ck_train_samples_total{rank="0",topic="st"}' in text, "samples counter missing:\n" + text[-1500:])
    print("[test] plentiful: data_loading %.1f %% after %d steps" % (seen["low"], steps[0]), flush=True)

    def high():
        pct, _ = scrape_pct(port)
        seen["high"] = pct
        return steps[0] >= 6000 // 16 - 1 and pct is not None and pct > 90
    wait_until(high, 60, "data_loading %% > 90 once the producer stopped", interval=0.2)
    print("[test] producer stopped: data_loading %.1f %% (all %d steps done)" % (seen["high"], steps[0]), flush=True)
    stop.set()
    write(b, "st", range(6000, 6016))  # wake the trainer so its thread ends
    th.join(30)


def timed(what, bound, fn, exc, must):
    t0 = time.monotonic()
    try:
        fn()
    except exc as e:
        dt = time.monotonic() - t0
        check(dt < bound, "%s took %.1f s (bound %.0f s)" % (what, dt, bound))
        for m in must:
            check(m in str(e), "%s: message %r lacks %r" % (what, str(e), m))
        print("[test] %s: %s in %.1f s: %s" % (what, type(e).__name__, dt, e), flush=True)
        return
    raise harness.TestFailure("%s: no %s raised" % (what, exc.__name__))


def delete_records(b, topic, partition, offset):
    body = kw.array([(topic, [(partition, offset)])],
                    lambda t: kw.string(t[0]) + kw.array(t[1], lambda p: kw.i32(p[0]) + kw.i64(p[1]))) + kw.i32(10000)
    with b.conn() as c:
        d = c.request(21, 0, body)
    d.i32()
    res = d.array(lambda d: (d.string(), d.array(lambda d: (d.i32(), d.i64(), d.i16()))))
    check(res[0][1][0][2] == 0, "DeleteRecords: %r" % (res,))


def errors(ctx):
    b = ctx.broker()
    b.create_topic("ok", 1)
    write(b, "ok", range(100))
    timed("unknown topic", 20, lambda: list(TopicLoader(b.bootstrap, "no-such-topic", batch_size=8, timeout_s=5)),
          TopicNotFound, ["no-such-topic", "create it"])
    with b.conn() as c:
        md = c.metadata(None)
    check("no-such-topic" not in [t["name"] for t in md["topics"]], "the loader created the topic")
    dead = "127.0.0.1:%d" % harness.free_port()
    timed("unreachable broker", 20, lambda: list(TopicLoader(dead, "ok", batch_size=8, timeout_s=5)),
          BrokerUnreachable, [dead])
    # A checkpoint part-way through "ok".
    L = TopicLoader(b.bootstrap, "ok", batch_size=8)
    it = iter(L)
    next(it)
    next(it)
    st = L.state_dict()
    check(st["delivered"] == [["ok", 0, 0, 16]], "cursor after two batches: %r" % st["delivered"])
    b.create_topic("other", 1)
    timed("checkpoint of another topic", 5,
          lambda: TopicLoader(b.bootstrap, "other", batch_size=8).load_state_dict(st), CheckpointMismatch,
          ["ok", "other"])
    delete_records(b, "ok", 0, 40)
    L2 = TopicLoader(b.bootstrap, "ok", batch_size=8, timeout_s=5)
    L2.load_state_dict(st)
    timed("offsets below the log start", 20, lambda: list(L2), OffsetsDeleted, ["'ok'", "16", "40", "set_epoch"])


SCENARIOS = {"exactly_once": exactly_once, "resume": resume, "live": live, "starvation": starvation,
             "errors": errors, "distributed": distributed, "live_strides": live_strides,
             "commit": commit}


def main(ctx):
    check(len(ctx.args) == 1 and ctx.args[0] in SCENARIOS, "scenario: one of %s" % sorted(SCENARIOS))
    want = os.environ.get("CK_TRAINING_CLIENT")
    if want:  # run with a given confluent-kafka (PYTHONPATH): make sure it is the one imported
        import confluent_kafka
        v = confluent_kafka.version()
        v = v[0] if isinstance(v, tuple) else v
        check(v == want, "confluent-kafka %s imported, %s wanted (PYTHONPATH=%s)"
              % (v, want, os.environ.get("PYTHONPATH")))
        print("client: confluent-kafka %s, librdkafka %s" % (v, confluent_kafka.libversion()[0]), flush=True)
    SCENARIOS[ctx.args[0]](ctx)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=150)
