"""tests/chaos/test_checker.py: the chaos checker on synthetic histories.

One test per anomaly (a history with exactly that fault, which must be
reported, with an example naming it), clean histories (nothing reported),
and the edge cases: an indefinite failure that later shows up is fine, a
definite one is G1a; duplicates pass with allow_duplicates; markers excuse a
consumer going back; gaps the log itself has are no poll-skip.

Standard library only: /usr/bin/python3 tests/chaos/test_checker.py
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checker  # noqa: E402


class H:
    """Builds a history event by event."""

    def __init__(self):
        self.events = []

    def send(self, proc, value, partition=None, offset=None, fail=None):
        """An invoke, then ok (partition, offset) or fail ('definite'/'indefinite')."""
        self.events.append({"type": "invoke", "process": proc, "value": value})
        if fail is not None:
            self.events.append({"type": "fail", "process": proc, "value": value,
                                "definite": fail == "definite", "error": "test"})
        elif partition is not None:
            self.events.append({"type": "ok", "process": proc, "value": value,
                                "partition": partition, "offset": offset})
        return self

    def poll(self, proc, *records):
        self.events.append({"type": "poll", "process": proc, "records": [list(r) for r in records]})
        return self

    def marker(self, kind, proc, partitions):
        self.events.append({"type": kind, "process": proc, "partitions": partitions})
        return self

    def final(self, partition, *records):
        self.events.append({"type": "final", "partition": partition, "log_start": 0,
                            "end": (records[-1][0] + 1) if records else 0,
                            "records": [list(r) for r in records]})
        return self

    def check(self, **kw):
        return checker.check(self.events, **kw)


def clean():
    """Two producers, two partitions, a consumer that reads everything once."""
    h = H()
    h.send("p0", "p0-0", 0, 0).send("p1", "p1-0", 1, 0).send("p0", "p0-1", 0, 1)
    h.send("p1", "p1-1", 1, 1).send("p0", "p0-2", 1, 2)
    h.marker("assign", "c0", [0, 1])
    h.poll("c0", (0, 0, "p0-0"), (1, 0, "p1-0"))
    h.poll("c0", (0, 1, "p0-1"), (1, 1, "p1-1"), (1, 2, "p0-2"))
    h.final(0, (0, "p0-0"), (1, "p0-1"))
    h.final(1, (0, "p1-0"), (1, "p1-1"), (2, "p0-2"))
    return h


class Clean(unittest.TestCase):
    def test_clean_history_has_no_anomaly(self):
        s = clean().check()
        self.assertTrue(s["valid"], s["anomalies"])
        self.assertEqual(s["stats"]["invoked"], 5)
        self.assertEqual(s["stats"]["acked"], 5)
        self.assertEqual(s["stats"]["final-records"], 5)

    def test_empty_history_is_clean(self):
        self.assertTrue(checker.check([])["valid"])

    def test_unrelated_events_are_ignored(self):
        h = clean()
        h.events.insert(3, {"type": "nemesis", "op": "kill", "node": "broker0"})
        h.events.insert(5, {"type": "error", "process": "c0", "error": "transport"})
        self.assertTrue(h.check()["valid"])

    def test_indefinite_failure_that_appears_is_not_g1a(self):
        h = clean().send("p0", "p0-3", fail="indefinite")
        h.final(1, (0, "p1-0"), (1, "p1-1"), (2, "p0-2"), (3, "p0-3"))
        s = h.check()
        self.assertTrue(s["valid"], s["anomalies"])
        self.assertEqual(s["stats"]["indefinite-later-seen"], 1)

    def test_indefinite_failure_that_never_appears_is_fine(self):
        s = clean().send("p1", "p1-9", fail="indefinite").check()
        self.assertTrue(s["valid"], s["anomalies"])

    def test_unacked_invoke_left_unresolved_is_fine(self):
        s = clean().send("p1", "p1-9").check()
        self.assertTrue(s["valid"], s["anomalies"])

    def test_marker_excuses_going_back(self):
        h = clean()
        h.marker("revoke", "c0", [0, 1]).marker("assign", "c0", [0])
        h.poll("c0", (0, 0, "p0-0"), (0, 1, "p0-1"))
        h.marker("seek", "c0", [0]).poll("c0", (0, 1, "p0-1"))
        s = h.check()
        self.assertTrue(s["valid"], s["anomalies"])

    def test_ack_without_offset_counts_when_present(self):
        h = clean()
        h.events.append({"type": "invoke", "process": "p0", "value": "p0-3"})
        h.events.append({"type": "ok", "process": "p0", "value": "p0-3", "partition": 0, "offset": None})
        h.events = [e for e in h.events if e.get("type") != "final" or e["partition"] != 0]
        h.final(0, (0, "p0-0"), (1, "p0-1"), (2, "p0-3"))
        s = h.check()
        self.assertTrue(s["valid"], s["anomalies"])
        self.assertEqual(s["stats"]["acked-without-offset"], 1)

    def test_marker_without_partitions_resets_all(self):
        h = clean()
        h.marker("lost", "c0", None).poll("c0", (1, 0, "p1-0"))
        self.assertTrue(h.check()["valid"])

    def test_gap_that_the_log_has_is_not_a_poll_skip(self):
        # Offset 1 of partition 0 holds nothing anyone ever read (a control
        # record, say): jumping over it is correct.
        h = H().send("p0", "a", 0, 0).send("p0", "b", 0, 2)
        h.poll("c0", (0, 0, "a"), (0, 2, "b")).final(0, (0, "a"), (2, "b"))
        s = h.check()
        self.assertTrue(s["valid"], s["anomalies"])

    def test_duplicates_allowed_by_flag(self):
        h = H().send("p0", "a", 0, 1)
        h.final(0, (0, "a"), (1, "a"))  # a retry wrote it twice; the ack names the second
        self.assertIn("duplicate", h.check()["anomalies"])
        s = h.check(allow_duplicates=True)
        self.assertTrue(s["valid"], s["anomalies"])

    def test_resend_in_a_new_producer_session_is_counted_not_an_anomaly(self):
        # librdkafka bumped its epoch (1000:0 -> 1000:2) and re-sent "a",
        # whose first copy had been written without an ack reaching it.
        h = H().send("p0", "a", 0, 1)
        h.final(0, (0, "a", "1000:0"), (1, "a", "1000:2"))
        s = h.check()
        self.assertTrue(s["valid"], s["anomalies"])
        self.assertEqual(s["stats"]["resent-in-new-session"], 1)
        self.assertIn("re-sent by a client in a new producer session", checker.render(s))
        # The ack must still name one of the copies.
        h = H().send("p0", "a", 0, 5)
        h.final(0, (0, "a", "1000:0"), (1, "a", "1000:2"))
        self.assertIn("acked-offset-mismatch", h.check()["anomalies"])

    def test_copies_in_one_producer_session_are_duplicates(self):
        h = H().send("p0", "a", 0, 1)
        h.final(0, (0, "a", "1000:0"), (1, "a", "1000:0"))
        self.assertIn("duplicate", h.check()["anomalies"])
        h = H().send("p0", "a", 0, 1)
        h.final(0, (0, "a", "1000:0"), (1, "a"))  # one copy's session unknown: not excused
        self.assertIn("duplicate", h.check()["anomalies"])

    def test_consumers_are_independent(self):
        h = clean()
        h.marker("assign", "c1", [0]).poll("c1", (0, 0, "p0-0"))
        self.assertTrue(h.check()["valid"])


class Anomalies(unittest.TestCase):
    def only(self, h, kind, **kw):
        s = h.check(**kw)
        self.assertFalse(s["valid"])
        self.assertEqual(sorted(s["anomalies"]), [kind], s["anomalies"])
        self.assertTrue(s["anomalies"][kind]["examples"])
        return s["anomalies"][kind]

    def test_inconsistent_offsets(self):
        h = H().send("p0", "a").send("p0", "b", 0, 1)
        h.poll("c0", (0, 0, "a"), (0, 1, "b"))
        h.final(0, (0, "x"), (1, "b"))
        h.send("p1", "x")
        a = self.only(h, "inconsistent-offsets")
        self.assertEqual(a["examples"][0], {"partition": 0, "offset": 0, "values": ["a", "x"]})

    def test_duplicate(self):
        h = H().send("p0", "a").send("p0", "b", 0, 1)
        h.final(0, (0, "a"), (1, "b"), (2, "a"))
        a = self.only(h, "duplicate")
        self.assertEqual(a["examples"][0]["value"], "a")

    def test_lost_write(self):
        h = clean()
        h.events = [e for e in h.events if e.get("type") != "final" or e["partition"] != 0]
        h.final(0, (1, "p0-1"))  # offset 0 gone, offset 1 still there
        a = self.only(h, "lost-write")
        self.assertEqual(a["examples"][0]["value"], "p0-0")
        self.assertEqual(a["count"], 1)

    def test_unseen(self):
        h = clean().send("p1", "p1-2", 1, 3)  # acked at the end, final read stops at 2
        a = self.only(h, "unseen")
        self.assertEqual(a["examples"][0]["offset"], 3)

    def test_unseen_ack_without_offset(self):
        h = clean()
        h.events.append({"type": "invoke", "process": "p0", "value": "p0-3"})
        h.events.append({"type": "ok", "process": "p0", "value": "p0-3", "partition": 0, "offset": -1})
        a = self.only(h, "unseen")
        self.assertEqual(a["examples"][0]["value"], "p0-3")

    def test_unseen_when_the_final_read_of_a_partition_is_missing(self):
        h = H().send("p0", "a", 5, 0)
        a = self.only(h, "unseen")
        self.assertTrue(a["examples"][0]["final_read_missing"])

    def test_acked_offset_mismatch(self):
        h = H().send("p0", "a", 0, 1).send("p0", "b", 0, 0)
        h.final(0, (0, "a"), (1, "b"))
        # b acked at 0 but read at 1 and vice versa; the send order is also broken.
        s = h.check()
        self.assertIn("acked-offset-mismatch", s["anomalies"])
        self.assertEqual(s["anomalies"]["acked-offset-mismatch"]["count"], 2)

    def test_acked_offset_mismatch_alone(self):
        h = H().send("p0", "a", 0, 0).send("p1", "b", 0, 1).send("p1", "c", 0, 2)
        h.final(0, (0, "a"), (1, "c"), (2, "b"), (3, "z"))
        h.send("p2", "z")
        a = self.only(h, "acked-offset-mismatch")
        self.assertEqual(a["count"], 2)

    def test_nonmonotonic_send(self):
        h = H().send("p0", "a", 0, 5).send("p0", "b", 0, 3)
        h.final(0, (3, "b"), (5, "a"))
        a = self.only(h, "nonmonotonic-send")
        self.assertEqual(a["examples"][0]["earlier"], ["a", 5])

    def test_sends_of_one_producer_to_two_partitions_are_not_compared(self):
        h = H().send("p0", "a", 0, 5).send("p0", "b", 1, 0)
        h.final(0, (5, "a")).final(1, (0, "b"))
        self.assertTrue(h.check()["valid"])

    def test_poll_skip(self):
        h = clean()
        h.events = [e for e in h.events if e.get("type") != "poll"]
        h.poll("c0", (1, 0, "p1-0"), (1, 2, "p0-2"))  # 1 exists in the log
        a = self.only(h, "poll-skip")
        self.assertEqual(a["examples"][0]["first_skipped"], 1)

    def test_poll_skip_across_polls(self):
        h = clean()
        h.events = [e for e in h.events if e.get("type") != "poll"]
        h.poll("c0", (1, 0, "p1-0")).poll("c0", (1, 2, "p0-2"))
        self.only(h, "poll-skip")

    def test_nonmonotonic_poll(self):
        h = clean().poll("c0", (0, 0, "p0-0"))  # back to 0, no marker
        a = self.only(h, "nonmonotonic-poll")
        self.assertEqual((a["examples"][0]["from"], a["examples"][0]["to"]), (1, 0))

    def test_marker_for_another_partition_does_not_excuse(self):
        h = clean().marker("assign", "c0", [1]).poll("c0", (0, 0, "p0-0"))
        self.only(h, "nonmonotonic-poll")

    def test_g1a(self):
        h = clean().send("p0", "p0-3", fail="definite")
        h.poll("c0", (0, 2, "p0-3"))
        h.events = [e for e in h.events if e.get("type") != "final" or e["partition"] != 0]
        h.final(0, (0, "p0-0"), (1, "p0-1"), (2, "p0-3"))
        a = self.only(h, "G1a")
        self.assertEqual(a["examples"][0]["value"], "p0-3")

    def test_phantom(self):
        h = clean().poll("c0", (1, 3, "nobody"))
        self.only(h, "phantom")

    def test_examples_are_bounded(self):
        h = H()
        for i in range(50):
            h.send("p0", "v%d" % i, 0, i)
        h.final(0, (100, "v-late"))
        h.send("p1", "v-late")
        a = self.only(h, "lost-write")
        self.assertEqual(a["count"], 50)
        self.assertEqual(len(a["examples"]), checker.MAX_EXAMPLES)


class Program(unittest.TestCase):
    def run_on(self, h, *args):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "history.jsonl")
            with open(path, "w") as f:
                for e in h.events:
                    f.write(json.dumps(e) + "\n")
            out = os.path.join(d, "summary.json")
            p = subprocess.run([sys.executable, checker.__file__, path, "--json", out] + list(args),
                               capture_output=True, text=True, timeout=60)
            with open(out) as f:
                return p, json.load(f)

    def test_exit_0_when_clean(self):
        p, s = self.run_on(clean())
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("no anomalies", p.stdout)
        self.assertTrue(s["valid"])

    def test_exit_1_and_names_the_anomaly(self):
        p, s = self.run_on(clean().send("p1", "p1-2", 1, 3))
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("ANOMALY unseen x1", p.stdout)
        self.assertFalse(s["valid"])


if __name__ == "__main__":
    unittest.main(verbosity=1)
