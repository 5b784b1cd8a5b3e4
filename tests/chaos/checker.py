"""tests/chaos/checker.py: finds safety anomalies in a chaos run's history.

A history is a file of JSON lines, one event each, written by run_chaos.py
(or by hand, as test_checker.py does). The events:

  {"type": "invoke", "process": "p0", "value": "p0-17"}
      producer p0 asked to send value v (values are unique per run);
  {"type": "ok", "process": "p0", "value": "p0-17", "partition": 1, "offset": 42}
      its delivery report: acknowledged at (partition, offset); offset null
      (or negative) = acknowledged without an offset: it must be in the
      final read, but nothing is compared with its offset;
  {"type": "fail", "process": "p0", "value": "p0-17", "definite": true|false, "error": "..."}
      a definite failure (the record was never written) or an indefinite one
      (a timeout: it may or may not have been written);
  {"type": "poll", "process": "c0", "records": [[partition, offset, value], ...]}
      what one poll of consumer c0 returned, in delivery order;
  {"type": "assign" | "revoke" | "lost" | "seek", "process": "c0", "partitions": [0, 2]}
      markers: after one of these the consumer may legitimately restart a
      partition at any offset;
  {"type": "final", "partition": 0, "log_start": 0, "end": 120, "records": [[offset, value, session], ...]}
      the final read of one partition, from the log start to the end offset,
      session ("producerId:epoch" of the record's batch, optional) telling a
      client's re-send in a new producer session from a duplicate,
      taken after the faults were healed and every producer had flushed.
Any other type (nemesis, error, ...) is kept for the record and ignored here.

Anomalies (every one is a safety violation; exit status 1 if any is found):

  inconsistent-offsets  one (partition, offset) seen holding two values
  duplicate             one value at two (partition, offset)s (allowed with
                        allow_duplicates, for a non-idempotent producer; copies
                        whose final-read sessions all differ are counted as
                        re-sends in a new producer session instead)
  lost-write            acknowledged at offset a, absent from the final read,
                        although the final read holds an offset b > a
  unseen                acknowledged, absent from the final read, and no
                        offset at or past it was read there either
  acked-offset-mismatch a value read at an offset other than its ack's
  nonmonotonic-send     one producer's later acknowledged send landed at a
                        lower offset of the same partition than an earlier one
  poll-skip             a consumer's consecutive records of one partition jump
                        over offsets that exist in the log, with no marker
  nonmonotonic-poll     a consumer's records of one partition go backwards
                        (or repeat), with no marker in between
  G1a                   a definitely failed send is visible in some read
  phantom               a value read that no producer ever invoked

Standard library only. As a program:
  checker.py HISTORY [--allow-duplicates] [--json SUMMARY.json]
prints the human summary and exits 1 on any anomaly.
"""

import argparse
import collections
import json
import sys

ANOMALIES = ("inconsistent-offsets", "duplicate", "lost-write", "unseen",
             "acked-offset-mismatch", "nonmonotonic-send", "poll-skip",
             "nonmonotonic-poll", "G1a", "phantom")
MARKERS = ("assign", "revoke", "lost", "seek")
MAX_EXAMPLES = 5


def load(path):
    events = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                events.append(json.loads(line))
            except ValueError as e:
                raise ValueError("%s:%d: not JSON: %s" % (path, n, e))
    return events


class Report:
    def __init__(self):
        self.counts = collections.Counter()
        self.examples = collections.defaultdict(list)

    def add(self, kind, example):
        assert kind in ANOMALIES, kind
        self.counts[kind] += 1
        if len(self.examples[kind]) < MAX_EXAMPLES:
            self.examples[kind].append(example)


