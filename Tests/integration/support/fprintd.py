"""Debian's real fprintd on a private system bus, the way fprintd's own test suite runs it:
a `dbus-daemon` with a test configuration (a socket in the test's folder), the real
`polkitd` on that bus (it answers fprintd's authorisation checks; root is always allowed),
and `/usr/libexec/fprintd -t` with libfprint's virtual reader (`FP_VIRTUAL_DEVICE`, or
`FP_VIRTUAL_DEVICE_STORAGE`) and its prints in the test's folder. `dbus-monitor` records
the calls on the bus, so that a test can see that the helper released the reader, and the
feeders see when fprintd asks for a finger.

    bus = PrivateBus().start()
    bus.start_fprintd()
    bus.enroll("alice", "finger-A")            # fprintd-enroll, fed through the virtual reader
    world.write_conf(system_bus=bus.socket, reader="fprintd", virtual_reader=None)
    bus.feed_verification(["SCAN finger-A"])   # the next login's finger, when fprintd asks
    login = world.login("alice")
    bus.reader.wait(drop_unasked=True)
    ...
    bus.close()                                # stops everything it started, by pid

Nothing on the machine changes: one folder in /tmp (removed by close()), no system bus.
"""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from support.vreader import VirtualReader

FPRINTD = "/usr/libexec/fprintd"
POLKITD = "/usr/lib/polkit-1/polkitd"
FPRINT_NAME = "net.reactivated.Fprint"

# Anyone may own any name and call anything: what FingerAuth believes must not depend on
# the bus's policy (the test of a name held by a user relies on that).
BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=%(socket)s</listen>
  <auth>EXTERNAL</auth>
  %(servicedir)s
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow receive_sender="*"/>
    <allow eavesdrop="true"/>
  </policy>
  <policy user="root">
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Monitoring"/>
  </policy>
