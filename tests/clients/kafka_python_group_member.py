"""tests/clients/kafka_python_group_member.py: one consumer-group member (kafka-python).

Usage: /usr/bin/python3 kafka_python_group_member.py BOOTSTRAP GROUP TOPIC EVENTS_FILE
           [--strategy range|roundrobin] [--instance-id IGNORED] [--session-ms N]
           [--pace-file PATH] [--max-seconds N]

The kafka-python counterpart of confluent_group_member.py, with the same
arguments and the same events file (one JSON object per line, os.write):
assign/revoke (ConsumerRebalanceListener), read (logged before the commit),
commit (synchronous KafkaConsumer.commit of the batch's next offsets, with
its outcome), closed. SIGTERM stops it after the current batch; close()
then leaves the group. Auto commit is off.
"""
import os
import signal
import sys
import time

from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata

from group_member_common import Events, parse_args  # beside this script

args = parse_args()
events = Events(args.events)
emit = events.emit


stop = False


def on_term(signum, frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)


class Listener(ConsumerRebalanceListener):
    def on_partitions_revoked(self, revoked):
        emit("revoke", parts=sorted(tp.partition for tp in revoked))

    def on_partitions_assigned(self, assigned):
        emit("assign", parts=sorted(tp.partition for tp in assigned))


c = KafkaConsumer(
    bootstrap_servers=args.bootstrap,
    group_id=args.group,
    client_id="ck-kafka-python-member",
    enable_auto_commit=False,
    auto_offset_reset="earliest",
    session_timeout_ms=args.session_ms,
    heartbeat_interval_ms=500,
    max_poll_interval_ms=30000,
    partition_assignment_strategy=[RoundRobinPartitionAssignor if args.strategy == "roundrobin"
                                   else RangePartitionAssignor],
)
c.subscribe([args.topic], listener=Listener())

deadline = time.monotonic() + args.max_seconds
while not stop and time.monotonic() < deadline:
    polled = c.poll(timeout_ms=200, max_records=100)
    batch = []
    nxt = {}
    for tp, msgs in polled.items():
        for m in msgs:
            batch.append([m.partition, m.offset, m.key.decode(), m.value.decode()])
            nxt[m.partition] = max(nxt.get(m.partition, 0), m.offset + 1)
    if not batch:
        continue
    emit("read", m=batch)
    if args.pace_file and os.path.exists(args.pace_file):
        time.sleep(0.05)  # between read and commit, as confluent_group_member.py
    offs = {str(p): o for p, o in nxt.items()}
    try:
        c.commit({TopicPartition(args.topic, p): OffsetAndMetadata(o, None) for p, o in nxt.items()})
        emit("commit", ok=True, offs=offs, err=None)
    except KafkaError as e:
        emit("commit", ok=False, offs=offs, err=repr(e))

c.close(autocommit=False)
emit("closed")
events.close()
sys.exit(0 if stop else 3)
