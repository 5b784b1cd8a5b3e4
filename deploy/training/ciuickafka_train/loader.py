"""ciuickafka_train/loader.py: TopicLoader, a PyTorch loader over Kafka topics.

    TopicLoader(bootstrap_servers, topics, *, batch_size, rank=None, world_size=None,
                num_workers=0, mode="epoch", seed=0, shuffle=False, weights=None, **consumer_config)

Iterating yields batches {"input_ids": LongTensor [B, L], ("attention_mask"
when lengths differ), "provenance": Provenance}. It wraps its own
torch DataLoader (batch_size=None, one reader stream per worker, chunks of
several batches per transfer, each through the worker's shared-memory ring,
ring.py) and counts a batch in the cursor only when it
hands it to the trainer, so state_dict() is exactly what the trainer got.

Each iteration (an epoch in mode="epoch") starts by checking the topics in
a Metadata answer for all topics (never creating one), taking the epoch's
snapshot of log start/end offsets (ListOffsets; with torch.distributed
initialised rank 0 takes it and broadcasts it, otherwise every rank takes
its own and they must agree: produce nothing while ranks start an epoch, or
resume every rank from one merged state), and dealing the remaining work
(plan.py) over world_size x max(1, num_workers) readers.

state_dict() is a plain dict (torch.save/json can store it):
  format, mode, topics, epoch, complete, seed, shuffle, shuffle_window,
  snapshot [[topic, partition, start, end]], delivered [[topic, partition, a, b]],
  windows [[topic, partition, lo, hi, k]], assigned [[topic, partition, a, b]]
  (this rank's share of the current epoch), strides [[topic, partition, base, share, [k], next]]
  (live mode's strides), rank, world_size, merged.
Live mode deals partitions over ranks, then over a rank's workers, and cuts a
partition into strides when a rank has more workers than partitions
(plan.live_layout); a resumed unit starts at the delivered frontier and skips
what was delivered above it (plan.live_frontier).

With commit_group, state_dict() also records the offsets it proves per
partition this rank commits, and commit(checkpoint_id) sends exactly those
(kafka-python, OffsetCommit with generation -1: the group is never joined).

load_state_dict() takes this rank's own state (same world size; any
num_workers) or TopicLoader.merge_state_dicts(all ranks' states) (any world
size, any num_workers).

One TopicLoader per training process, iterated by one thread: not
thread-safe. Readers run in DataLoader worker processes (fork) and create
their own consumers there.
"""

import os
import uuid
import warnings

import numpy as np
import torch
from confluent_kafka import Consumer, KafkaException, TopicPartition

from . import metrics
from .errors import BrokerUnreachable, CheckpointMismatch, OffsetsDeleted, TrainReaderError, check_topics
from .plan import (INF, Unit, group_rows, live_frontier, live_layout, merge_intervals, remaining, shuffle_units,
                   split, to_rows)
from .reader import read_chunks, unit_key
from .ring import Ring

FORMAT = "ciuickafka_train/1"


class Provenance:
    """Where each sample of a batch came from: .topic (list of str),
    .partition and .offset (LongTensors); iterating gives (topic, partition, offset)."""

    __slots__ = ("topics", "topic_index", "partition", "offset")

    def __init__(self, topics, topic_index, partition, offset):
        self.topics = topics
        self.topic_index = topic_index
        self.partition = partition
        self.offset = offset

    @property
    def topic(self):
        return [self.topics[i] for i in self.topic_index.tolist()]

    def __len__(self):
        return int(self.offset.shape[0])

    def __getitem__(self, i):
        return (self.topics[int(self.topic_index[i])], int(self.partition[i]), int(self.offset[i]))

    def __iter__(self):
        t = self.topics
        return iter([(t[a], b, c) for a, b, c in zip(self.topic_index.tolist(), self.partition.tolist(),
                                                       self.offset.tolist())])

    def __repr__(self):
        return "Provenance(%d samples)" % len(self)


def _default_rank_world():
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except Exception:  # noqa: BLE001
        pass
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


class _Dataset(torch.utils.data.IterableDataset):
    def __init__(self, specs, rings=None):
        self.specs = specs
        self.rings = rings

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        w = 0 if info is None else info.id
        return read_chunks(self.specs[w], self.rings[w] if self.rings and info is not None else None)


def _identity(x):
    return x


