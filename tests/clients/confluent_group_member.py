"""tests/clients/confluent_group_member.py: one consumer-group member (confluent-kafka-python).

Usage: /usr/bin/python3 confluent_group_member.py BOOTSTRAP GROUP TOPIC EVENTS_FILE
           [--strategy range|roundrobin|cooperative-sticky] [--instance-id ID]
           [--session-ms N] [--pace-file PATH] [--max-seconds N]

Run as its own process by tests/integration/test_groups_confluent.py so the
test can stop it with SIGTERM (close(): LeaveGroup for a dynamic member) or
SIGKILL it (the broker must notice by session timeout). Auto commit is off:
after each batch it appends the batch to EVENTS_FILE *first*, then commits
the batch's next offsets synchronously and appends the outcome, so the file
always shows what was read before what was committed. One JSON object per
line, written with os.write (survives SIGKILL):

  {"ev":"assign","parts":[..],"t":..}     rebalance callback (incremental for
  {"ev":"revoke","parts":[..],"t":..}     cooperative-sticky, full for eager)
  {"ev":"lost","parts":[..],"t":..}
  {"ev":"read","m":[[part,offset,key,value],..],"t":..}
  {"ev":"commit","ok":true|false,"offs":{"part":next,..},"err":..,"t":..}
  {"ev":"gen","gen":N,"t":..}             GenerationId of each JoinGroup
                                          response (from librdkafka's cgrp log)
  {"ev":"closed","t":..}

A commit that fails (REBALANCE_IN_PROGRESS while the group completes a
rebalance, say) is retried on the next idle poll for the partitions the
member still owns, as an application committing its position would: else
a member whose last batch's commit fell into a rebalance would leave its
committed offsets short of what it read for ever.

While PATH (--pace-file) exists it sleeps 50 ms between logging a batch (of
at most 100 messages) and committing it, so a member killed mid-stream most
likely leaves a read but uncommitted tail for the next owner to re-read.
"""
import logging
import os
import re
import signal
import sys
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition

from group_member_common import Events, parse_args  # beside this script

args = parse_args()
events = Events(args.events)
emit = events.emit


GEN_RE = re.compile(r"JoinGroup response: GenerationId (-?\d+)")


class GenHandler(logging.Handler):
    def emit(self, record):  # noqa: A003 - logging.Handler's name
        m = GEN_RE.search(record.getMessage())
        if m:
            emit("gen", gen=int(m.group(1)))


log = logging.getLogger("rdkafka")
log.setLevel(logging.DEBUG)
log.addHandler(GenHandler())

stop = False


def on_term(signum, frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)

conf = {
    "bootstrap.servers": args.bootstrap,
    "group.id": args.group,
    "client.id": "ck-group-member",
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
    "partition.assignment.strategy": args.strategy,
    "session.timeout.ms": args.session_ms,
    "heartbeat.interval.ms": 500,
    "max.poll.interval.ms": 30000,
    "broker.address.family": "v4",
    "debug": "cgrp",
}
if args.instance_id:
    conf["group.instance.id"] = args.instance_id
c = Consumer(conf, logger=log)


def parts(ps):
    return sorted(p.partition for p in ps)


pending = {}  # part -> next offset whose commit failed; dropped when the part goes


def gone(kind, ps):
    for p in ps:
        pending.pop(p.partition, None)
    emit(kind, parts=parts(ps))


def commit(nxt):
    """Commits nxt synchronously, logs the outcome; what failed is kept for a retry."""
    try:
        res = c.commit(offsets=[TopicPartition(args.topic, p, o) for p, o in sorted(nxt.items())],
                       asynchronous=False)
        bad = [str(tp.error) for tp in res if tp.error is not None]
        emit("commit", ok=not bad, offs={str(p): o for p, o in nxt.items()}, err=bad or None)
    except KafkaException as e:
        bad = [str(e)]
        emit("commit", ok=False, offs={str(p): o for p, o in nxt.items()}, err=str(e))
    if bad:
        pending.update(nxt)
    else:
        pending.clear()


c.subscribe([args.topic],
            on_assign=lambda _c, ps: emit("assign", parts=parts(ps)),
            on_revoke=lambda _c, ps: gone("revoke", ps),
            on_lost=lambda _c, ps: gone("lost", ps))

deadline = time.monotonic() + args.max_seconds
while not stop and time.monotonic() < deadline:
    msgs = c.consume(100, 0.2)
    batch = []
    nxt = {}
    for m in msgs:
        if m.error():
            emit("error", err=str(m.error()))
            continue
        batch.append([m.partition(), m.offset(), m.key().decode(), m.value().decode()])
        nxt[m.partition()] = max(nxt.get(m.partition(), 0), m.offset() + 1)
    if not batch:
        if pending:
            commit(dict(pending))
        continue
    emit("read", m=batch)
    if args.pace_file and os.path.exists(args.pace_file):
        time.sleep(0.05)  # between read and commit: a SIGKILL now leaves an uncommitted tail
    commit({**pending, **nxt})

c.close()
emit("closed")
events.close()
sys.exit(0 if stop else 3)
