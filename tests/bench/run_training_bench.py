#!/usr/bin/python3
"""tests/bench/run_training_bench.py: the training-reader benchmark of issue #17.

    tests/bench/run_training_bench.py [--gib 1.0] [--seq-len 2048] [--workers 4] [--readers 32]
                                      [--naive-seconds 20] [--broker build/release/bin/ciuickafka] [--cuda]

Not a test (no pass/fail; not in CI): it prints figures and met/not-met
against the issue's targets. One Release broker on 127.0.0.1 with its data
under build/bench-tmp (removed at the end); one topic of 8 partitions
holding --gib GiB of --seq-len-token samples (uint16 records, no
compression, so every row moves the same bytes), written with SampleWriter.
In the same run, each row reads the whole topic (one epoch):

1. raw: one confluent-kafka Consumer with the reader's consumer settings,
   assign() of the 8 partitions, consume(2048) and len(value) per message:
   the ceiling for Python.
2. reader: TopicLoader, batch 32, --workers DataLoader workers, a dummy
   training loop that touches each batch (input_ids.sum()); after row 3, the
   same with 0 workers (the reader in the training process), and with
   --workers workers but chunks crossing as tensors (torch's per-tensor
   sharing) instead of through the loader's shared-memory rings.
3. naive: the articles' KafkaDataset, written here: a map-style Dataset with
   a fake __len__ of 1,000,000, one consumer per DataLoader worker in one
   consumer group (subscribe), poll() one message at a time into a list,
   list.pop(0), a JSON decode and a tensor per message, batched by the
   DataLoader (batch 32, --workers workers). It reads a JSON copy of 20,000
   of the samples (the articles' payload) for --naive-seconds seconds
   (from its first batch: joining the group is not counted).
   With --cuda (a machine with a GPU): the reader again with pin_memory=True,
   each batch copied to the GPU (non_blocking) and summed there, with
   --workers workers and with 0.
4. fan-out: --readers TopicLoader ranks (world_size = readers, 0 workers
   each, one process each) on the same 8-partition topic at once:
   aggregate MB/s (all samples over the wall time from the start of the
   processes) and fairness = slowest reader's MB/s / fastest's, each
   reader's rate taken from its first batch to its last.

The client is whichever confluent-kafka python3 imports (Debian's 1.7.0 on
librdkafka 2.0.2; PYTHONPATH=build/clients-venv/lib/python3.11/site-packages
puts the pinned 2.16.1 first). The version is printed: librdkafka before 2.3
waits a fixed second after a full fetch queue, which caps the reader.

For rows 1-3: samples/s and MB/s of token data delivered (2 bytes per
token, the same unit for every row), and the broker's CPU seconds
(/proc/PID/stat) per GB served.
"""

import argparse
import gc
import json
import multiprocessing as mp
import os
import shutil
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, os.path.join(REPO, "deploy", "training"))
import harness  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import confluent_kafka  # noqa: E402
from confluent_kafka import Consumer, KafkaError, TopicPartition  # noqa: E402
from ciuickafka_train import SampleWriter, TopicLoader  # noqa: E402
from ciuickafka_train.reader import consumer_config  # noqa: E402

TOPIC, JSON_TOPIC = "bench", "bench-json"


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def produce(b, n, seq_len):
    rng = np.random.default_rng(1)
    block = rng.integers(0, 32000, (1024, seq_len), dtype=np.uint16)
    with SampleWriter(b.bootstrap, TOPIC, seq_len=seq_len, compression="none") as w:
        for i in range(n):
            w.write(block[i % 1024])
    with SampleWriter(b.bootstrap, JSON_TOPIC, compression="none") as w:
        for i in range(20000):
            w._p.produce(JSON_TOPIC, json.dumps({"input_ids": block[i % 1024].tolist()}).encode())
            w._p.poll(0)


def raw(b, n):
    # the reader's own consumer settings, so the ratio is the reader's cost alone
    c = Consumer(consumer_config(b.bootstrap, "raw", "epoch", {}))
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(8)])
    got, nbytes, eof = 0, 0, set()
    t0 = time.monotonic()
    while len(eof) < 8:
        for m in c.consume(2048, 1.0):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                continue
            got += 1
            nbytes += len(m.value())
    dt = time.monotonic() - t0
    c.close()
    return got, dt


