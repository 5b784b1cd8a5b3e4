"""tests/clients/kafka_python_produce.py: kafka-python 2.0.2 producer for golden capture.

Usage: /usr/bin/python3 kafka_python_produce.py PORT TOPIC CODEC [--legacy]
CODEC is none|gzip|snappy|lz4. --legacy pins api_version=(0, 10, 1), which
makes kafka-python send Produce v2 with the magic-1 message format (no
headers there).
"""
import sys

from kafka import KafkaProducer

import golden_messages as gm

port, topic, codec = sys.argv[1], sys.argv[2], sys.argv[3]
legacy = "--legacy" in sys.argv[4:]
kwargs = {}
if legacy:
    kwargs["api_version"] = (0, 10, 1)
producer = KafkaProducer(
    bootstrap_servers="127.0.0.1:" + port,
    client_id="kafka-python-golden",
    compression_type=None if codec == "none" else codec,
    acks=1,
    linger_ms=50,
    request_timeout_ms=10000,
    **kwargs)
for i in range(gm.COUNT):
    producer.send(topic, key=gm.key(i).encode(), value=gm.value(i).encode(),
                  headers=None if legacy else
                  [(k, v.encode()) for k, v in gm.headers("kafka-python")],
                  partition=0)
producer.flush(timeout=15)
producer.close(timeout=5)
