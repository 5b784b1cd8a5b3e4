"""ciuickafka_train/plan.py: the topology-free cursor and the split of work.

Pure logic, no I/O (tested without a broker):

* An epoch is a snapshot {(topic, partition): (start, end)}: the log start
  and end offsets when the epoch began (ListOffsets).
* The cursor is what was DELIVERED to the trainer, as offset intervals per
  (topic, partition) (`delivered`), plus the shuffle windows delivered in
  part (`windows`: topic, partition, lo, hi, k = how many of the window's
  shuffled order were delivered). It says nothing of ranks or workers, so
  states of all ranks merge by union and what remains (snapshot minus
  delivered) can be split over any number of readers.
* A unit of work is (topic, partition, lo, hi, skip, window): read the
  records with lo <= offset < hi; a window unit (window=True) is one
  shuffle window whose first `skip` records in shuffled order were already
  delivered.
* `split` deals the remaining intervals of each topic over R readers:
  whole partitions (greedy by size) when a topic has at least R partitions
  with work, else contiguous offset ranges of equal size cut across the
  partitions, so readers may outnumber partitions. Deterministic: the same
  inputs give the same units on every rank.

Functions only, no shared state: thread-safe.
"""

import random
from collections import namedtuple

INF = 1 << 62

Unit = namedtuple("Unit", "topic partition lo hi skip window")


def merge_intervals(iv):
    """Sorted, coalesced list of [a, b) pairs."""
    out = []
    for a, b in sorted((int(a), int(b)) for a, b in iv if b > a):
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1][1] = b
        else:
            out.append([a, b])
    return out


def subtract(a, b, taken):
    """[a, b) minus the sorted, coalesced intervals `taken`."""
    out = []
    cur = a
    for x, y in taken:
        if y <= cur:
            continue
        if x >= b:
            break
        if x > cur:
            out.append([cur, min(x, b)])
        cur = max(cur, y)
        if cur >= b:
            break
    if cur < b:
        out.append([cur, b])
    return out


def group_rows(rows):
    """[[topic, partition, a, b], ...] -> {(topic, partition): coalesced intervals}."""
    d = {}
    for t, p, a, b in rows:
        d.setdefault((t, int(p)), []).append((a, b))
    return {k: merge_intervals(v) for k, v in d.items()}


def to_rows(by_tp):
    return [[t, p, a, b] for (t, p) in sorted(by_tp) for a, b in by_tp[(t, p)]]


def remaining(ranges, delivered_rows, window_rows):
    """What is left to deliver. ranges: {(t, p): [[a, b], ...]} to cover;
    delivered_rows: [[t, p, a, b]]; window_rows: [[t, p, lo, hi, k]].
    Returns ({(t, p): free intervals}, [window Units])."""
    taken = group_rows(list(delivered_rows) + [[t, p, lo, hi] for t, p, lo, hi, _ in window_rows])
    free = {}
    for tp, ivs in ranges.items():
        out = []
        for a, b in ivs:
            out += subtract(a, b, taken.get(tp, []))
        if out:
            free[tp] = out
    windows = [Unit(t, int(p), int(lo), int(hi), int(k), True) for t, p, lo, hi, k in sorted(window_rows)]
    return free, windows


def _count(ivs):
    return sum(b - a for a, b in ivs)


def split(free, windows, readers, topics):
    """Deals the work over `readers` readers. Returns a list (one per reader)
    of lists of Units, ordered by topic (in `topics` order) then partition."""
    out = [[] for _ in range(readers)]
    for i, w in enumerate(windows):
        out[i % readers].append(w)
    for t in topics:
        parts = sorted((p, ivs) for (tt, p), ivs in free.items() if tt == t and _count(ivs) > 0)
        if not parts:
            continue
        if len(parts) >= readers:
            load = [0] * readers
            for p, ivs in sorted(parts, key=lambda x: (-_count(x[1]), x[0])):
                r = min(range(readers), key=lambda i: (load[i], i))
                load[r] += _count(ivs)
                out[r] += [Unit(t, p, a, b, 0, False) for a, b in ivs]
            continue
        flat = [(p, a, b) for p, ivs in parts for a, b in ivs]
        total = sum(b - a for _, a, b in flat)
        # reader r takes the records with cumulative index in [r*total//R, (r+1)*total//R)
        cum = 0
        r = 0
        for p, a, b in flat:
            pos = a
            while pos < b:
                hi_cum = (r + 1) * total // readers
                take = min(b - pos, hi_cum - cum)
                if take > 0:
                    out[r].append(Unit(t, p, pos, pos + take, 0, False))
                    pos += take
                    cum += take
                if cum >= hi_cum and r < readers - 1:
                    r += 1
    for r in range(readers):
        order = {t: i for i, t in enumerate(topics)}
        out[r].sort(key=lambda u: (order[u.topic], not u.window, u.partition, u.lo))
    return out


def shuffle_units(units, seed, epoch, reader):
    """Shuffled order of one reader's units (window units stay first)."""
    rng = random.Random("units:%d:%d:%d" % (seed, epoch, reader))
    w = [u for u in units if u.window]
    rest = [u for u in units if not u.window]
    rng.shuffle(rest)
    return w + rest


def window_permutation(seed, epoch, topic, partition, lo, hi, n):
    """The shuffled order of a window of n records at offsets [lo, hi)."""
    perm = list(range(n))
    random.Random("window:%d:%d:%s:%d:%d:%d" % (seed, epoch, topic, partition, lo, hi)).shuffle(perm)
    return perm