def reader(b, workers, seq_len, device=None, ring=True):
    """With device ("cuda"): pin_memory=True, and each batch goes to the GPU (non_blocking) and is summed there,
    as a training step's input would. ring=False: chunks cross from the workers as tensors (torch's
    sharing) instead of through the loader's shared-memory rings."""
    L = TopicLoader(b.bootstrap, TOPIC, batch_size=32, num_workers=workers, pin_memory=device is not None,
                    ring_slot_bytes=(8 << 20) if ring else 0)
    if device is not None and not L.pin_memory:
        raise SystemExit("--cuda: torch sees no GPU (torch.cuda.is_available() is False)")
    got = 0
    t0 = time.monotonic()
    for batch in L:
        ids = batch["input_ids"]
        if device is not None:
            if got == 0 and not ids.is_pinned():
                raise SystemExit("--cuda: the loader's batch is not in pinned memory")
            ids = ids.to(device, non_blocking=True)
        ids.sum()
        got += ids.shape[0]
    if device is not None:
        torch.cuda.synchronize()
    return got, time.monotonic() - t0


class KafkaDataset(torch.utils.data.Dataset):
    """The naive dataset as the articles show it (deliberately)."""

    def __init__(self, bootstrap, topic):
        self.bootstrap, self.topic, self.consumer, self.buffer = bootstrap, topic, None, []

    def __len__(self):
        return 1000000

    def __getitem__(self, idx):
        if self.consumer is None:
            self.consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "naive-bench",
                                      "auto.offset.reset": "earliest"})
            self.consumer.subscribe([self.topic])
        idle_since = time.monotonic()
        while not self.buffer:
            m = self.consumer.poll(1.0)
            if m is not None and not m.error():
                self.buffer.append(m.value())
            elif time.monotonic() - idle_since > 10:  # the bench's bound, not the articles'
                raise RuntimeError("naive dataset: no message for 10 s")
        data = json.loads(self.buffer.pop(0))
        return {"input_ids": torch.tensor(data["input_ids"], dtype=torch.long)}


def naive(b, workers, seconds):
    dl = torch.utils.data.DataLoader(KafkaDataset(b.bootstrap, JSON_TOPIC), batch_size=32, num_workers=workers)
    it = iter(dl)
    got = 0
    t0 = t_last = None
    try:
        for batch in it:
            if t0 is None:  # from the first batch: group join and rebalance not counted
                t0 = time.monotonic()
                continue
            batch["input_ids"].sum()
            got += batch["input_ids"].shape[0]
            t_last = time.monotonic()
            if t_last - t0 >= seconds:
                break
    except RuntimeError as e:
        print("  (naive run ended early: %s)" % str(e).splitlines()[-1][:120], flush=True)
    # up to its last batch: a worker whose partitions ran dry blocks the in-order DataLoader
    # for good (the articles' loop never ends); that stall is not counted
    dt = (t_last - t0) if got else 1.0
    del it, dl  # its workers go now, not in the fan-out's forked children
    gc.collect()
    return got, dt


def one_reader(args):
    bootstrap, rank, world, q = args
    L = TopicLoader(bootstrap, TOPIC, batch_size=32, rank=rank, world_size=world, num_workers=0,
                    queued_max_messages_kbytes=8192)
    got = 0
    t0 = None
    for batch in L:
        if t0 is None:  # from its first batch: 32 processes starting on a few cores skew the starts
            t0 = time.monotonic()
        got += batch["input_ids"].shape[0]
    q.put((rank, got, t0, time.monotonic()))


