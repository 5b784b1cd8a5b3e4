"""tests/integration/test_cluster_clients_checks.py: the delivery checks of test_cluster_clients.py, without a broker.

Usage: test_cluster_clients_checks.py

check_member() is what decides whether a client's consumer group delivered
right across the coordinator kills; here it gets hand-made event streams:
the good ones (in order, a rejoin back to the last acknowledged commit) pass
with the right counts, and each bad one (a gap, a record twice without a
rewind, a rewind to something other than the last acknowledged commit, a
wrong start) fails naming the partition. Exit 0 when all hold.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import TestFailure  # noqa: E402
from test_cluster_clients import check_member, commits_of  # noqa: E402


def rec(p, o):
    return ("rec", p, o, "v%06d" % o)


def fails(events, start, what):
    try:
        check_member(events, "m", start)
    except TestFailure as e:
        assert ("partition %d" % events[-1][1]) in str(e), "%s: wrong message %s" % (what, e)
        return
    raise AssertionError("%s: check_member accepted it" % what)


def main():
    good = [rec(0, 0), rec(1, 0), rec(0, 1), ("committed", 0, 2), rec(0, 2), rec(1, 1)]
    assert check_member(good, "m", {}) == ({0: 2, 1: 1}, 0)
    assert commits_of(good) == {0: 2}
    # A rejoin: back to the last acknowledged commit, then on; one repeat counted per record read again.
    rejoin = [rec(0, 0), rec(0, 1), ("committed", 0, 2), rec(0, 2), rec(0, 3), rec(0, 2), rec(0, 3), rec(0, 4)]
    assert check_member(rejoin, "m", {}) == ({0: 4}, 2)
    # A member starting at another member's commits.
    assert check_member([rec(2, 7), rec(2, 8)], "m", {2: 7}) == ({2: 8}, 0)

    fails([rec(0, 0), rec(0, 2)], {}, "a gap")
    fails([rec(0, 0), rec(0, 1), rec(0, 1)], {}, "a record twice with no commit to rewind to")
    fails([rec(0, 0), rec(0, 1), ("committed", 0, 1), rec(0, 2), rec(0, 0)], {},
          "a rewind before the last acknowledged commit")
    fails([rec(1, 1)], {}, "a first member not starting at 0")
    fails([rec(2, 6)], {2: 7}, "a second member starting before the commit")
    fails([rec(2, 8)], {2: 7}, "a second member skipping past the commit")
    print("PASS")


if __name__ == "__main__":
    main()
