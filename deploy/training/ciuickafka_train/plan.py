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

# share/ks/base/exclude are live mode's strides: the unit delivers the offsets o >= lo with
# (o - base) % share in ks, except those in `exclude` (sorted [a, b) pairs, delivered before).
# Epoch units keep the defaults (share 1: every offset).
Unit = namedtuple("Unit", "topic partition lo hi skip window share ks base exclude",
                  defaults=(1, (0,), 0, ()))


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


# --- live mode ------------------------------------------------------------------------

def stride_first_free(base, share, k, nxt, s):
    """The first offset >= s of residue k (mod share, from base) that a stride which
    delivered its offsets below nxt has not delivered."""
    o = max(s, nxt, base)
    return o + ((base + k - o) % share)


def live_frontier(start, intervals, strides):
    """Where the delivered prefix of one partition ends, and what was delivered above it.
    start: the first offset that can be read (log start); intervals: coalesced delivered
    [a, b) pairs; strides: [(base, share, ks, next)] (a stride delivered its residues below
    next). Returns (m, exclude): every offset in [start, m) was delivered, m was not, and
    `exclude` (coalesced pairs) is what was delivered above m."""
    m = start
    while True:
        before = m
        for a, b in intervals:
            if a <= m < b:
                m = b
        groups = {}
        for base, share, ks, nxt in strides:
            g = groups.setdefault((base, share), {})
            for k in ks:
                g[k] = max(g.get(k, base), nxt)
        for (base, share), nexts in groups.items():
            if m < base:
                continue
            # the run from m that every residue covers ends at the first offset one of them lacks
            m = min(stride_first_free(base, share, k, nexts.get(k, base), m) for k in range(share))
        if m == before:
            break
    above = [[a, b] for a, b in intervals if b > m]
    for base, share, ks, nxt in strides:
        for k in ks:
            o = stride_first_free(base, share, k, base, m)  # its first offset >= m
            while o < nxt:
                above.append([o, o + 1])
                o += share
    return m, merge_intervals([[max(a, m + 1), b] for a, b in above])


def live_layout(partitions, world, workers):
    """Live mode's readers for one topic: {rank*workers + w: [(partition, share, ks)]}.
    Partitions are dealt over RANKS first (partition i to rank i % world), so which rank
    holds a partition does not depend on num_workers; inside a rank, whole partitions go
    round-robin over its workers while it has at least as many as workers, else each
    partition is cut into strides: worker w of the `share` workers on partition p delivers
    the offsets o with (o - base) % share == its residue. With fewer partitions than ranks,
    rank r strides partition r * P // world together with the other ranks on it."""
    P = len(partitions)
    out = {}
    if P == 0:
        return out
    if P >= world:
        for r in range(world):
            mine = [p for i, p in enumerate(partitions) if i % world == r]
            if len(mine) >= workers:
                for i, p in enumerate(mine):
                    out.setdefault(r * workers + i % workers, []).append((p, 1, (0,)))
            else:
                on = [mine[w * len(mine) // workers] for w in range(workers)]
                for w, p in enumerate(on):
                    out.setdefault(r * workers + w, []).append((p, on.count(p), (on[:w].count(p),)))
        return out
    on = [partitions[r * P // world] for r in range(world)]
    for r, p in enumerate(on):
        first = on.index(p)
        share = on.count(p) * workers
        for w in range(workers):
            out.setdefault(r * workers + w, []).append((p, share, ((r - first) * workers + w,)))
    return out
