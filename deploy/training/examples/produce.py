#!/usr/bin/python3
"""deploy/training/examples/produce.py: writes tokenized samples into a topic.

    produce.py --bootstrap localhost:9092 --topic deepseek-train-topic --samples 10000 --seq-len 2048

Stand-in for a tokenizer pipeline: each sample is seq_len random token ids
(vocabulary 32,000, so uint16 records: 8 + 2*seq_len bytes), its first id
the sample's number. Exits 0 once every record is acknowledged.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import numpy as np  # noqa: E402
from ciuickafka_train import SampleWriter  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", default="localhost:9092")
    ap.add_argument("--topic", default="deepseek-train-topic")
    ap.add_argument("--samples", type=int, default=10000)
    ap.add_argument("--seq-len", type=int, default=2048)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    with SampleWriter(a.bootstrap, a.topic, seq_len=a.seq_len) as w:
        for i in range(a.samples):
            ids = rng.integers(0, 32000, a.seq_len, dtype=np.uint16)
            ids[0] = i % 32000
            w.write(ids)
    print("wrote %d samples of %d tokens to %s" % (a.samples, a.seq_len, a.topic))


if __name__ == "__main__":
    main()
