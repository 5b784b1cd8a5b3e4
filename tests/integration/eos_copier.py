"""tests/integration/eos_copier.py: an exactly-once copier, as the ones of
Kafka's transactions_test.py (consume-transform-produce in transactions).

Usage: eos_copier.py BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID TOTAL

Reads INPUT partition 0 from GROUP's committed offset (read_committed),
copies each record to OUTPUT partition 0 in transactions of up to 100
records, each committing the input position with send_offsets_to_transaction,
until the committed position reaches TOTAL; then exits 0. Whatever goes
wrong (a broker killed under it, a fence, an abortable error) it does not
try to repair: it exits 3, and the test starts a new copier with the same
transactional id, which fences this one's open transaction (aborted) and
resumes from the last committed position. Prints one line per commit.
"""

import os
import sys

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def main():
    bootstrap, src, dst, group, tid, total = sys.argv[1:7]
    total = int(total)
    common = {"bootstrap.servers": bootstrap, "broker.address.family": "v4", "socket.timeout.ms": 10000}
    c = Consumer(dict(common, **{"group.id": group, "enable.auto.commit": False, "isolation.level": "read_committed",
                                 "auto.offset.reset": "earliest"}))
    p = Producer(dict(common, **{"transactional.id": tid, "transaction.timeout.ms": 30000, "linger.ms": 5,
                                 "message.timeout.ms": 30000}))
    p.init_transactions(60)
    start = c.committed([TopicPartition(src, 0)], timeout=60)[0].offset
    start = max(start, 0)
    print("copier %s: from offset %d" % (tid, start), flush=True)
    c.assign([TopicPartition(src, 0, start)])
    position = start
    while position < total:
        msgs = c.consume(num_messages=100, timeout=1.0)
        msgs = [m for m in msgs if m.error() is None]
        if not msgs:
            continue
        p.begin_transaction()
        for m in msgs:
            p.produce(dst, value=m.value(), partition=0)
        position = msgs[-1].offset() + 1
        p.send_offsets_to_transaction([TopicPartition(src, 0, position)], c.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        print("copier %s: committed up to %d" % (tid, position), flush=True)
    c.close()


if __name__ == "__main__":
    try:
        main()
    except KafkaException as e:
        print("copier: giving up: %s" % e, flush=True)
        sys.stdout.flush()
        os._exit(3)
