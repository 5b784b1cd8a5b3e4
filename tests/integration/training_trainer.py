"""tests/integration/training_trainer.py: a training process for test_training.py's resume scenario.

    training_trainer.py --bootstrap B --topic T --rank R --world W --workers N --log FILE
                        [--checkpoint-at K --ckpt FILE] [--resume FILE] [--shuffle] [--dist tcp://H:P]

Iterates one epoch of a TopicLoader (batch 16) and appends, per delivered
batch, one JSON line {"step", "ids", "at": [[partition, offset]...]} to --log (flushed: what the trainer
got, in order; the sample id is each sample's first token). With
--checkpoint-at K it saves the loader's state_dict() with torch.save to
--ckpt (written then renamed) after K batches, logs {"checkpoint": K},
takes two more batches (logged "after": work a crash loses) and then blocks
on stdin until the test kills it. With --resume it loads that state first
(this rank's own, or a merged one) and runs to the end of the epoch, then
logs {"done": true}. One thread; exits 0 at the end of the epoch.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "training"))
import torch  # noqa: E402
from ciuickafka_train import TopicLoader  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--workers", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--checkpoint-at", type=int, default=0)
    ap.add_argument("--ckpt")
    ap.add_argument("--resume")
    ap.add_argument("--shuffle", action="store_true")
    ap.add_argument("--dist", help="tcp://HOST:PORT: join a gloo process group; the loader takes rank and "
                                   "world size (and rank 0's epoch snapshot) from torch.distributed")
    a = ap.parse_args()
    rank, world = a.rank, a.world
    if a.dist:
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=a.dist, rank=a.rank, world_size=a.world)
        rank = world = None
    loader = TopicLoader(a.bootstrap, a.topic, batch_size=16, rank=rank, world_size=world,
                         num_workers=a.workers, shuffle=a.shuffle, shuffle_window=64, seed=7)
    if a.dist:
        assert (loader.rank, loader.world_size) == (a.rank, a.world), (loader.rank, loader.world_size)
    if a.resume:
        loader.load_state_dict(torch.load(a.resume))
    log = open(a.log, "a")

    def put(obj):
        log.write(json.dumps(obj) + "\n")
        log.flush()
    after = None
    for step, batch in enumerate(loader, 1):
        ids = batch["input_ids"][:, 0].tolist()
        if after is not None:
            put({"after": ids})
            after += 1
            if after == 2:
                sys.stdin.read()  # the test kills us here, mid-epoch
            continue
        put({"step": step, "ids": ids, "at": [[p, o] for _, p, o in batch["provenance"]]})
        if step == a.checkpoint_at:
            torch.save(loader.state_dict(), a.ckpt + ".tmp")
            os.replace(a.ckpt + ".tmp", a.ckpt)
            put({"checkpoint": step})
            after = 0
    put({"done": True})


if __name__ == "__main__":
    main()