class TopicLoader:
    def __init__(self, bootstrap_servers, topics, *, batch_size, rank=None, world_size=None, num_workers=0,
                 mode="epoch", seed=0, shuffle=False, weights=None, shuffle_window=4096, prefetch_factor=2,
                 batches_per_transfer=None, pin_memory=False, metrics_port=None, timeout_s=15.0,
                 live_flush_s=0.2, metrics_window_s=10.0, commit_group=None, ring_slot_bytes=8 << 20,
                 **consumer_config):
        if isinstance(topics, str):
            topics = [topics]
        self.topics = list(topics)
        if not self.topics or len(set(self.topics)) != len(self.topics):
            raise ValueError("topics must be one or more distinct topic names, got %r" % (topics,))
        if mode not in ("epoch", "live"):
            raise ValueError("mode must be 'epoch' or 'live', got %r" % (mode,))
        if shuffle and mode == "live":
            raise ValueError("shuffle=True needs mode='epoch' (live mode delivers in arrival order)")
        if int(batch_size) < 1:
            raise ValueError("batch_size must be >= 1")
        if weights is not None:
            if isinstance(weights, dict):
                weights = [float(weights[t]) for t in self.topics]
            weights = [float(w) for w in weights]
            if len(weights) != len(self.topics) or any(w <= 0 for w in weights):
                raise ValueError("weights: one positive weight per topic, got %r" % (weights,))
        r, w = _default_rank_world()
        self.rank = r if rank is None else int(rank)
        self.world_size = w if world_size is None else int(world_size)
        if not 0 <= self.rank < self.world_size:
            raise ValueError("rank %d is not in [0, world_size=%d)" % (self.rank, self.world_size))
        self.bootstrap = bootstrap_servers
        self.batch_size = int(batch_size)
        self.num_workers = int(num_workers)
        self.mode = mode
        self.seed = int(seed)
        self.shuffle = bool(shuffle)
        self.shuffle_window = int(shuffle_window)
        self.weights = weights
        self.prefetch_factor = int(prefetch_factor)
        self.batches_per_transfer = int(batches_per_transfer) if batches_per_transfer else 0
        self.pin_memory = bool(pin_memory) and torch.cuda.is_available()
        self.timeout_s = float(timeout_s)
        self.live_flush_s = float(live_flush_s)
        self.ring_slot_bytes = int(ring_slot_bytes)  # 0: chunks cross as tensors (torch's sharing)
        self.transfers = {"ring": 0, "tensors": 0}  # chunks received from workers, by how they crossed
        self.consumer_config = {k.replace("_", "."): v for k, v in consumer_config.items()}
        self.commit_group = commit_group
        self._committer = None
        self._to_commit = None    # {(t, p): next offset} as of the last state_dict()
        self.meter = metrics.Meter(self.rank, metrics_window_s)
        metrics.register(metrics_port)
        self._epoch = 0
        self._explicit = False
        self._reset_epoch_state()

    # --- state ----------------------------------------------------------------------
    def _reset_epoch_state(self):
        self._complete = False
        self._snapshot = None     # {(t, p): (start, end)}
        self._history = []        # delivered rows from before this plan
        self._history_strides = []  # live strides rows from before this plan
        self._commit_from = {}    # {(t, p): first offset} of the partitions this rank commits
        self._assigned = None     # this rank's units of the current plan
        self._progress = {}       # unit key (ti, p, lo) -> (next, wlo, whi, k)
        self._units = {}          # unit key -> Unit
        self._resume = None       # a loaded state to plan from

    def set_epoch(self, epoch):
        epoch = int(epoch)
        if epoch != self._epoch:
            self._epoch = epoch
            self._reset_epoch_state()
        self._explicit = True

    @property
    def epoch(self):
        return self._epoch

    def _delivered_rows(self):
        rows = list(self._history)
        for key, (nxt, wlo, whi, k) in self._progress.items():
            u = self._units[key]
            if nxt > u.lo and u.share == 1:
                rows.append([u.topic, u.partition, u.lo, min(nxt, u.hi)])
        return to_rows(group_rows(rows))

    def _stride_rows(self):
        """Live strides and units that skip earlier deliveries: [t, p, base, share, ks, next]."""
        rows = [list(r) for r in self._history_strides]
        for key, (nxt, *_rest) in self._progress.items():
            u = self._units[key]
            if u.share > 1:
                rows.append([u.topic, u.partition, u.base, u.share, list(u.ks), max(nxt, u.lo)])
        return sorted(rows)

    def _window_rows(self):
        out = []
        for key, (nxt, wlo, whi, k) in self._progress.items():
            if whi > wlo and k > 0:
                u = self._units[key]
                out.append([u.topic, u.partition, wlo, whi, k])
        return sorted(out)

    def state_dict(self):
        st = self._state()
        self._to_commit = self._commit_offsets(st)
        return st

    # --- committing (commit_group) ------------------------------------------------------
    def _commit_offsets(self, st):
        """{(t, p): the next offset to deliver} for the partitions this rank commits: the end
        of the delivered prefix that st proves, from the partition's first offset of the plan."""
        if not self.commit_group or not self._commit_from or st.get("epoch") != self._epoch:
            return None
        know = group_rows(st["delivered"])
        strides = {}
        for t, p, base, share, ks, nxt in st.get("strides") or []:
            strides.setdefault((t, int(p)), []).append((int(base), int(share), tuple(ks), int(nxt)))
        return {tp: live_frontier(s, know.get(tp, []), strides.get(tp, []))[0]
                for tp, s in sorted(self._commit_from.items())}

    def commit(self, checkpoint_id):
        """Commits, to the consumer group `commit_group`, the offsets of the last state_dict():
        per partition this rank can prove, the next offset to deliver, with OffsetCommit metadata
        "ciuickafka_train checkpoint=<id> epoch=<n>". Call it after the checkpoint holding that
        state is durably saved. The group is never joined (no member, no rebalance); lag tools
        read these offsets, but resuming always comes from the checkpoint. Returns
        {(topic, partition): offset} committed."""
        if not self.commit_group:
            raise ValueError("commit() needs TopicLoader(..., commit_group='name')")
        if self._to_commit is None:
            raise ValueError("commit(): take state_dict() first; the commit is that state's offsets")
        offsets = self._to_commit
        if not offsets:
            return {}
        try:
            from kafka import KafkaConsumer, TopicPartition as KTP
            from kafka.errors import KafkaError as KError
            from kafka.structs import OffsetAndMetadata
        except ImportError:
            raise TrainReaderError("commit_group needs kafka-python (Debian: python3-kafka; pip install "
                                   "kafka-python): confluent-kafka 1.7 cannot set OffsetCommit metadata") from None
        meta = "ciuickafka_train checkpoint=%s epoch=%d" % (checkpoint_id, self._epoch)
        try:
            if self._committer is None:
                # a group id but no subscribe(): kafka-python then commits with generation -1 and
                # no member id, the "simple consumer" commit, and never sends JoinGroup
                self._committer = KafkaConsumer(
                    bootstrap_servers=self.bootstrap.split(","), group_id=self.commit_group,
                    enable_auto_commit=False, client_id="ciuickafka-train-commit-%d" % self.rank,
                    request_timeout_ms=int(self.timeout_s * 1000) + 1000,
                    api_version_auto_timeout_ms=int(self.timeout_s * 1000))
            self._committer.commit({KTP(t, p): OffsetAndMetadata(o, meta) for (t, p), o in offsets.items()})
        except (KError, OSError, AssertionError) as e:
            raise TrainReaderError("committing checkpoint %s to group %r at %s failed: %r (the checkpoint itself is "
                                   "unaffected)" % (checkpoint_id, self.commit_group, self.bootstrap, e)) from None
        return dict(offsets)

    def _state(self):
        if self._resume is not None:  # loaded, not yet iterated: hand it back unchanged
            st = dict(self._resume)
            st.update(rank=self.rank, world_size=self.world_size)
            return st
        assigned = None
        if self._assigned is not None:
            assigned = to_rows(group_rows([[u.topic, u.partition, u.lo, u.hi] for u in self._assigned]))
        return {
            "format": FORMAT, "mode": self.mode, "topics": list(self.topics), "epoch": self._epoch,
            "complete": self._complete, "seed": self.seed, "shuffle": self.shuffle,
            "shuffle_window": self.shuffle_window,
            "snapshot": None if self._snapshot is None else
            [[t, p, s, e] for (t, p), (s, e) in sorted(self._snapshot.items())],
            "delivered": self._delivered_rows(), "windows": self._window_rows(), "assigned": assigned,
            "strides": self._stride_rows(),
            "rank": self.rank, "world_size": self.world_size, "num_workers": self.num_workers, "merged": False,
        }

    @staticmethod
    def merge_state_dicts(states):
        """One global state from every rank's state_dict() (any order)."""
        states = list(states)
        if not states:
            raise ValueError("merge_state_dicts: no states")
        first = states[0]
        for s in states:
            if s.get("format") != FORMAT:
                raise CheckpointMismatch("not a ciuickafka_train state (format %r)" % s.get("format"))
            for k in ("topics", "mode", "seed", "shuffle"):
                if s.get(k) != first.get(k):
                    raise CheckpointMismatch("states disagree on %s: %r vs %r" % (k, first.get(k), s.get(k)))
        epochs = {s["epoch"] for s in states}
        if len(epochs) != 1:
            raise CheckpointMismatch("ranks are in different epochs %s: checkpoint every rank at the same step"
                                     % sorted(epochs))
        snaps = {repr(s["snapshot"]) for s in states if s["snapshot"] is not None}
        if len(snaps) > 1:
            raise CheckpointMismatch("ranks took different epoch snapshots: they cannot be merged")
        snap = next((s["snapshot"] for s in states if s["snapshot"] is not None), None)
        ws = {s.get("world_size") for s in states if not s.get("merged")}
        ranks = sorted(s.get("rank") for s in states if not s.get("merged"))
        if ws and (len(ws) != 1 or ranks != list(range(next(iter(ws))))):
            raise CheckpointMismatch("merge needs exactly one state per rank of one world (got ranks %s of %s)"
                                     % (ranks, sorted(ws)))
        delivered = to_rows(group_rows([r for s in states for r in s["delivered"]]))
        windows = sorted({tuple(w) for s in states for w in s["windows"]})
        strides = sorted({(t, p, b, sh, tuple(ks), n) for s in states for t, p, b, sh, ks, n in s.get("strides", [])})
        return {
            "format": FORMAT, "mode": first["mode"], "topics": list(first["topics"]), "epoch": first["epoch"],
            "complete": all(s["complete"] for s in states), "seed": first["seed"], "shuffle": first["shuffle"],
            "shuffle_window": first["shuffle_window"], "snapshot": snap, "delivered": delivered,
            "windows": [list(w) for w in windows], "strides": [[t, p, b, sh, list(ks), n] for t, p, b, sh, ks, n in strides],
            "assigned": None, "rank": None, "world_size": None,
            "num_workers": None, "merged": True,
        }

    def load_state_dict(self, state):
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            raise CheckpointMismatch("not a ciuickafka_train loader state (format %r)" %
                                     (state.get("format") if isinstance(state, dict) else type(state).__name__))
        if list(state["topics"]) != self.topics:
            raise CheckpointMismatch(
                "the checkpoint is for topics %s, this loader reads %s: load the checkpoint of this data, or start "
                "without one" % (state["topics"], self.topics))
        if state["mode"] != self.mode:
            raise CheckpointMismatch("the checkpoint was taken in mode %r, this loader runs mode %r"
                                     % (state["mode"], self.mode))
        if not state.get("merged") and (state["world_size"] != self.world_size or state["rank"] != self.rank):
            raise CheckpointMismatch(
                "this is rank %s's state of a world of %s, this loader is rank %d of %d: merge every rank's state "
                "with TopicLoader.merge_state_dicts(states) to resume with another world size"
                % (state["rank"], state["world_size"], self.rank, self.world_size))
        if state["shuffle"] != self.shuffle or state["seed"] != self.seed:
            raise CheckpointMismatch("the checkpoint used shuffle=%s seed=%s, this loader shuffle=%s seed=%s"
                                     % (state["shuffle"], state["seed"], self.shuffle, self.seed))
        self._epoch = int(state["epoch"])
        self._reset_epoch_state()
        self._explicit = False
        self._complete = bool(state["complete"])
        self.shuffle_window = int(state["shuffle_window"])
        self._resume = dict(state)

    # --- planning -------------------------------------------------------------------
    def _admin(self):
        return Consumer({"bootstrap.servers": self.bootstrap, "group.id": "ciuickafka-train-meta-" + uuid.uuid4().hex,
                         "enable.auto.commit": False, "allow.auto.create.topics": False,
                         "socket.timeout.ms": int(self.timeout_s * 1000)})

    def _metadata(self, c):
        try:
            md = c.list_topics(timeout=self.timeout_s)
        except KafkaException as e:
            raise BrokerUnreachable(
                "cannot reach a broker at %s within %.0f s (%s): check bootstrap_servers and that the broker runs"
                % (self.bootstrap, self.timeout_s, e.args[0])) from None
        return check_topics(md, self.topics, self.bootstrap)

    def _watermarks(self, c, parts):
        out = {}
        for t in self.topics:
            for p in parts[t]:
                try:
                    lo, hi = c.get_watermark_offsets(TopicPartition(t, p), timeout=self.timeout_s, cached=False)
                except KafkaException as e:
                    raise BrokerUnreachable("ListOffsets for %s[%d] at %s failed within %.0f s (%s)"
                                            % (t, p, self.bootstrap, self.timeout_s, e.args[0])) from None
                out[(t, p)] = (lo, hi)
        return out

    def _broadcast(self, obj):
        try:
            import torch.distributed as dist
            if dist.is_available() and dist.is_initialized() and dist.get_world_size() == self.world_size:
                box = [obj]
                dist.broadcast_object_list(box, src=0)
                return box[0]
        except ImportError:
            pass
        return obj

    def _plan(self):
        """This rank's workers' units for the coming iteration."""
        done = self._complete if self._resume is None else bool(self._resume.get("complete"))
        if done and not self._explicit:
            self._epoch += 1
            self._reset_epoch_state()
        elif not done and self._resume is None and self._assigned is not None:
            # an earlier iteration of this epoch stopped part-way: continue from what was delivered
            self._resume = self._state()
        self._explicit = False
        st = self._resume
        c = self._admin()
        try:
            parts = self._metadata(c)
            marks = self._watermarks(c, parts)
        finally:
            c.close()
        W = max(1, self.num_workers)
        if self.mode == "live":
            return self._plan_live(parts, marks, st, W)
        if done and self._resume is not None:
            return [[] for _ in range(W)]  # set_epoch() named an epoch this checkpoint finished
        if done and self._assigned is not None:
            return [[] for _ in range(W)]
        if st is not None and st["snapshot"] is not None:
            snap = {(t, int(p)): (int(s), int(e)) for t, p, s, e in st["snapshot"]}
        else:
            snap = self._broadcast({(t, p): marks[(t, p)] for t in self.topics for p in parts[t]})
        self._snapshot = snap
        delivered = st["delivered"] if st else []
        windows = st["windows"] if st else []
        if st is not None and not st.get("merged") and st.get("assigned") is not None:
            ranges = {k: v for k, v in group_rows(st["assigned"]).items()}
            readers, mine = W, range(W)
        else:
            ranges = {tp: [[s, e]] for tp, (s, e) in snap.items()}
            readers, mine = self.world_size * W, range(self.rank * W, self.rank * W + W)
        free, wins = remaining(ranges, delivered, windows)
        for (t, p), ivs in free.items():
            lo = marks.get((t, p), (0, 0))[0]
            if ivs and ivs[0][0] < lo:
                raise OffsetsDeleted(
                    "the checkpoint resumes topic %r partition %d at offset %d, but the log now starts at %d "
                    "(retention or DeleteRecords removed %d record(s) of this epoch): start a new epoch with "
                    "set_epoch(%d), or resume from a newer checkpoint"
                    % (t, p, ivs[0][0], lo, lo - ivs[0][0], self._epoch + 1))
        plan = split(free, wins, readers, self.topics)
        units = [plan[r] for r in mine]
        if self.shuffle:
            units = [shuffle_units(u, self.seed, self._epoch, r) for u, r in zip(units, mine)]
        self._history = list(delivered)
        self._history_strides = []
        self._assigned = [u for us in units for u in us]
        self._resume = None
        self._register_units()
        # This rank commits a partition (commit_group) when it holds the first offset not yet
        # delivered as far as it knows: then its cursor proves every offset below what it commits.
        know = group_rows(delivered)
        self._commit_from = {}
        for (t, p), (s, e) in snap.items():
            m = live_frontier(s, know.get((t, p), []), [])[0]
            if m < e and any(u.topic == t and u.partition == p and u.lo <= m <= u.hi for u in self._assigned):
                self._commit_from[(t, p)] = s
        return units

    def _plan_live(self, parts, marks, st, W):
        """Live units from the log start or the checkpoint. A unit starts at the first offset its
        readers have not delivered (`live_frontier`) and skips what was delivered above it; with more
        readers than partitions each partition is cut into strides (plan.live_layout)."""
        self._history = list(st["delivered"]) if st else []
        self._history_strides = [list(r) for r in st.get("strides", [])] if st else []
        own = st is not None and not st.get("merged")
        self._resume = None
        know = group_rows(self._history)
        strides = {}
        for t, p, base, share, ks, nxt in self._history_strides:
            strides.setdefault((t, int(p)), []).append((int(base), int(share), tuple(ks), int(nxt)))
        mine = range(self.rank * W, self.rank * W + W)
        out = [[] for _ in range(W)]
        self._commit_from = {}
        for t in self.topics:
            layout = live_layout(list(parts[t]), self.world_size, W)
            for r in mine:
                for p, share, ks in layout.get(r, []):
                    lo = marks[(t, p)][0]
                    ivs, strs = know.get((t, p), []), strides.get((t, p), [])
                    m, _ = live_frontier(lo, ivs, strs)
                    base = m
                    spans = share > 1 and share > W and len(parts[t]) < self.world_size
                    if own and spans and (ivs or strs):
                        # strides shared with other ranks: this rank's state cannot see theirs, so its
                        # strides continue exactly as they were (same base, share and residue)
                        old = [x for x in strs if x[1] == share and x[2] == ks]
                        if not old:
                            raise CheckpointMismatch(
                                "topic %r partition %d is shared by several ranks' strides and this rank's state "
                                "has no stride %s of %d: resume with the same num_workers, or merge every rank's "
                                "state with TopicLoader.merge_state_dicts(states)" % (t, p, list(ks), share))
                        base = max(old, key=lambda x: x[3])[0]
                        start = max(x[3] for x in old if x[0] == base)
                    else:
                        start = m
                    m2, above = live_frontier(start, ivs, strs)
                    exclude = ([[start, m2]] if m2 > start else []) + above
                    if share > 1 and (m - base) % share in ks:
                        self._commit_from[(t, p)] = lo
                    elif share == 1:
                        self._commit_from[(t, p)] = lo
                    out[r - mine[0]].append(Unit(t, p, start, INF, 0, False, share, tuple(ks), base,
                                                 tuple((a, b) for a, b in exclude)))
        self._assigned = [u for us in out for u in us]
        self._register_units()
        return out

    def _register_units(self):
        ti = {t: i for i, t in enumerate(self.topics)}
        self._units = {unit_key(ti[u.topic], u): u for u in self._assigned}
        self._progress = {k: ((u.lo, u.lo, u.hi, u.skip) if u.window else (u.lo, 0, 0, 0))
                          for k, u in self._units.items()}

    def _specs(self, units):
        W = max(1, self.num_workers)
        return [{
            "bootstrap": self.bootstrap, "topics": self.topics, "units": units[w], "mode": self.mode,
            "seed": self.seed, "epoch": self._epoch, "shuffle": self.shuffle, "shuffle_window": self.shuffle_window,
            "weights": self.weights, "batch_size": self.batch_size, "consumer_config": self.consumer_config,
            "reader": self.rank * W + w, "worker": w, "rank": self.rank, "batches_per_transfer": self.batches_per_transfer,
            "timeout_s": self.timeout_s, "live_flush_s": self.live_flush_s,
        } for w in range(W)]

    # --- iteration ------------------------------------------------------------------
    def __iter__(self):
        units = self._plan()
        self.meter.epoch = self._epoch
        return _Iter(self, units)

    def _lag(self, hw):
        lag = {t: 0 for t in self.topics}
        for key, u in self._units.items():
            nxt = self._progress.get(key, (u.lo,))[0]
            end = u.hi if u.hi < INF else hw.get((key[0], u.partition), nxt)
            lag[u.topic] += max(0, end - nxt) * len(u.ks) // u.share
        self.meter.lag = lag


