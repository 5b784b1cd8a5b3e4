"""deploy/training/tests/test_plan.py: ciuickafka_train's pure parts, without a broker.

    /usr/bin/python3 deploy/training/tests/test_plan.py

- records: encode/decode round trips (uint16 and uint32 ids), decode_batch's
  one-frombuffer path and its mixed-length/width path, JSON values, bad values.
- plan.split: for random partition counts, sizes and reader counts (fewer and
  more readers than partitions), every offset of the epoch is in exactly one
  reader's units; whole partitions when there are enough.
- plan.remaining + split after a partial delivery with shuffle windows: the
  rest is covered exactly once, windows come back as window units with their k.
- plan.live_layout: every reader busy when readers outnumber partitions, each
  partition's residues 0..share-1 exactly once, a partition's rank not
  depending on num_workers when partitions >= ranks.
- plan.live_frontier: against a brute-force set of delivered offsets from
  random strides and intervals: the frontier is the first undelivered offset,
  and the exclusions are exactly what was delivered above it.
- consumer_config: fetch.queue.backoff.ms only for librdkafka >= 2.3.0 (older
  clients refuse the key), the user's keys over the defaults.
- ring.Ring: a chunk's fields round-trip through a slot, a chunk larger than
  a slot is refused (sent as tensors), slots go in order (an out-of-order
  descriptor raises), a forked writer waits while every slot is held and
  resumes when one is freed, and unblock() releases a waiting writer.
- TopicLoader.merge_state_dicts: union of delivered intervals; refusals
  (different epochs, a missing rank, another topic) name the problem.
Exits 0 when all pass, prints the first failure otherwise.
"""

import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import numpy as np  # noqa: E402
from ciuickafka_train import CheckpointMismatch, TopicLoader, records  # noqa: E402
from ciuickafka_train.plan import group_rows, live_frontier, live_layout, remaining, split, to_rows  # noqa: E402


def test_records():
    v = records.encode([1, 2, 65535])
    assert v[:4] == b"CT\x01\x02" and len(v) == 8 + 6
    w, a = records.decode_one(v)
    assert w == 2 and a.tolist() == [1, 2, 65535]
    v4 = records.encode(np.array([70000, 0], np.int64))
    assert records.decode_one(v4)[0] == 4 and records.decode_one(v4)[1].tolist() == [70000, 0]
    same = [records.encode([i] * 5) for i in range(10)]
    w, lens, data = records.decode_batch(same)
    assert w == 2 and lens.tolist() == [5] * 10 and data.view(np.uint16).reshape(10, 5)[:, 0].tolist() == list(range(10))
    mixed = [records.encode([1, 2]), records.encode([70000]), b'{"input_ids": [3, 4, 5]}', b"[6]"]
    w, lens, data = records.decode_batch(mixed)
    assert w == 4 and lens.tolist() == [2, 1, 3, 1] and data.view(np.uint32).tolist() == [1, 2, 70000, 3, 4, 5, 6]
    for bad in (b"CT\x01\x03\x01\x00\x00\x00ab", b"\x00\x01garbage"):
        try:
            records.decode_batch([bad])
            raise AssertionError("accepted %r" % bad)
        except records.RecordError:
            pass
    try:
        records.encode([1, 2], seq_len=3)
        raise AssertionError("seq_len not enforced")
    except ValueError:
        pass


def covered(plan):
    seen = {}
    for units in plan:
        for u in units:
            for o in range(u.lo, u.hi):
                k = (u.topic, u.partition, o)
                seen[k] = seen.get(k, 0) + 1
    return seen