</busconfig>
"""


class PrivateBus:
    def __init__(self, activation=False):
        # Not under pytest's folders (0700): polkitd and a test user must reach the socket.
        self.dir = Path(tempfile.mkdtemp(prefix="fa-bus."))
        os.chmod(self.dir, 0o755)
        self.socket = str(self.dir / "system_bus_socket")
        self.address = "unix:path=" + self.socket
        self.activation = activation
        self.reader = VirtualReader(self.dir / "fprintd-reader.sock")
        self.state = self.dir / "fprint-state"
        self.processes = {}
        self.logs = {}

    # -- processes ---------------------------------------------------------------------

    def _env(self, **extra):
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DBUS_SYSTEM_BUS_ADDRESS": self.address}
        env.update(extra)
        return env

    def _spawn(self, name, argv, env, user=None):
        log = open(self.dir / (name + ".log"), "ab")
        self.logs[name] = self.dir / (name + ".log")
        if user is not None:
            argv = ["setpriv", "--reuid", str(user), "--regid", str(user), "--clear-groups", "--"] + argv
        self.processes[name] = subprocess.Popen(argv, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        return self.processes[name]

    def stop(self, name, sig=signal.SIGTERM):
        process = self.processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        process.send_signal(sig)
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)

    def log(self, name):
        path = self.logs.get(name)
        return path.read_text(errors="replace") if path and path.exists() else ""

    def start(self):
        servicedir = ""
        if self.activation:
            services = self.dir / "services"
            services.mkdir(exist_ok=True)
            servicedir = "<servicedir>%s</servicedir>" % services
        config = self.dir / "bus.conf"
        config.write_text(BUS_CONFIG % {"socket": self.socket, "servicedir": servicedir})
        self._spawn("dbus-daemon", ["dbus-daemon", "--config-file=%s" % config, "--nofork", "--nopidfile"], self._env())
        self._wait(lambda: os.path.exists(self.socket), "dbus-daemon did not make its socket")
        self._spawn("polkitd", [POLKITD, "--no-debug"], self._env())
        self.wait_for_name("org.freedesktop.PolicyKit1")
        self._spawn("monitor", ["dbus-monitor", "--address", self.address], self._env())
        time.sleep(0.2)
        return self

    def fprintd_env(self, storage=False):
        self.state.mkdir(mode=0o700, exist_ok=True)
        run = self.dir / "fprint-run"
        run.mkdir(mode=0o700, exist_ok=True)
        variable = "FP_VIRTUAL_DEVICE_STORAGE" if storage else "FP_VIRTUAL_DEVICE"
        return self._env(**{variable: self.reader.path, "STATE_DIRECTORY": str(self.state),
                            "RUNTIME_DIRECTORY": str(run), "G_MESSAGES_DEBUG": "all"})

    def start_fprintd(self, storage=False, reader=True):
        """Starts fprintd with the virtual reader (none: `reader=False`); returns when it
        holds its name."""
        env = self.fprintd_env(storage)
        if not reader:
            env.pop("FP_VIRTUAL_DEVICE_STORAGE" if storage else "FP_VIRTUAL_DEVICE")
        self._spawn("fprintd", [FPRINTD, "-t"], env)
        self.wait_for_name(FPRINT_NAME)
        return self.processes["fprintd"]

    def install_activation(self, storage=False):
        """Lets the bus start fprintd on demand (D-Bus activation), as a desktop does."""
        assert self.activation, "PrivateBus(activation=True) makes the service folder"
        env = self.fprintd_env(storage)
        wrapper = self.dir / "start-fprintd"
        wrapper.write_text("#!/bin/sh\nexec env -i %s %s -t >>%s 2>&1\n" % (
            " ".join("%s=%s" % item for item in env.items()), FPRINTD, self.dir / "fprintd.log"))
        os.chmod(wrapper, 0o755)
        self.logs["fprintd"] = self.dir / "fprintd.log"
        (self.dir / "services" / (FPRINT_NAME + ".service")).write_text(
            "[D-BUS Service]\nName=%s\nExec=%s\nUser=root\n" % (FPRINT_NAME, wrapper))
        self.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.ReloadConfig")

    def close(self):
        for name in list(self.processes)[::-1]:
            self.stop(name)
        # An fprintd the bus activated is the bus's child: it goes with the bus, or here.
        for pid in self.pids_of(FPRINTD):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)

    def pids_of(self, program):
        """Processes running `program` whose environment names this bus."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if os.readlink(entry / "exe") != program:
                    continue
                if self.address.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
        return found

    def _wait(self, done, why, timeout=10.0):
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, why
            time.sleep(0.02)

    # -- the bus -----------------------------------------------------------------------

    def call(self, dest, path, method, *args, timeout=5):
        """`gdbus call` on this bus; returns its output (raises on failure)."""
        done = subprocess.run(["gdbus", "call", "--address", self.address, "--dest", dest, "--object-path", path,
                               "--method", method, *args], env=self._env(), capture_output=True, text=True,
                              timeout=timeout)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def has_owner(self, name):
        out = self.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner", name)
        return out == "(true,)"

    def wait_for_name(self, name, timeout=10.0):
        self._wait(lambda: self.has_owner(name), "%s did not appear on the bus" % name, timeout)

    def wait_for_name_gone(self, name, timeout=10.0):
        self._wait(lambda: not self.has_owner(name), "%s did not leave the bus" % name, timeout)

    def fprintd_cli(self, *argv, timeout=30):
        """Runs fprintd-enroll / fprintd-list / fprintd-delete against this bus."""
        return subprocess.run(list(argv), env=self._env(), capture_output=True, text=True, timeout=timeout)

    def enroll(self, user, identity, finger="right-index-finger", scans=5):
        """Enrolls through fprintd's D-Bus API (fprintd-enroll): one SCAN per stage, each when
        fprintd asks for it. The match-on-chip reader (`start_fprintd(storage=True)`) takes 6:
        fprintd looks for the finger among the stored ones first."""
        self.feed_enrollment(["SCAN %s" % identity] * scans)
        try:
            done = self.fprintd_cli("fprintd-enroll", "-f", finger, user)
        finally:
            self.reader.wait(drop_unasked=True)
        assert done.returncode == 0 and "enroll-completed" in done.stdout, done.stdout + done.stderr
        return done

    def feed_enrollment(self, commands, timeout=30):
        """Feeds the reader for the next enrollment through fprintd (fprintd-enroll, `fingerauth
        enroll`), one command per stage and each only when fprintd wants it: the first once
        the client's EnrollStart reached fprintd and fprintd says a finger is needed, each
        next once fprintd announced the stage before (EnrollStatus). Commands sent at once
        can reach the device while it completes a stage and be taken twice (see
        support/vreader.py). Returns the reader; reader.wait(drop_unasked=True) joins the
        feed once the client ended."""
        return self._feed_when_asked(commands, "EnrollStart", timeout,
                                     lambda since: sum(_is(m, "signal", "EnrollStatus") for m in since))

    def feed_verification(self, commands, timeout=30):
        """Like feed_enrollment, for the next login through fprintd: one command per try,
        each once fprintd says a finger is needed for it (a try is a VerifyStart; fprintd's
        finger-needed turns true once per try)."""
        return self._feed_when_asked(commands, "VerifyStart", timeout,
                                     lambda since: sum(_finger_needed(m) for m in since) - 1)

    def _feed_when_asked(self, commands, start, timeout, used):
        # `used(messages)`: how many commands fprintd is done with. Only what follows the
        # client's first `start` counts: the monitor may still be writing out the operation
        # before.
        mark = len(self._messages())

        def ready(index):
            messages = self._messages()[mark:]
            starts = [n for n, m in enumerate(messages) if _is(m, "method call", start)]
            if not starts:
                return False
            since = messages[starts[0]:]
            if index == 0:
                return any(_finger_needed(m) for m in since)
            return used(since) >= index

        return self.reader.feed(commands, timeout=timeout, ready=ready)

    # -- what was said on the bus ------------------------------------------------------

    def _messages(self):
        """Every message dbus-monitor wrote so far, in bus order: (header, body lines)."""
        text = self.log("monitor")
        messages = []
        for line in text[:text.rfind("\n") + 1].splitlines():  # not a line still being written
            if line and not line[0].isspace():
                messages.append((line, []))
            elif messages:
                messages[-1][1].append(" ".join(line.split()))
        return messages

    def calls(self):
        """(sender, member) of every method call to fprintd's device seen so far."""
        time.sleep(0.2)  # dbus-monitor writes as it reads
        out = []
        for line in self.log("monitor").splitlines():
            m = re.match(r"method call .*sender=(\S+) -> destination=\S+ .*interface=net\.reactivated\.Fprint\.Device; "
                         r"member=(\w+)", line)
            if m:
                out.append((m.group(1), m.group(2)))
        return out

    def claims_released(self):
        """True when every sender that claimed the reader also released it, after its claim."""
        open_claims = {}
        for sender, member in self.calls():
            if member == "Claim":
                open_claims[sender] = open_claims.get(sender, 0) + 1
            elif member == "Release" and open_claims.get(sender):
                open_claims[sender] -= 1
        return all(count == 0 for count in open_claims.values()), open_claims