def check(events, allow_duplicates=False):
    """Returns the summary dict: stats, anomalies {kind: {count, examples}}, valid."""
    rep = Report()
    invoked = {}          # value -> process
    invoke_index = {}     # value -> its position among its process's invokes
    acked = {}            # value -> (partition, offset)
    acked_somewhere = {}  # value -> partition, acknowledged with no offset
    failed = {}           # value -> definite?
    finals = {}           # partition -> final event
    # Every observation of a value: (partition, offset, value, source).
    seen = []
    # (partition, offset) -> the producer session ("id:epoch") of the batch
    # holding it, where the final read gives it.
    session_at = {}
    per_process_invokes = collections.Counter()
    stats = collections.Counter()

    for i, e in enumerate(events):
        t = e.get("type")
        if t == "invoke":
            v = e["value"]
            invoked[v] = e["process"]
            invoke_index[v] = per_process_invokes[e["process"]]
            per_process_invokes[e["process"]] += 1
            stats["invoked"] += 1
        elif t == "ok":
            if e.get("offset") is None or e["offset"] < 0:
                # Acknowledged without an offset: librdkafka does this for an
                # idempotent batch whose request timed out when a later batch
                # of the same producer succeeds (so the earlier one must be
                # persisted), and for DUPLICATE_SEQUENCE_NUMBER answers. It
                # must still be in the log; there is no offset to compare.
                acked_somewhere[e["value"]] = e["partition"]
                stats["acked-without-offset"] += 1
            else:
                acked[e["value"]] = (e["partition"], e["offset"])
            stats["acked"] += 1
        elif t == "fail":
            failed[e["value"]] = bool(e.get("definite"))
            stats["failed-definite" if e.get("definite") else "failed-indefinite"] += 1
        elif t == "poll":
            for p, o, v in e["records"]:
                seen.append((p, o, v, "poll %s #%d" % (e["process"], i)))
            stats["polled-records"] += len(e["records"])
        elif t == "final":
            finals[e["partition"]] = e
            for r in e["records"]:
                o, v = r[0], r[1]
                seen.append((e["partition"], o, v, "final"))
                if len(r) > 2 and r[2] is not None:
                    session_at[(e["partition"], o)] = r[2]
            stats["final-records"] += len(e["records"])

    # One offset, one value; one value, one offset.
    at = collections.defaultdict(set)      # (p, o) -> values
    where = collections.defaultdict(set)   # value -> (p, o)s
    for p, o, v, _ in seen:
        at[(p, o)].add(v)
        where[v].add((p, o))
    for (p, o), vs in sorted(at.items()):
        if len(vs) > 1:
            rep.add("inconsistent-offsets", {"partition": p, "offset": o, "values": sorted(vs)})
    # Copies written by different producer sessions (a new producer id, or
    # the same id at a bumped epoch) are the client's re-sends: idempotence
    # holds within one session, and a new epoch starts a new sequence that
    # any broker, Kafka included, accepts. librdkafka re-sends messages that
    # may already be written after it bumps its epoch. They are counted, not
    # anomalies; copies within one session (or of unknown session) are.
    resent = set()
    for v, pos in where.items():
        if len(pos) > 1:
            sessions = [session_at.get(x) for x in pos]
            if None not in sessions and len(set(sessions)) == len(sessions):
                resent.add(v)
                stats["resent-in-new-session"] += len(pos) - 1
    if not allow_duplicates:
        for v, pos in sorted(where.items()):
            if len(pos) > 1 and v not in resent:
                rep.add("duplicate", {"value": v, "at": sorted(pos)})

    # Reads against acks and failures.
    for v, pos in sorted(where.items()):
        if v not in invoked:
            rep.add("phantom", {"value": v, "at": sorted(pos)})
        if failed.get(v) is True and v not in acked and v not in acked_somewhere:
            rep.add("G1a", {"value": v, "at": sorted(pos)})
        # A non-idempotent producer's retry may leave a second copy; then the
        # ack only has to name one of the copies.
        if v in acked and (acked[v] not in pos if allow_duplicates or v in resent
                           else any(x != acked[v] for x in pos)):
            rep.add("acked-offset-mismatch", {"value": v, "acked": list(acked[v]),
                                              "read_at": sorted(x for x in pos if x != acked[v])})
        if v in failed and failed[v] is False:
            stats["indefinite-later-seen"] += 1

    # Acknowledged writes against the final read.
    final_values = collections.defaultdict(set)
    final_max = {}
    for p, e in finals.items():
        final_values[p] = {r[1] for r in e["records"]}
        offs = [r[0] for r in e["records"]]
        final_max[p] = max(offs) if offs else -1
    for v, (p, a) in sorted(acked.items(), key=lambda kv: (kv[1], kv[0])):
        if v in final_values[p]:
            continue
        if final_max.get(p, -1) > a:
            rep.add("lost-write", {"value": v, "partition": p, "offset": a,
                                   "final_read_reached": final_max[p]})
        else:
            rep.add("unseen", {"value": v, "partition": p, "offset": a,
                               "final_read_reached": final_max.get(p),
                               "final_read_missing": p not in finals})

    for v, p in sorted(acked_somewhere.items()):
        if v not in final_values[p]:
            rep.add("unseen", {"value": v, "partition": p, "offset": None,
                               "final_read_reached": final_max.get(p),
                               "final_read_missing": p not in finals})

    # Per producer, per partition: acked offsets increase with invoke order.
    sends = collections.defaultdict(list)  # (process, p) -> [(invoke index, offset, value)]
    for v, (p, o) in acked.items():
        if v in invoked:
            sends[(invoked[v], p)].append((invoke_index[v], o, v))
    for (proc, p), lst in sorted(sends.items()):
        lst.sort()
        for (_, o1, v1), (_, o2, v2) in zip(lst, lst[1:]):
            if o2 <= o1:
                rep.add("nonmonotonic-send", {"process": proc, "partition": p,
                                              "earlier": [v1, o1], "later": [v2, o2]})

    # Consumers: consecutive records of a partition, between markers.
    log_offsets = collections.defaultdict(set)  # everything known to exist
    for p, o, _, _ in seen:
        log_offsets[p].add(o)
    sorted_offsets = {p: sorted(s) for p, s in log_offsets.items()}
    last = collections.defaultdict(dict)  # process -> {partition: offset}
    for i, e in enumerate(events):
        t = e.get("type")
        if t in MARKERS:
            parts = e.get("partitions")
            if parts is None:
                last[e["process"]].clear()
            else:
                for p in parts:
                    last[e["process"]].pop(p, None)
        elif t == "poll":
            pos = last[e["process"]]
            for p, o, v in e["records"]:
                prev = pos.get(p)
                if prev is not None:
                    if o <= prev:
                        rep.add("nonmonotonic-poll", {"process": e["process"], "partition": p,
                                                      "from": prev, "to": o, "event": i})
                    elif o > prev + 1:
                        skipped = _between(sorted_offsets.get(p, []), prev, o)
                        if skipped:
                            rep.add("poll-skip", {"process": e["process"], "partition": p,
                                                  "from": prev, "to": o, "event": i,
                                                  "skipped": len(skipped),
                                                  "first_skipped": skipped[0]})
                pos[p] = o

    anomalies = {k: {"count": rep.counts[k], "examples": rep.examples[k]}
                 for k in ANOMALIES if rep.counts[k]}
    stats["final-partitions"] = len(finals)
    return {"valid": not anomalies, "stats": dict(stats), "anomalies": anomalies,
            "allow_duplicates": allow_duplicates}


