"""ciuickafka_train/ring.py: a shared-memory ring from one DataLoader worker to the training process.

Without it a chunk crosses the worker -> trainer boundary as five tensors,
and torch shares each one separately: the worker copies it into a new
shared-memory segment, and the trainer fetches each segment's file
descriptor over a socket from a thread of the (busy) worker, five round
trips per chunk. With the ring, the loader maps one anonymous shared region
per worker before the DataLoader forks, the worker writes a chunk's arrays
straight into a free slot, and only a small descriptor (slot, offsets,
dtypes, counts) is pickled through the DataLoader's queue. The trainer
copies out what it keeps (it widens the token ids to int64 anyway) and
frees the slot.

Slots are used in order and freed in order: the DataLoader hands one
worker's chunks to the trainer in the order the worker made them, and the
trainer frees a slot as soon as it has unpacked that chunk. A counting
semaphore holds the number of free slots, so a worker that runs ahead
waits for the trainer instead of overwriting a slot still being read. A
chunk larger than a slot goes the old way (tensors), so nothing is ever
refused.

Needs the fork start method (the loader uses it): the region and the
semaphore are inherited, never pickled.
"""

import mmap
import multiprocessing as mp
import os

import numpy as np

ALIGN = 64


def _up(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


class Ring:
    def __init__(self, slots, slot_bytes):
        if slots < 1 or slot_bytes < ALIGN:
            raise ValueError("a ring needs at least one slot of at least %d bytes" % ALIGN)
        self.slots = int(slots)
        self.slot_bytes = _up(int(slot_bytes))
        # MAP_SHARED | MAP_ANONYMOUS: shared with the workers forked after this; pages become
        # resident only when a chunk first touches them
        self.buf = mmap.mmap(-1, self.slots * self.slot_bytes)
        self.free = mp.get_context("fork").Semaphore(self.slots)
        self.parent = os.getpid()
        self.next_put = 0   # worker side: the slot of the next chunk
        self.next_take = 0  # trainer side: the slot the next descriptor must name
        self.closed = False

    # --- worker side -------------------------------------------------------------------
    def put(self, fields):
        """fields: a list of lists of 1-D NumPy arrays; each inner list is written contiguously
        as one field. Returns the descriptor (slot, [(offset, dtype str, count)]) or None
        when the chunk does not fit a slot (then the caller ships it as tensors)."""
        layout, off = [], 0
        for parts in fields:
            dt = parts[0].dtype if parts else np.dtype(np.uint8)
            count = sum(int(a.size) for a in parts)
            layout.append((off, dt.str, count))
            off = _up(off + count * dt.itemsize)
        if off > self.slot_bytes:
            return None
        while not self.free.acquire(timeout=1.0):
            if os.getppid() != self.parent:  # the training process is gone: nobody will free a slot
                raise SystemExit(0)
        slot = self.next_put
        self.next_put = (slot + 1) % self.slots
        base = slot * self.slot_bytes
        for (o, dts, count), parts in zip(layout, fields):
            dst = np.frombuffer(self.buf, dtype=np.dtype(dts), count=count, offset=base + o)
            pos = 0
            for a in parts:
                dst[pos:pos + a.size] = a.reshape(-1)
                pos += a.size
        return slot, layout

    # --- trainer side ------------------------------------------------------------------
    def view(self, desc):
        """Read-only NumPy views of a chunk's fields. Valid until release(): copy what you keep."""
        slot, layout = desc
        if slot != self.next_take:
            raise RuntimeError("ring: chunk in slot %d arrived where slot %d was due" % (slot, self.next_take))
        base = slot * self.slot_bytes
        out = []
        for o, dts, count in layout:
            v = np.frombuffer(self.buf, dtype=np.dtype(dts), count=count, offset=base + o)
            v.flags.writeable = False
            out.append(v)
        return out

    def release(self):
        self.next_take = (self.next_take + 1) % self.slots
        self.free.release()

    def unblock(self):
        """At shutdown: free every slot, so a worker waiting for one finishes its chunk (which is
        dropped) and sees the DataLoader's end."""
        if not self.closed:
            self.closed = True
            for _ in range(self.slots):
                self.free.release()