def _is(message, kind, member):
    """A method call or signal of fprintd's device interface, by its member."""
    header = message[0]
    return header.startswith(kind + " ") and "interface=net.reactivated.Fprint.Device; member=%s" % member in header


def _finger_needed(message):
    """fprintd telling that its reader waits for a finger (the device's finger-needed)."""
    header, body = message
    return "member=PropertiesChanged" in header and any(
        line == 'string "finger-needed"' and value == "variant boolean true" for line, value in zip(body, body[1:]))


def device_key(cli, user):
    """The user's device key and its registration, without a finger (fprintd holds the
    prints): `cli` runs the built `fingerauth` (World.cli, Installation.cli)."""
    for args in (["key", "create", "--user", user], ["register", "--user", user]):
        done = cli(*args)
        assert done.returncode == 0, done.stdout + done.stderr


@contextmanager
def fprintd_for(world, user="alice", identity="finger-A"):
    """fprintd on a private bus, `user`'s finger `identity` enrolled through it (none when
    `identity` is None) with the device key registered, and the world set to
    `reader = fprintd` on that bus. Everything stopped afterwards."""
    bus = PrivateBus()
    try:
        bus.start()
        bus.start_fprintd()
        if identity is not None:
            bus.enroll(user, identity)
            device_key(world.cli, user)
        world.write_conf(system_bus=bus.socket, reader="fprintd", virtual_reader=None)
        yield bus
    finally:
        bus.close()
