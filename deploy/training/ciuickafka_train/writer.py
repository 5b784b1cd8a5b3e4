"""ciuickafka_train/writer.py: SampleWriter, the producer side.

SampleWriter(bootstrap_servers, topic, *, seq_len=None, compression="zstd",
**producer_config) packs each sample into the fixed-layout token record
(records.py) and produces it with confluent-kafka, batched (linger.ms 20,
batch.size 1 MiB) and compressed (zstd by default; "lz4", "none" ...).
Records carry no key, so librdkafka spreads them over the partitions.

Guarantees: flush() returns once every written record is acknowledged
(acks=all, idempotent producer: no duplicates from retries) and raises
WriteError naming the first delivery error, if any; close() and the context
manager flush. write() never blocks forever: a full local queue is drained
by polling, bounded by `timeout_s`. The writer never creates topics: an
unknown topic is a WriteError naming it before anything is queued.

Not thread-safe: one writer per thread (librdkafka's producer is, this
wrapper's error list is not).
"""

import time

from confluent_kafka import KafkaException, Producer

from . import records
from .errors import BrokerUnreachable, TopicNotFound, WriteError, check_topics


class SampleWriter:
    def __init__(self, bootstrap_servers, topic, *, seq_len=None, compression="zstd",
                 timeout_s=15.0, **producer_config):
        self.topic = topic
        self.seq_len = seq_len
        self.timeout_s = float(timeout_s)
        conf = {
            "bootstrap.servers": bootstrap_servers,
            "compression.type": compression,
            "linger.ms": 20,
            "batch.size": 1 << 20,
            "enable.idempotence": True,
            "acks": "all",
            "queue.buffering.max.kbytes": 262144,
            "allow.auto.create.topics": False,
        }
        conf.update({k.replace("_", "."): v for k, v in producer_config.items()})
        self._errors = []
        self._p = Producer(conf)
        try:
            md = self._p.list_topics(timeout=self.timeout_s)
        except KafkaException as e:
            raise BrokerUnreachable(
                "cannot reach a broker at %s within %.0f s (%s): check bootstrap_servers and that the broker runs"
                % (bootstrap_servers, self.timeout_s, e.args[0])) from None
        check_topics(md, [topic], bootstrap_servers)
        self.written = 0

    def _on_delivery(self, err, msg):
        if err is not None and len(self._errors) < 10:
            self._errors.append("%s [%s]: %s" % (msg.topic(), msg.partition(), err))

    def write(self, token_ids):
        """Queues one sample (a list or NumPy array of token ids)."""
        value = records.encode(token_ids, self.seq_len)
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                self._p.produce(self.topic, value, on_delivery=self._on_delivery)
                break
            except BufferError:
                if time.monotonic() > deadline:
                    raise WriteError("the producer's queue stayed full for %.0f s: is the broker at %s up?"
                                     % (self.timeout_s, self._p)) from None
                self._p.poll(0.05)
        self.written += 1
        self._p.poll(0)
        if self._errors:
            raise WriteError("delivery failed: " + "; ".join(self._errors))

    def flush(self):
        left = self._p.flush(self.timeout_s)
        if left:
            raise WriteError("%d record(s) not acknowledged within %.0f s" % (left, self.timeout_s))
        if self._errors:
            raise WriteError("delivery failed: " + "; ".join(self._errors))

    def close(self):
        self.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.flush()
        else:
            self._p.flush(self.timeout_s)
        return False
