#!/usr/bin/env python3
"""Bounded fuzz smoke run: seed a corpus and run a libFuzzer binary for a
fixed number of seconds. Fails if the fuzzer finds a crash (libFuzzer exits
non-zero) or if there was no seed to start from.

usage: smoke.py FUZZER MODE SEED_DIR CORPUS_DIR SECONDS
  MODE frames: SEED_DIR holds golden *.hex request frames (no size prefix);
               each seed is size-prefixed as a socket delivers it.
  MODE raw:    SEED_DIR holds *.bin files used as they are.
"""
import pathlib
import subprocess
import sys


def main() -> int:
    fuzzer, mode, seed_dir, corpus, seconds = sys.argv[1:6]
    corpus_dir = pathlib.Path(corpus)
    corpus_dir.mkdir(parents=True, exist_ok=True)
    seeds = 0
    if mode == "frames":
        for hex_file in sorted(pathlib.Path(seed_dir).rglob("*.hex")):
            raw = bytes.fromhex("".join(hex_file.read_text().split()))
            name = "_".join(hex_file.relative_to(seed_dir).with_suffix("").parts)
            (corpus_dir / f"seed_{name}").write_bytes(len(raw).to_bytes(4, "big") + raw)
            seeds += 1
    elif mode == "raw":
        for bin_file in sorted(pathlib.Path(seed_dir).rglob("*.bin")):
            (corpus_dir / f"seed_{bin_file.stem}").write_bytes(bin_file.read_bytes())
            seeds += 1
    else:
        print(f"smoke.py: unknown mode {mode}", file=sys.stderr)
        return 2
    if seeds == 0:
        print(f"smoke.py: no seeds under {seed_dir}", file=sys.stderr)
        return 1
    print(f"smoke.py: {seeds} seeds, fuzzing for {seconds}s")
    cmd = [fuzzer, str(corpus_dir), f"-max_total_time={seconds}", "-max_len=65536",
           "-rss_limit_mb=2048", "-timeout=10", "-print_final_stats=1"]
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
