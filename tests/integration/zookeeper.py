"""tests/integration/zookeeper.py: Debian's ZooKeeper server, standalone, for a test.

`ZooKeeper(workdir)` runs ZooKeeperServerMain (the zookeeper package's jar)
on a free 127.0.0.1 port with its own data directory under the work
directory and the admin server off, and waits until it answers the `srvr`
four-letter word. tickTime is 200 ms by default, so the sessions the brokers
ask for (a few seconds) are within ZooKeeper's bounds (2 to 20 ticks).

kill() (SIGKILL) and start() again keep the port and the data directory:
that is a ZooKeeper outage and return, with the sessions it had restored from
its log. pause()/resume() are SIGSTOP/SIGCONT. stop() at the end of a test.

`client()` gives a kazoo client (python3-kazoo: an independent ZooKeeper
client, not ours) connected to it, for reading Kafka's znodes.
"""

import os
import shutil
import signal
import socket
import subprocess

from harness import check, wait_until

ZK_JAR = "/usr/share/java/zookeeper.jar"


def installed():
    return shutil.which("java") is not None and os.path.exists(ZK_JAR)


class ZooKeeper:
    def __init__(self, workdir, tick_ms=200, name="zookeeper"):
        check(installed(), "ZooKeeper not installed (apt-get install zookeeper)")
        import harness
        self.port = harness.free_port()
        self.dir = os.path.join(workdir, name)
        os.makedirs(os.path.join(self.dir, "data"), exist_ok=True)
        self.cfg = os.path.join(self.dir, "zoo.cfg")
        with open(self.cfg, "w") as f:
            f.write("tickTime=%d\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"
                    "admin.enableServer=false\nmaxClientCnxns=60\n4lw.commands.whitelist=srvr,ruok\n"
                    % (tick_ms, os.path.join(self.dir, "data"), self.port))
        self.proc = None
        self.starts = 0
        self._clients = []

    @property
    def connect(self):
        return "127.0.0.1:%d" % self.port

    def start(self):
        check(self.proc is None, "ZooKeeper already running")
        self.starts += 1
        log = open(os.path.join(self.dir, "zookeeper.%d.log" % self.starts), "wb")
        cmd = ["java", "-Xmx128m", "-Dzookeeper.admin.enableServer=false",
               "-cp", "/etc/zookeeper/conf:" + ZK_JAR, "org.apache.zookeeper.server.ZooKeeperServerMain", self.cfg]
        print("[zookeeper] start #%d on port %d" % (self.starts, self.port), flush=True)
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=self.dir)
        log.close()

        def ready():
            check(self.proc.poll() is None, "ZooKeeper exited with status %s" % self.proc.poll())
            with socket.create_connection(("127.0.0.1", self.port), 1) as s:
                s.sendall(b"srvr")
                return s.recv(100).startswith(b"Zookeeper version")
        wait_until(ready, 40, "ZooKeeper on 127.0.0.1:%d" % self.port, interval=0.1)
        return self

    def kill(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGCONT)
                self.proc.kill()
            self.proc.wait(10)
            self.proc = None
            print("[zookeeper] killed -9", flush=True)

    def pause(self):
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)

    def client(self, chroot=""):
        from kazoo.client import KazooClient
        c = KazooClient(hosts=self.connect + chroot, timeout=10)
        c.start(timeout=15)
        self._clients.append(c)
        return c

    def stop(self):
        for c in self._clients:
            try:
                c.stop()
                c.close()
            except Exception:  # noqa: BLE001 - best effort at teardown
                pass
        self._clients = []
        self.kill()


def run(ctx, scenario):
    """Runs scenario(ctx, zk) against a fresh ZooKeeper. Afterwards every broker
    still running must be alive, and is stopped cleanly (SIGTERM, exit 0) while
    ZooKeeper is still there to see it leave; on a failure the brokers are
    resumed (in case one was paused) and killed. ZooKeeper stops either way."""
    zk = ZooKeeper(ctx.work).start()
    try:
        scenario(ctx, zk)
        for b in ctx.brokers:
            if b.proc is not None:
                check(b.alive(), "broker %s died (exit %s)" % (b.name, b.proc.poll()))
                b.stop()
    finally:
        for b in ctx.brokers:
            if b.proc is not None and b.proc.poll() is None:
                b.proc.send_signal(signal.SIGCONT)
                b.kill()
        zk.stop()


def run_scenario(ctx, scenarios):
    """run() with the scenario the test's first argument names."""
    check(ctx.args and ctx.args[0] in scenarios, "scenario: one of %s" % sorted(scenarios))
    run(ctx, scenarios[ctx.args[0]])
