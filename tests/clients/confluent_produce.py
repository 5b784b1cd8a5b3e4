"""tests/clients/confluent_produce.py: confluent-kafka-python (librdkafka) producer.

Usage: /usr/bin/python3 confluent_produce.py PORT TOPIC CODEC [--idempotent]
--idempotent turns on enable.idempotence, so librdkafka first asks for a
producer id (InitProducerId) and writes batches with producer id and
sequence numbers.
"""
import sys

from confluent_kafka import Producer

import golden_messages as gm

port, topic, codec = sys.argv[1], sys.argv[2], sys.argv[3]
conf = {
    "bootstrap.servers": "127.0.0.1:" + port,
    "client.id": "confluent-kafka-python-golden",
    "compression.codec": codec,
    "linger.ms": 50,
    "message.timeout.ms": 15000,
    "broker.address.family": "v4",
}
if "--idempotent" in sys.argv[4:]:
    conf["enable.idempotence"] = True
p = Producer(conf)
for i in range(gm.COUNT):
    p.produce(topic, key=gm.key(i), value=gm.value(i), partition=0,
              headers=gm.headers("confluent-kafka-python"))
left = p.flush(20)
sys.exit(1 if left else 0)
