#!/usr/bin/env python3
"""Bounded fuzz smoke run: seed a corpus from the golden hex captures and run
a libFuzzer binary for a fixed number of seconds. Fails if the fuzzer finds a
crash (libFuzzer exits non-zero) or if there was no seed to start from.

usage: smoke.py FUZZER GOLDEN_DIR CORPUS_DIR SECONDS
"""
import pathlib
import subprocess
import sys


def main() -> int:
    fuzzer, golden, corpus, seconds = sys.argv[1:5]
    corpus_dir = pathlib.Path(corpus)
    corpus_dir.mkdir(parents=True, exist_ok=True)
    seeds = 0
    for hex_file in sorted(pathlib.Path(golden).rglob("*.hex")):
        raw = bytes.fromhex("".join(hex_file.read_text().split()))
        # The fuzz target reads size-prefixed frames, as a socket delivers them.
        framed = len(raw).to_bytes(4, "big") + raw
        (corpus_dir / f"seed_{hex_file.parent.name}_{hex_file.stem}").write_bytes(framed)
        seeds += 1
    if seeds == 0:
        print(f"smoke.py: no golden seeds under {golden}", file=sys.stderr)
        return 1
    print(f"smoke.py: {seeds} seeds, fuzzing for {seconds}s")
    cmd = [fuzzer, str(corpus_dir), f"-max_total_time={seconds}", "-max_len=65536",
           "-rss_limit_mb=2048", "-timeout=10", "-print_final_stats=1"]
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