def fanout(b, readers):
    q = mp.get_context("fork").Queue()
    procs = [mp.get_context("fork").Process(target=one_reader, args=((b.bootstrap, r, readers, q),))
             for r in range(readers)]
    for p in procs:
        p.start()
    res = [q.get(timeout=1800) for _ in procs]
    for p in procs:
        p.join(60)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--readers", type=int, default=32)
    ap.add_argument("--naive-seconds", type=float, default=20)
    ap.add_argument("--cuda", action="store_true",
                    help="also the reader with pin_memory=True feeding a GPU (batches copied there non_blocking)")
    ap.add_argument("--broker", default=os.path.join(REPO, os.environ.get("BUILD_DIR", "build/release"),
                                                  "bin", "ciuickafka"))
    a = ap.parse_args()
    warnings.simplefilter("ignore", UserWarning)  # DataLoader's "suggested max number of worker"
    rec = 8 + 2 * a.seq_len
    n = int(a.gib * (1 << 30)) // rec
    work = os.path.join(REPO, "build", "bench-tmp", "training")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    b = harness.Broker(a.broker, work)
    b.start()
    try:
        b.create_topic(TOPIC, 8)
        b.create_topic(JSON_TOPIC, 8)
        t0 = time.monotonic()
        produce(b, n, a.seq_len)
        print("wrote %d samples of %d tokens (%.2f GiB of records) in %.1f s" %
              (n, a.seq_len, n * rec / (1 << 30), time.monotonic() - t0), flush=True)
        tok_mb = 2 * a.seq_len / 1e6
        ckv = confluent_kafka.version()  # a (str, int) tuple in 1.x, a str in 2.x
        print("client: confluent-kafka %s, librdkafka %s" % (ckv[0] if isinstance(ckv, tuple) else ckv,
                                                             confluent_kafka.libversion()[0]), flush=True)
        rows = {}
        phases = [("raw consume()", lambda: raw(b, n)),
                  ("TopicLoader %d workers" % a.workers, lambda: reader(b, a.workers, a.seq_len)),
                  ("naive KafkaDataset %d workers" % a.workers, lambda: naive(b, a.workers, a.naive_seconds))]
        if a.workers:  # the same reader in the training process (no DataLoader workers), for comparison
            phases.append(("TopicLoader 0 workers", lambda: reader(b, 0, a.seq_len)))
            # the same workers without the shared-memory rings: what the rings buy
            phases.append(("TopicLoader %d workers, no ring" % a.workers,
                           lambda: reader(b, a.workers, a.seq_len, ring=False)))
        if a.cuda:
            print("GPU: %s, torch %s" % (torch.cuda.get_device_name(0), torch.__version__), flush=True)
            phases.append(("TopicLoader %d workers, pinned -> GPU" % a.workers,
                           lambda: reader(b, a.workers, a.seq_len, "cuda")))
            if a.workers:
                phases.append(("TopicLoader 0 workers, pinned -> GPU", lambda: reader(b, 0, a.seq_len, "cuda")))
        for name, fn in phases:
            c0 = cpu_seconds(b.proc.pid)
            got, dt = fn()
            cpu = cpu_seconds(b.proc.pid) - c0
            gb = got * rec / 1e9
            rows[name] = got / dt
            print("%-32s %9d samples in %6.1f s: %9.0f samples/s %8.1f MB/s   broker %.2f CPU-s/GB" %
                  (name, got, dt, got / dt, got / dt * tok_mb, cpu / gb if gb else 0), flush=True)
        r, reader_rate, naive_rate = list(rows.values())[:3]
        print("reader / naive = %.0fx (target >= 20x): %s" % (reader_rate / naive_rate,
                                                               "met" if reader_rate >= 20 * naive_rate else "NOT met"))
        print("reader / raw = %.0f %% (target >= 70 %%): %s" % (100 * reader_rate / r,
                                                                 "met" if reader_rate >= 0.7 * r else "NOT met"))
        if a.workers:
            print("reader with 0 workers / raw = %.0f %%" % (100 * rows["TopicLoader 0 workers"] / r), flush=True)
            print("reader with %d workers without the rings / raw = %.0f %%"
                  % (a.workers, 100 * rows["TopicLoader %d workers, no ring" % a.workers] / r), flush=True)
        for name in rows:
            if name.endswith("-> GPU"):
                print("%s / raw = %.0f %%" % (name, 100 * rows[name] / r), flush=True)
        t0 = time.monotonic()
        res = fanout(b, a.readers)
        wall = time.monotonic() - t0
        total = sum(g for _, g, _, _ in res)
        rates = [g / max(1e-9, t1 - t0_) for _, g, t0_, t1 in res]
        print("%d readers on 8 partitions: %d samples (%s), aggregate %.1f MB/s over %.1f s, "
              "per reader %.1f-%.1f MB/s, fairness (slowest/fastest) %.2f" %
              (a.readers, total, "each once" if total == n else "MISMATCH, want %d" % n, total * tok_mb / wall, wall,
               min(rates) * tok_mb, max(rates) * tok_mb, min(rates) / max(rates)), flush=True)
        b.stop()
    finally:
        b.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
