"""tests/clients/group_member_common.py: what the group member processes
(confluent_group_member.py, kafka_python_group_member.py) share: their
command line and the events file the integration tests read.

The events file holds one JSON object per line, each with "ev" (its kind)
and "t" (time.time()); it is written with os.write on an O_APPEND fd so a
line written before a SIGKILL is in the file.
"""
import argparse
import json
import os
import time


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap")
    ap.add_argument("group")
    ap.add_argument("topic")
    ap.add_argument("events")
    ap.add_argument("--strategy", default="range")
    ap.add_argument("--instance-id")
    ap.add_argument("--session-ms", type=int, default=6000)
    ap.add_argument("--pace-file")
    ap.add_argument("--max-seconds", type=float, default=120)
    return ap.parse_args()


class Events:
    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def emit(self, ev, **kw):
        kw["ev"] = ev
        kw["t"] = time.time()
        os.write(self.fd, (json.dumps(kw) + "\n").encode())

    def close(self):
        os.close(self.fd)