def test_split():
    rng = random.Random(5)
    for _ in range(200):
        P = rng.randint(1, 9)
        R = rng.randint(1, 40)
        free = {("t", p): [[0, rng.randint(0, 60)]] for p in range(P)}
        plan = split(free, [], R, ["t"])
        assert len(plan) == R
        seen = covered(plan)
        want = {("t", p, o) for (t, p), ivs in free.items() for a, b in ivs for o in range(a, b)}
        assert set(seen) == want and all(v == 1 for v in seen.values()), (P, R)
        if P >= R:
            for units in plan:  # whole partitions
                for u in units:
                    assert [u.lo, u.hi] == free[("t", u.partition)][0]
        elif sum(b for (_, _), [[_, b]] in free.items()) >= R:
            sizes = [sum(u.hi - u.lo for u in units) for units in plan]
            assert max(sizes) - min(sizes) <= 1, sizes


def test_resume_split():
    snap = {("t", 0): [[0, 100]], ("t", 1): [[10, 50]]}
    delivered = [["t", 0, 0, 20], ["t", 0, 40, 45], ["t", 1, 10, 30]]
    windows = [["t", 0, 20, 30, 4]]
    free, wins = remaining(snap, delivered, windows)
    assert free == {("t", 0): [[30, 40], [45, 100]], ("t", 1): [[30, 50]]}, free
    assert len(wins) == 1 and wins[0].skip == 4 and wins[0].window
    for R in (1, 2, 3, 7):
        plan = split(free, wins, R, ["t"])
        seen = covered(plan)
        want = {("t", 0, o) for o in list(range(20, 40)) + list(range(45, 100))} | {("t", 1, o) for o in range(30, 50)}
        assert set(seen) == want and all(v == 1 for v in seen.values())
    assert to_rows(group_rows([["t", 0, 5, 9], ["t", 0, 0, 5], ["t", 1, 1, 2]])) == [["t", 0, 0, 9], ["t", 1, 1, 2]]


def state(rank, world, delivered, epoch=0, topics=("t",)):
    return {"format": "ciuickafka_train/1", "mode": "epoch", "topics": list(topics), "epoch": epoch,
            "complete": False, "seed": 0, "shuffle": False, "shuffle_window": 4096,
            "snapshot": [["t", 0, 0, 100]], "delivered": delivered, "windows": [], "assigned": None,
            "rank": rank, "world_size": world, "num_workers": 2, "merged": False}


def test_merge():
    m = TopicLoader.merge_state_dicts([state(1, 2, [["t", 0, 50, 60]]), state(0, 2, [["t", 0, 0, 10]])])
    assert m["merged"] and m["delivered"] == [["t", 0, 0, 10], ["t", 0, 50, 60]]
    for states, word in (([state(0, 2, []), state(1, 2, [], epoch=1)], "epochs"),
                         ([state(0, 2, [])], "one state per rank"),
                         ([state(0, 2, []), state(1, 2, [], topics=("u",))], "topics")):
        try:
            TopicLoader.merge_state_dicts(states)
            raise AssertionError("merged %r" % word)
        except CheckpointMismatch as e:
            assert word in str(e), str(e)


