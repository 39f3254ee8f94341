"""Section 4's durability and machine-limit figures for `make bench`: which durability each
side ran with, how many fsync/fdatasync calls each made per 1,000 verified logins, and the
same run's `openssl speed rsa2048` (what one core can verify, the machine's limit for a
login that costs one RSA-2048 verification).

Syscalls are counted in the kernel with `perf stat` on the syscall tracepoints
(syscalls:sys_enter_fsync, syscalls:sys_enter_fdatasync) attached to the server's processes
and all their threads: no ptrace stop per call, so the counter does not slow the fsync
itself and does not change how many logins a group commit gathers. Where perf cannot
count them (no tracepoints), `strace -f -c` is used instead and the run says so.
"""

import os
import re
import signal
import subprocess
import time
from pathlib import Path

SYNC_CALLS = ("fsync", "fdatasync")
# perf first; BENCH_SYNC_TOOL=strace forces the fallback (to cross-check the two)
TOOLS = tuple(os.environ.get("BENCH_SYNC_TOOL", "perf,strace").split(","))


def openssl_rsa2048(seconds=3):
    """{'sign': per s, 'verify': per s} from `openssl speed -seconds N rsa2048` (one core)."""
    done = subprocess.run(["openssl", "speed", "-seconds", str(seconds), "rsa2048"], capture_output=True, text=True,
                          timeout=seconds * 4 + 60)
    match = re.search(r"^rsa\s+2048 bits\s+\S+s\s+\S+s\s+([\d.]+)\s+([\d.]+)\s*$", done.stdout, re.M)
    if done.returncode != 0 or not match:
        raise RuntimeError("openssl speed rsa2048: %s %s" % (done.stdout[-800:], done.stderr[-800:]))
    return {"sign": float(match.group(1)), "verify": float(match.group(2)), "seconds": seconds}


class SyncCounter:
    """Counts fsync and fdatasync calls of `pids` (every thread, present and future) between
    start() and stop(); stop() returns {"fsync": n, "fdatasync": n, "tool": "perf"|"strace"}."""

    def __init__(self, pids, workdir, started_pids):
        self.pids = [int(p) for p in pids]
        self.workdir = Path(workdir)
        self.started_pids = started_pids
        self.proc = None
        self.tool = None
        self.out = None

    def start(self):
        for tool in TOOLS:
            self.tool = tool
            self.out = self.workdir / ("%s-sync.out" % tool)
            if tool == "perf":
                cmd = ["perf", "stat", "-x", ",", "-o", str(self.out),
                       "-e", ",".join("syscalls:sys_enter_%s" % c for c in SYNC_CALLS),
                       "-p", ",".join(str(p) for p in self.pids)]
            else:
                # -f with -p attaches every thread of each process, and the threads they start
                cmd = ["strace", "-f", "-c", "-e", "trace=%s" % ",".join(SYNC_CALLS), "-o", str(self.out)]
                for pid in self.pids:
                    cmd += ["-p", str(pid)]
            try:
                self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.PIPE, text=True)
            except FileNotFoundError:
                continue
            self.started_pids.append(self.proc.pid)
            time.sleep(0.5)  # attached to every thread before the run begins
            if self.proc.poll() is None:
                return self
            self.proc.wait()
        raise RuntimeError("neither perf nor strace could count fsync/fdatasync of %s" % self.pids)

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("%s did not stop" % self.tool)
        text = self.out.read_text() if self.out.exists() else ""
        counts = {"tool": self.tool}
        for call in SYNC_CALLS:
            if self.tool == "perf":
                # CSV: value,unit,event,... ("<not counted>" when the event could not run)
                match = re.search(r"^([^,\n]*),[^,\n]*,syscalls:sys_enter_%s\b" % call, text, re.M)
                value = match.group(1) if match else None
            else:
                # strace -c: % time, seconds, usecs/call, calls, [errors,] syscall
                match = re.search(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?%s\s*$" % call, text, re.M)
                value = match.group(1) if match else "0"  # strace -c lists only the calls made
            if value is None or not value.strip().isdigit():
                raise RuntimeError("%s counted no %s: %s %s" % (self.tool, call, text[-800:], (err or "")[-400:]))
            counts[call] = int(value)
        return counts


def wait_for_peer_durability(log_path, workers, proc, timeout=30):
    """The peer workers' start-up lines ("peer worker PID: sqlite journal_mode=wal
    synchronous=FULL, …"), one per worker; raises if a worker refused or they did not come."""
    deadline = time.monotonic() + timeout
    while True:
        text = Path(log_path).read_text(errors="replace") if os.path.exists(log_path) else ""
        if "refusing to run" in text:
            raise RuntimeError("the peer verifier refused its durability settings: %s" % text[-800:])
        found = dict(re.findall(r"^peer worker (\d+): (sqlite .*)$", text, re.M))
        if len(found) >= workers:
            settings = sorted(set(found.values()))
            if not all(s.startswith("sqlite journal_mode=wal synchronous=FULL,") for s in settings):
                raise RuntimeError("the peer verifier runs with %s" % settings)
            return settings
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError("the peer workers did not report their durability: %s" % text[-800:])
        time.sleep(0.1)


# HOOK (issue 13): fingerauthd's durability. The store work (group commit) adds a start-up
# line to fingerauthd's log (stderr, which support.authd keeps in <workdir>/authd.stderr)
# naming what it commits with, read back from its own connection: `sqlite WAL
# synchronous=FULL` (or `sqlite synchronous=FULL`), `postgresql synchronous_commit=on
# fsync=on`. Until a fingerauthd prints one, the bench reports its durability as "not
# reported". PRAGMA synchronous is per connection: another process cannot read it back from
# the database file, so fingerauthd's own word, with the fsync counts beside it, is what the
# table can show.
DURABILITY_LINE = re.compile(r"\b(sqlite(?: \w+)? synchronous=\w+|postgresql synchronous_commit=\w+ fsync=\w+)")


def authd_durability(authd):
    """What fingerauthd's start-up line says it commits with ("sqlite WAL synchronous=FULL",
    "postgresql synchronous_commit=on fsync=on"), or None."""
    match = DURABILITY_LINE.search(authd.log_text())
    return match.group(1) if match else None


def durable_postgres():
    """Section 6's cluster: the integration tests' throwaway PostgreSQL (whose start() turns
    fsync off to keep the tests fast), started here with fsync, synchronous_commit and
    full_page_writes on, each read back with SHOW; refuses to go on otherwise."""
    from support.postgres import Postgres

    class DurablePostgres(Postgres):
        SETTINGS = (("fsync", "on"), ("synchronous_commit", "on"), ("full_page_writes", "on"))

        def start(self):
            options = "-k %s -p %d -c listen_addresses=127.0.0.1 -c max_connections=100 %s" % (
                self.dir, self.port, " ".join("-c %s=%s" % setting for setting in self.SETTINGS))
            self._run(["pg_ctl", "start", "-w", "-t", "30", "-D", self.data, "-l", self.logfile, "-o", options])
            self.running = True
            names = [name for name, _ in self.SETTINGS] + ["wal_sync_method"]
            self.settings = {name: self.psql("postgres", "SHOW %s" % name)[0][0] for name in names}
            wrong = [name for name, value in self.SETTINGS if self.settings[name] != value]
            if wrong:
                raise RuntimeError("PostgreSQL runs with %s" % self.settings)

    return DurablePostgres()
