#!/usr/bin/env python3
"""Bounded fuzz smoke run: seed a corpus and run a libFuzzer binary until it
has used SECONDS of CPU time. Fails if the fuzzer finds a crash (libFuzzer
exits non-zero) or if there was no seed to start from.

The bound is CPU time, not wall time, so a smoke does the same work on a
busy machine as on an idle one: deploy/test.sh runs the smokes at the
lowest priority beside the main suite, on the CPU the suite leaves idle.
At the bound the fuzzer gets SIGUSR1, libFuzzer's graceful exit (final
stats, exit 0). A wall-time cap (20 x SECONDS + 60 s) still ends a fuzzer
that never gets the CPU.

usage: smoke.py FUZZER MODE SEED_DIR CORPUS_DIR SECONDS
  MODE frames: SEED_DIR holds golden *.hex request frames (no size prefix);
               each seed is size-prefixed as a socket delivers it.
  MODE raw:    SEED_DIR holds *.bin files used as they are.
"""
import os
import pathlib
import signal
import subprocess
import sys
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a running process, from /proc (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


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
    budget = float(seconds)
    print(f"smoke.py: {seeds} seeds, fuzzing for {budget:g} CPU-s", flush=True)
    cmd = [fuzzer, str(corpus_dir), f"-max_total_time={int(budget * 20 + 60)}", "-max_len=65536",
           "-rss_limit_mb=2048", "-timeout=10", "-print_final_stats=1"]
    start = time.monotonic()
    proc = subprocess.Popen(cmd)
    used = 0.0
    while proc.poll() is None:
        used = max(used, cpu_seconds(proc.pid))
        if used >= budget:
            proc.send_signal(signal.SIGUSR1)
            break
        time.sleep(0.2)
    rc = proc.wait()
    print(f"smoke.py: {used:.1f} CPU-s in {time.monotonic() - start:.1f} s, exit {rc}", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
