"""ciuickafka_train/metrics.py: starvation and throughput, exported with prometheus_client.

Per rank (label `rank`):
  ck_train_data_loading_percent   torchtitan's data_loading(%): 100 x the time the
                                  trainer spent waiting in next(loader) over the
                                  wall time of the last `window_s` seconds
                                  (a wait still in progress counts up to now)
  ck_train_data_wait_seconds_total, ck_train_step_seconds_total
                                  the same as counters: 100 * rate(wait) / rate(step)
                                  is data_loading(%) over any PromQL range
  ck_train_samples_total{topic}, ck_train_bytes_total{topic}
                                  samples and record bytes handed to the trainer
  ck_train_lag_records{topic}     epoch mode: records of this rank's share not yet
                                  delivered; live mode: log end offset (as the
                                  readers last saw it) minus the next delivered offset
  ck_train_epoch                  the epoch being read

One collector object per process (REGISTRY), reading the live Meters at
scrape time. Meter methods are called by the training thread only; the
collector reads plain floats under a lock: thread-safe.
"""

import threading
import time
from collections import deque

_lock = threading.RLock()
_reg_lock = threading.Lock()
_meters = []
_registered = False
_servers = {}


class Meter:
    def __init__(self, rank, window_s=10.0):
        self.rank = str(rank)
        self.window_s = window_s
        self.wait_total = 0.0
        self.step_total = 0.0
        self.waiting_since = None
        self.last_return = None
        self.samples = {}
        self.bytes = {}
        self.lag = {}
        self.epoch = 0
        self.history = deque()  # (t, wait_cum) points
        with _lock:
            _meters.append(self)

    def begin_wait(self):
        now = time.monotonic()
        with _lock:
            self.waiting_since = now
            if self.last_return is None:
                self.last_return = now
                self.history.append((now, self.wait_total))

    def end_wait(self, topic_counts, topic_bytes):
        now = time.monotonic()
        with _lock:
            if self.waiting_since is not None:
                self.wait_total += now - self.waiting_since
                self.waiting_since = None
            if self.last_return is not None:
                self.step_total += now - self.last_return
            self.last_return = now
            for t, n in topic_counts.items():
                self.samples[t] = self.samples.get(t, 0) + n
            for t, n in topic_bytes.items():
                self.bytes[t] = self.bytes.get(t, 0) + n
            self._point(now)

    def idle(self):
        """The trainer left the loop (epoch end): stop the clock."""
        with _lock:
            self.waiting_since = None
            self.last_return = None
            self.history.clear()

    def _point(self, now):
        self.history.append((now, self.wait_total))
        while len(self.history) > 2 and self.history[1][0] < now - self.window_s:
            self.history.popleft()

    def percent(self):
        with _lock:
            now = time.monotonic()
            if self.last_return is None:
                return 0.0
            cum = self.wait_total + (now - self.waiting_since if self.waiting_since is not None else 0.0)
            self._point(now)
            self.history[-1] = (now, cum)
            t0, w0 = self.history[0]
            if now - t0 <= 0:
                return 0.0
            return max(0.0, min(100.0, 100.0 * (cum - w0) / (now - t0)))

    def close(self):
        with _lock:
            if self in _meters:
                _meters.remove(self)


class _Collector:
    def collect(self):
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
        pct = GaugeMetricFamily("ck_train_data_loading_percent",
                                "Share of the trainer's wall time spent waiting for the next batch", labels=["rank"])
        wait = CounterMetricFamily("ck_train_data_wait_seconds", "Time the trainer waited in next()", labels=["rank"])
        step = CounterMetricFamily("ck_train_step_seconds", "Wall time between batches handed to the trainer",
                                   labels=["rank"])
        smp = CounterMetricFamily("ck_train_samples", "Samples handed to the trainer", labels=["rank", "topic"])
        byt = CounterMetricFamily("ck_train_bytes", "Record bytes handed to the trainer", labels=["rank", "topic"])
        lag = GaugeMetricFamily("ck_train_lag_records", "Records not yet delivered (epoch share or live end)",
                                labels=["rank", "topic"])
        ep = GaugeMetricFamily("ck_train_epoch", "Epoch being read", labels=["rank"])
        with _lock:
            meters = list(_meters)
        for m in meters:
            p = m.percent()
            with _lock:
                pct.add_metric([m.rank], p)
                cur = m.wait_total + (time.monotonic() - m.waiting_since if m.waiting_since is not None else 0.0)
                wait.add_metric([m.rank], cur)
                step.add_metric([m.rank], m.step_total)
                for t, n in m.samples.items():
                    smp.add_metric([m.rank, t], n)
                for t, n in m.bytes.items():
                    byt.add_metric([m.rank, t], n)
                for t, n in m.lag.items():
                    lag.add_metric([m.rank, t], n)
                ep.add_metric([m.rank], m.epoch)
        return [pct, wait, step, smp, byt, lag, ep]


def register(port=None, addr="0.0.0.0"):
    """Registers the collector once per process; serves /metrics on `port` if given."""
    global _registered
    from prometheus_client import REGISTRY, start_http_server
    with _reg_lock:
        if not _registered:
            REGISTRY.register(_Collector())
            _registered = True
        if port is not None and port not in _servers:
            start_http_server(int(port), addr=addr)
            _servers[port] = True
