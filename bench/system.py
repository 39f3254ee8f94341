"""The parts of `make bench` that touch the machine: a bench user for pam_unix and
pam_fprintd, and Debian's fprintd on a system bus with polkitd, started by hand.
Everything is undone in `close()` (called from a `finally`), and `leftovers()` checks it."""

import os
import shutil
import signal
import subprocess
import time

BENCH_USER = "fabench"
BUS_DIR = "/run/dbus"
BUS_SOCKET = "/run/dbus/system_bus_socket"
BUS_PID = "/run/dbus/pid"
FPRINT_STATE = "/var/lib/fprint"


def _exists(path):
    return os.path.lexists(path)


def user_exists(name):
    return subprocess.run(["getent", "passwd", name], capture_output=True).returncode == 0


class BenchUser:
    """A real user with a yescrypt password (made now), for pam_unix and fprintd."""

    def __init__(self, password):
        self.name = BENCH_USER
        self.created = False
        if user_exists(self.name):
            raise RuntimeError("user %s exists already (left by an earlier run?): userdel it first" % self.name)
        subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", self.name], check=True)
        self.created = True
        done = subprocess.run(["chpasswd", "-c", "YESCRYPT"], input="%s:%s\n" % (self.name, password),
                              text=True, capture_output=True)
        if done.returncode != 0:
            raise RuntimeError("chpasswd failed: %s" % done.stderr.strip())
        with open("/etc/shadow") as shadow:  # the hash itself is never printed
            entry = next(line for line in shadow if line.startswith(self.name + ":"))
        self.scheme = entry.split(":")[1].split("$")[1] if entry.split(":")[1].startswith("$") else "?"
        if self.scheme != "y":
            raise RuntimeError("the bench user's hash is not yescrypt ($%s$)" % self.scheme)

    def close(self):
        if self.created:
            subprocess.run(["userdel", self.name], capture_output=True)
            self.created = False


def _wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out waiting for " + what)
        time.sleep(0.05)


def _name_has_owner(name):
    done = subprocess.run(["dbus-send", "--system", "--print-reply", "--dest=org.freedesktop.DBus",
                           "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner", "string:" + name],
                          capture_output=True, text=True, timeout=5)
    return "boolean true" in done.stdout


def _children_of(pid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    found.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return found


class Fprintd:
    """dbus-daemon --system, polkitd and fprintd (virtual reader) started by hand."""

    def __init__(self, socket_path, log_dir):
        self.pids = []  # (name, pid), stopped in reverse order
        self.procs = []
        self.bus_pid = None
        self.had_socket = _exists(BUS_SOCKET)
        self.had_pidfile = _exists(BUS_PID)
        self.had_bus_dir = _exists(BUS_DIR)
        self.had_state = _exists(FPRINT_STATE)
        self.user_state = None
        self.log_dir = log_dir
        if self.had_socket:
            raise RuntimeError("a system bus is already running (%s): the bench starts its own" % BUS_SOCKET)
        os.makedirs(BUS_DIR, exist_ok=True)
        out = subprocess.run(["dbus-daemon", "--system", "--fork", "--print-pid"], capture_output=True, text=True,
                             timeout=10, check=True).stdout
        self.bus_pid = int(out.split()[0])
        _wait_for(lambda: _exists(BUS_SOCKET), 5, "the system bus socket")
        self._start("polkitd", ["/usr/lib/polkit-1/polkitd", "--no-debug"], {})
        _wait_for(lambda: _name_has_owner("org.freedesktop.PolicyKit1"), 10, "polkitd on the bus")
        self._start("fprintd", ["/usr/libexec/fprintd", "--no-timeout"], {"FP_VIRTUAL_DEVICE": str(socket_path)})
        _wait_for(lambda: _name_has_owner("net.reactivated.Fprint"), 10, "fprintd on the bus")

    def _start(self, name, argv, extra_env):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FP_", "LD_PRELOAD", "NSS_WRAPPER"))}
        env.update(extra_env)
        log = open(os.path.join(self.log_dir, name + ".log"), "ab")
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True)
        log.close()
        self.procs.append((name, proc))

    def enroll(self, user, feed):
        """fprintd-enroll USER with `feed` (a started VirtualReader feed) giving the scans."""
        self.user_state = os.path.join(FPRINT_STATE, user)
        done = subprocess.run(["fprintd-enroll", "-f", "right-index-finger", user], capture_output=True, text=True,
                              timeout=60)
        feed.wait(timeout=30)
        if "enroll-completed" not in done.stdout:
            raise RuntimeError("fprintd-enroll failed: %s %s" % (done.stdout[-500:], done.stderr[-500:]))

    def close(self):
        # processes the bus may have activated on its own are its children: stop them too
        extra = _children_of(self.bus_pid) if self.bus_pid else []
        for name, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
        for pid in extra:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if self.bus_pid:
            try:
                os.kill(self.bus_pid, signal.SIGTERM)
                _wait_for(lambda: not os.path.exists("/proc/%d" % self.bus_pid), 5, "dbus-daemon to stop")
            except ProcessLookupError:
                pass
            self.bus_pid = None
        for path, had in ((BUS_SOCKET, self.had_socket), (BUS_PID, self.had_pidfile)):
            if not had and _exists(path):
                os.unlink(path)
        if not self.had_bus_dir and os.path.isdir(BUS_DIR) and not os.listdir(BUS_DIR):
            os.rmdir(BUS_DIR)
        if self.user_state and os.path.isdir(self.user_state):
            shutil.rmtree(self.user_state)
        if not self.had_state and os.path.isdir(FPRINT_STATE) and not os.listdir(FPRINT_STATE):
            os.rmdir(FPRINT_STATE)


def leftovers(started_pids):
    """What the bench left behind: a list of sentences (empty: nothing)."""
    problems = []
    if user_exists(BENCH_USER):
        problems.append("user %s still exists" % BENCH_USER)
    for pid in started_pids:
        if os.path.exists("/proc/%d" % pid):
            try:
                with open("/proc/%d/stat" % pid) as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                problems.append("process %d still running" % pid)
    if os.path.isdir(os.path.join(FPRINT_STATE, BENCH_USER)):
        problems.append("%s/%s still exists" % (FPRINT_STATE, BENCH_USER))
    return problems