class _Iter:
    def __init__(self, loader, units):
        self.L = loader
        self.queue = []
        self.hw = {}
        self.rings = None
        self.dl = None
        if all(not u for u in units):
            self.it = iter(())
        else:
            specs = loader._specs(units)
            if loader.num_workers > 0 and loader.ring_slot_bytes > 0:
                # slots: the DataLoader's prefetch per worker, one being unpacked, one spare
                self.rings = [Ring(loader.prefetch_factor + 2, loader.ring_slot_bytes)
                              for _ in range(loader.num_workers)]
            ds = _Dataset(specs, self.rings)
            if loader.num_workers > 0:
                with warnings.catch_warnings():  # "suggested max number of worker": the user chose
                    warnings.simplefilter("ignore", UserWarning)
                    self.dl = torch.utils.data.DataLoader(
                        ds, batch_size=None, num_workers=loader.num_workers, collate_fn=_identity,
                        prefetch_factor=loader.prefetch_factor, persistent_workers=False,
                        multiprocessing_context="fork")
                    self.it = iter(self.dl)
            else:
                self.it = iter(ds)
        self.finished = False
        loader._lag({})

    def __iter__(self):
        return self

    def close(self):
        """Frees every ring slot first, so no worker stays blocked waiting for one while the
        DataLoader shuts its workers down."""
        for r in self.rings or ():
            r.unblock()
        it, self.it = self.it, iter(())
        shutdown = getattr(it, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __next__(self):
        L = self.L
        L.meter.begin_wait()
        while not self.queue:
            try:
                chunk = next(self.it)
            except StopIteration:
                self.finished = True
                L.meter.idle()
                if L.mode == "epoch":
                    L._complete = True
                raise
            self._unpack(chunk)
        batch, delta, counts, nbytes = self.queue.pop(0)
        L._progress.update(delta)
        L.meter.end_wait(counts, nbytes)
        if len(self.queue) == 0 or L.mode == "live":
            L._lag(self.hw)
        return batch

    def _unpack(self, chunk):
        if self.rings is not None:
            self.L.transfers["ring" if "ring" in chunk else "tensors"] += 1
        if "ring" not in chunk:
            self._unpack_fields(chunk, chunk["data"].numpy(), chunk["lengths"].numpy(), chunk["topic"],
                                chunk["partition"], chunk["offset"])
            return
        ring = self.rings[chunk["worker"]]
        try:
            data, lengths, tix, part, off = ring.view(chunk["ring"])
            # the token bytes are widened (copied) below; the per-sample arrays are kept, so copied
            self._unpack_fields(chunk, data, lengths.copy(), torch.from_numpy(tix.copy()),
                                torch.from_numpy(part.copy()), torch.from_numpy(off.copy()))
        finally:
            ring.release()

    def _unpack_fields(self, chunk, data, lengths, tix, part, off):
        L = self.L
        self.hw.update(chunk["hw"])
        pos = 0
        s0 = 0
        for n, width, nbytes, delta, rbytes in chunk["batches"]:
            raw = data[pos:pos + nbytes]
            ids = raw.view(np.uint16 if width == 2 else np.uint32).astype(np.int64)
            lens = lengths[s0:s0 + n]
            batch = {}
            if n and (lens == lens[0]).all():
                batch["input_ids"] = torch.from_numpy(ids.reshape(n, int(lens[0]) if n else 0))
            else:
                maxlen = int(lens.max()) if n else 0
                out = np.zeros((n, maxlen), np.int64)
                mask = np.zeros((n, maxlen), np.int64)
                ends = np.cumsum(lens)
                for i in range(n):
                    ln = int(lens[i])
                    out[i, :ln] = ids[ends[i] - ln:ends[i]]
                    mask[i, :ln] = 1
                batch["input_ids"] = torch.from_numpy(out)
                batch["attention_mask"] = torch.from_numpy(mask)
            if L.pin_memory:
                batch = {k: v.pin_memory() for k, v in batch.items()}
            ti = tix[s0:s0 + n]
            batch["provenance"] = Provenance(L.topics, ti, part[s0:s0 + n], off[s0:s0 + n])
            if len(L.topics) == 1:
                counts = {L.topics[0]: n}
                nb = {L.topics[0]: rbytes}
            else:
                tl = ti.tolist()
                counts = {t: tl.count(i) for i, t in enumerate(L.topics) if i in tl}
                nb = {t: rbytes * c // max(1, n) for t, c in counts.items()}
            self.queue.append((batch, delta, counts, nb))
            pos += nbytes
            s0 += n