def _between(offsets, lo, hi):
    """The members of the sorted list `offsets` strictly between lo and hi."""
    import bisect
    return offsets[bisect.bisect_right(offsets, lo):bisect.bisect_left(offsets, hi)]


def render(summary):
    s = summary["stats"]
    lines = ["checker: %d sends invoked, %d acked (%d without an offset), %d failed definitely, "
             "%d indefinitely (%d of those seen later); %d records polled, %d in the final read "
             "of %d partitions" % (
                 s.get("invoked", 0), s.get("acked", 0), s.get("acked-without-offset", 0),
                 s.get("failed-definite", 0),
                 s.get("failed-indefinite", 0), s.get("indefinite-later-seen", 0),
                 s.get("polled-records", 0), s.get("final-records", 0), s.get("final-partitions", 0))]
    if s.get("resent-in-new-session"):
        lines.append("checker: %d record copies re-sent by a client in a new producer session (after an epoch "
                     "bump; outside idempotence, not anomalies)" % s["resent-in-new-session"])
    if summary["valid"]:
        lines.append("checker: no anomalies (checked: %s)" % ", ".join(
            a for a in ANOMALIES if not (a == "duplicate" and summary["allow_duplicates"])))
    else:
        for kind, a in summary["anomalies"].items():
            lines.append("checker: ANOMALY %s x%d" % (kind, a["count"]))
            for ex in a["examples"]:
                lines.append("    e.g. %s" % json.dumps(ex, sort_keys=True))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("history")
    ap.add_argument("--allow-duplicates", action="store_true")
    ap.add_argument("--json", help="also write the summary here")
    args = ap.parse_args(argv)
    summary = check(load(args.history), allow_duplicates=args.allow_duplicates)
    print(render(summary))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1, sort_keys=True)
    return 0 if summary["valid"] else 1


if __name__ == "__main__":
    sys.exit(main())
