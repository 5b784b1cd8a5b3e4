"""tests/integration/test_metrics.py: the Prometheus endpoint counts produced bytes.

After 100 records (about 20 KB) are produced to topic "metered" through a
raw Produce v3, GET http://127.0.0.1:<ciuic.metrics.listener port>/metrics
must answer 200 with a line
kafka_server_brokertopicmetrics_bytesin_total{...topic="metered"...} V
where V > 0 (polled for up to 5 s, exporters may lag a scrape), and no such
line for a topic that received nothing.
"""

import os
import re
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402
import kafka_wire as kw  # noqa: E402

LINE = re.compile(r'^kafka_server_brokertopicmetrics_bytesin_total\{([^}]*)\}\s+(\S+)', re.M)


def scrape(b):
    url = "http://127.0.0.1:%d/metrics" % b.metrics_port
    with urllib.request.urlopen(url, timeout=5) as r:
        check(r.status == 200, "GET %s: HTTP %d" % (url, r.status))
        return r.read().decode("utf-8", "replace")


def bytes_in(text, topic):
    for labels, value in LINE.findall(text):
        if re.search(r'(^|,)topic="%s"' % re.escape(topic), labels):
            return float(value)
    return None


def main(ctx):
    b = ctx.broker()
    b.create_topic("metered", 1)
    b.create_topic("idle", 1)
    with b.conn() as c:
        recs = [(b"k%d" % i, b"v" * 200) for i in range(100)]
        res = c.produce([("metered", [(0, kw.record_batch(recs))])], acks=-1)
        check(res[("metered", 0)][0] == 0, "produce: %r" % res)
    text = None
    try:
        harness.wait_until(lambda: (bytes_in(scrape(b), "metered") or 0) > 0, 5, "bytesin_total for metered > 0")
    finally:
        try:
            text = scrape(b)
        except Exception as e:  # noqa: BLE001 - shown with the failure
            print("[metrics] scrape failed: %r" % e)
        if text is not None:
            lines = [l for l in text.splitlines() if "brokertopicmetrics" in l]
            print("[metrics] %d brokertopicmetrics lines:\n  %s" % (len(lines), "\n  ".join(lines[:30])), flush=True)
    v = bytes_in(text, "metered")
    check(v is not None and v > 0, "kafka_server_brokertopicmetrics_bytesin_total{topic=\"metered\"} = %r" % v)
    idle = bytes_in(text, "idle")
    check(not idle, "topic idle has bytes in %r" % idle)


if __name__ == "__main__":
    harness.run_test(main, total_timeout=60)