def test_live_layout():
    for P in range(1, 7):
        for world in range(1, 5):
            for W in range(1, 5):
                lay = live_layout(list(range(P)), world, W)
                res = {}
                for r, items in lay.items():
                    for p, share, ks in items:
                        res.setdefault(p, []).append((share, ks))
                assert sorted(res) == list(range(P)), (P, world, W, lay)
                for p, lst in res.items():
                    share = lst[0][0]
                    assert all(s == share for s, _ in lst) and sorted(k for _, ks in lst for k in ks) == list(
                        range(share)), (P, world, W, p, lst)
                if world * W > P:
                    assert len(lay) == world * W, (P, world, W, lay)  # nobody idles
                if P >= world:
                    rank_of = {p: r // W for r, items in lay.items() for p, _, _ in items}
                    assert rank_of == {p: p % world for p in range(P)}, (P, world, W, rank_of)


def test_live_frontier():
    rng = random.Random(7)
    for _ in range(300):
        start = rng.randrange(0, 5)
        done = set()
        ivs = []
        for _ in range(rng.randrange(0, 3)):
            a = rng.randrange(0, 40)
            b = a + rng.randrange(1, 15)
            ivs.append([a, b])
            done |= set(range(a, b))
        strides = []
        for _ in range(rng.randrange(0, 3)):
            base, share = rng.randrange(0, 30), rng.randrange(1, 5)
            for k in range(share):
                if rng.random() < 0.8:
                    nxt = base + rng.randrange(0, 30)
                    strides.append((base, share, (k,), nxt))
                    done |= {o for o in range(base, nxt) if (o - base) % share == k}
        from ciuickafka_train.plan import merge_intervals
        m, ex = live_frontier(start, merge_intervals(ivs), strides)
        want = start
        while want in done:
            want += 1
        assert m == want, (start, ivs, strides, m, want)
        got = {o for a, b in ex for o in range(a, b)}
        assert got == {o for o in done if o > m}, (start, ivs, strides, m, ex)


def test_consumer_config():
    from ciuickafka_train.reader import consumer_config
    old = consumer_config("b:9092", "0-0", "epoch", {}, libversion=0x020002ff)  # Debian 12's 2.0.2
    assert "fetch.queue.backoff.ms" not in old, old  # 2.0.2 refuses an unknown key
    new = consumer_config("b:9092", "0-0", "epoch", {}, libversion=0x020300ff)
    assert new["fetch.queue.backoff.ms"] == 50, new
    assert new["fetch.message.max.bytes"] == 1 << 20 and new["fetch.wait.max.ms"] == 500, new
    assert consumer_config("b:9092", "0-0", "live", {}, libversion=0)["fetch.wait.max.ms"] == 100
    mine = consumer_config("b:9092", "0-0", "epoch", {"fetch.message.max.bytes": 8 << 20}, libversion=0)
    assert mine["fetch.message.max.bytes"] == 8 << 20, mine  # the user's keys win


def test_ring():
    import multiprocessing as mp
    import time
    from ciuickafka_train.ring import Ring
    r = Ring(2, 256)
    a, b = np.arange(10, dtype=np.uint8), np.arange(3, dtype=np.int64)
    d = r.put([[a, a[:4]], [b], []])
    assert d is not None and d[0] == 0, d
    x, y, z = r.view(d)
    assert x.tolist() == a.tolist() + a[:4].tolist() and y.tolist() == [0, 1, 2] and z.size == 0
    assert not x.flags.writeable
    r.release()
    assert r.put([[np.zeros(300, np.uint8)]]) is None  # larger than a slot: the caller ships tensors
    # slots are used in order; a descriptor out of order is an error, not silent corruption
    d1, d2 = r.put([[a]]), r.put([[b]])
    assert (d1[0], d2[0]) == (1, 0), (d1, d2)
    try:
        r.view(d2)
        raise AssertionError("out-of-order descriptor accepted")
    except RuntimeError:
        pass
    assert r.view(d1)[0].tolist() == a.tolist()
    r.release()
    r.release()
    ctx = mp.get_context("fork")

    def writer_on_full_ring():
        """A ring whose one slot is held, and a forked writer putting a chunk into it."""
        ring = Ring(1, 128)
        ring.put([[a]])  # the one slot, not yet freed
        done = ctx.Event()

        def writer():
            ring.put([[b]])
            done.set()

        proc = ctx.Process(target=writer)
        proc.start()
        return ring, done, proc

    # the writer waits while every slot is held, and goes on when the trainer frees one
    full, done, p = writer_on_full_ring()
    assert not done.wait(0.3), "the writer overwrote a slot still held"
    full.view((0, [(0, "|u1", 10)]))
    full.release()
    assert done.wait(10), "the writer did not resume once a slot was freed"
    p.join(10)
    # unblock(): a writer stuck on a full ring finishes (its chunk is dropped) at shutdown
    stuck, done, p = writer_on_full_ring()
    t0 = time.monotonic()
    stuck.unblock()
    assert done.wait(10) and time.monotonic() - t0 < 10, "unblock() left the writer waiting"
    p.join(10)


def main():
    for name, fn in sorted(globals().items()):
        if name.startswith("test_"):
            fn()
            print("ok  %s" % name)
    print("PASS")


if __name__ == "__main__":
    main()
