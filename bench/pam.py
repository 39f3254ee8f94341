"""Logins through real libpam, shared by sections 1, 1b, 2, 3, 5 and 8: fa-pamtest, the
virtual reader with the finger put on at once (`Feeder`), the stand-in login helper, and
the settings they share."""

import os
import re
import subprocess
import threading
import time

from support.vreader import VirtualReader

LOGINS = int(os.environ.get("BENCH_LOGINS", "200"))
SETTLE_S = int(os.environ.get("BENCH_SETTLE_MS", "50")) / 1000.0  # touch-to-login: prompt -> finger
# A stand-in login helper (root 0755 shell script): reads the module's request on stdin and
# answers at once for the module's own jti, as the real helper does after a match. The
# module believes only `ACCEPTED <its jti> <kid>` followed by exit 0.
FAKE_LOGIN = """while IFS= read -r line; do case "$line" in jti=*) jti="${line#jti=}" ;; esac; done
echo 'READY fake reader'
echo 'MATCH right-index-finger'
echo "ACCEPTED $jti fake-kid"
"""
IDENTITY = "finger-A"
PROMPT_OURS = "Place your finger on the fingerprint reader"


class Feeder:
    """Waits for every new virtual-reader socket and sends `commands` at once, until stopped.
    Polls every 0.5 ms, so the finger is 'on the reader' as soon as the device listens."""

    def __init__(self, path, commands):
        self.reader = VirtualReader(path)
        self.commands = list(commands)
        self.stop_event = threading.Event()
        self.fed = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop_event.is_set():
            inode = self.reader._inode()
            if inode is None or inode == self.reader.last_inode:
                time.sleep(0.0005)
                continue
            self.reader.last_inode = inode
            for command in self.commands:
                deadline = time.monotonic() + 2
                while not self.stop_event.is_set():
                    try:
                        self.reader.send(command, timeout=2)
                        break
                    except (ConnectionRefusedError, FileNotFoundError):
                        if time.monotonic() > deadline:
                            break
                        time.sleep(0.0005)
                    except OSError:
                        break
            self.fed += 1

    def stop(self):
        self.stop_event.set()
        self.thread.join(5)


def pamtest(world, service, user, repeat, env=None, extra=(), timeout=900):
    """`repeat` logins in one fa-pamtest process: ([(PAM result name, microseconds)], its output)."""
    cmd = [str(world.build / "fa-pamtest"), "--timing", "--confdir", str(world.confdir), "--service", service,
           "--user", user, "--repeat", str(repeat), *extra]
    done = subprocess.run(cmd, env=env or world.env, capture_output=True, text=True, timeout=timeout)
    results = [(m.group(1), int(m.group(2))) for m in re.finditer(r"^RESULT \d+ (\S+) (\d+)$", done.stdout, re.M)]
    if len(results) != (1 if "--quiet" in extra else repeat):
        raise RuntimeError("fa-pamtest %s: %d results of %d\n%s\n%s" % (service, len(results), repeat,
                                                                        done.stdout[-1500:], done.stderr[-1500:]))
    return results, done.stdout


def success_times(name, results):
    bad = [r for r in results if r[0] != "PAM_SUCCESS"]
    if bad:
        raise RuntimeError("%s: %d of %d logins did not succeed (%s)" % (name, len(bad), len(results), bad[0][0]))
    return [us / 1000.0 for _, us in results]


def write_service(world, name, line):
    (world.confdir / name).write_text(line + "\n")
    return name


def now_us():
    return time.monotonic_ns() // 1000


def send_timed(reader, command, timeout=2.0):
    """Sends one command to the virtual reader; returns the CLOCK_MONOTONIC microsecond just
    before the connection that delivered it was opened."""
    deadline = time.monotonic() + timeout
    while True:
        at = now_us()
        try:
            reader.send(command, timeout=timeout)
            return at
        except (ConnectionRefusedError, FileNotFoundError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.0005)
