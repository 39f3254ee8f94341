"""The Python peer verifier (bench/peer/verifier.py) under uvicorn, the baseline of section
4's keep-alive and new-connection runs."""

import http.client
import os
import signal
import subprocess
import time
from pathlib import Path

from support.world import AUDIENCE

from bench import durability, system
from bench.common import REPO, free_port, plain_env

PEER_WORKERS = 2  # uvicorn worker processes: one per core


class Peer:
    """The Python peer verifier under uvicorn, in its own session (stopped as a group); its
    pid goes to `started`."""

    def __init__(self, venv, ca, db, tmp, started):
        self.port = free_port()
        self.db = str(db)
        env = plain_env()
        env.update({"PEER_DB": str(db), "PEER_AUDIENCE": AUDIENCE, "PYTHONPATH": str(REPO)})
        self.log = open(Path(tmp) / "peer.log", "ab")
        self.proc = subprocess.Popen(
            [str(Path(venv) / "bin" / "python"), "-m", "uvicorn", "bench.peer.verifier:app", "--host", "127.0.0.1",
             "--port", str(self.port), "--workers", str(PEER_WORKERS), "--loop", "uvloop", "--http", "httptools",
             "--ssl-certfile", ca.server_cert, "--ssl-keyfile", ca.server_key, "--no-access-log",
             "--log-level", "warning", "--timeout-keep-alive", "30"],
            env=env, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, start_new_session=True)
        started.append(self.proc.pid)
        self.url = "https://127.0.0.1:%d" % self.port
        context = ca.ssl_context()
        deadline = time.monotonic() + 30
        while True:
            try:
                c = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=2, context=context)
                c.request("GET", "/healthz")
                if c.getresponse().status == 200:
                    c.close()
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("the peer verifier did not start; see peer.log")
            time.sleep(0.1)
        # each worker sets WAL + synchronous=FULL on its connection, reads it back and says so
        self.durability = durability.wait_for_peer_durability(self.log.name, PEER_WORKERS, self.proc)

    def pids(self):
        return [self.proc.pid] + system._children_of(self.proc.pid)

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        self.log.close()

