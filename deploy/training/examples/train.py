#!/usr/bin/python3
"""deploy/training/examples/train.py: a training loop fed by TopicLoader, with checkpoints.

    train.py --bootstrap localhost:9092 --topic deepseek-train-topic [--epochs 1]
             [--workers 2] [--batch-size 8] [--ckpt-dir ck] [--metrics-port 9700]
             [--commit-group trainer-lag]

A toy next-token model (embedding + linear over ids mod 4096, CPU) trains on the batches.
Every --ckpt-every steps it saves the model and this rank's loader state
(loader.state_dict()) together; started again with the same --ckpt-dir it
resumes exactly where the checkpoint was (same world size; for another
world size merge all ranks' states with TopicLoader.merge_state_dicts).
Rank and world size come from torch.distributed or RANK/WORLD_SIZE.
Starvation and throughput are on :--metrics-port/metrics
(ck_train_data_loading_percent, ...). With --commit-group, each saved
checkpoint's offsets are then committed to that group with the checkpoint
id ("step-N") as metadata, for lag tools (needs kafka-python).
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
from ciuickafka_train import TopicLoader  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", default="localhost:9092")
    ap.add_argument("--topic", default="deepseek-train-topic")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--ckpt-dir", default="ck")
    ap.add_argument("--ckpt-every", type=int, default=200)
    ap.add_argument("--metrics-port", type=int, default=None)
    ap.add_argument("--commit-group", default=None, help="commit each checkpoint's offsets to this group")
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: run the epochs)")
    a = ap.parse_args()

    loader = TopicLoader(a.bootstrap, a.topic, batch_size=a.batch_size, num_workers=a.workers,
                         shuffle=True, seed=1234, metrics_port=a.metrics_port,
                         commit_group=a.commit_group)
    model = torch.nn.Sequential(torch.nn.Embedding(4096, 32), torch.nn.Linear(32, 4096))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    os.makedirs(a.ckpt_dir, exist_ok=True)
    path = os.path.join(a.ckpt_dir, "rank%d.pt" % loader.rank)
    step = 0
    if os.path.exists(path):
        ck = torch.load(path)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        loader.load_state_dict(ck["loader"])
        step = ck["step"]
        print("resumed at step %d, epoch %d" % (step, loader.epoch))
    t0 = time.time()
    for epoch in range(loader.epoch, a.epochs):
        loader.set_epoch(epoch)
        for batch in loader:
            x = batch["input_ids"][:, :64] % 4096  # a short context, small vocabulary: fast on a CPU
            logits = model(x[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % a.ckpt_every == 0:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                            "loader": loader.state_dict(), "step": step}, path + ".tmp")
                os.replace(path + ".tmp", path)
                if a.commit_group:
                    loader.commit("step-%d" % step)  # after the save: the group never runs ahead of it
                print("step %d epoch %d loss %.3f (checkpoint; %.1f steps/s)" %
                      (step, epoch, loss.item(), step / (time.time() - t0)), flush=True)
            if a.max_steps and step >= a.max_steps:
                return
    print("done: %d steps" % step)


if __name__ == "__main__":
    main()
