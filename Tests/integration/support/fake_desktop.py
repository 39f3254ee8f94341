"""A workstation's desktop on a private bus, for the approval watcher: a `dbus-daemon` (the
configuration of support.fprintd: any user may connect, so that the watcher's notifier,
running as alice, reaches it), and one small process of fakes on it, run as root:

- logind (`org.freedesktop.login1`): the Manager's `ListSessions` and `LidClosed`, and each
  session's `Active`, `Remote`, `Class`, `LockedHint`, `Name`, `Seat`, `User` properties;
- the notification daemon (`org.freedesktop.Notifications`): `Notify` and `CloseNotification`
  recorded, `ActionInvoked` and `NotificationClosed` emitted;
- a test-only interface (`org.fingerauth.Test` at /org/fingerauth/Test): `SetSessions(json)`,
  `Notifications()` (json), `InvokeAction(id, key)`.

The same bus stands for the system bus (`system_bus = ...`) and for alice's session bus
(`fingerauth-watcher --session-bus ...`): one socket, both services.

    desktop = Desktop(folder).start()
    desktop.set_sessions([session("alice", 5001)])
    ... desktop.notifications() ... desktop.invoke(id, "not-me")
    desktop.close()
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from support.fprintd import BUS_CONFIG  # noqa: E402

LOGIN1 = "org.freedesktop.login1"
NOTIFICATIONS = "org.freedesktop.Notifications"
TEST = "org.fingerauth.Test"


def session(user, uid, ident="1", seat="seat0", active=True, remote=False, kind="user", locked=False):
    """One logind session as the fake serves it."""
    return {"id": ident, "uid": uid, "user": user, "seat": seat, "active": active, "remote": remote, "class": kind,
            "locked": locked}


class Desktop:
    """The private bus and the fakes' process; `socket` is the bus's path."""

    def __init__(self, folder):
        self.dir = Path(folder)
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o755)
        self.socket = str(self.dir / "bus_socket")
        self.address = "unix:path=" + self.socket
        self.processes = []

    def start(self, users=None):
        """`users`: the environment that makes the test's users known (nss_wrapper's
        variables): dbus-daemon refuses a connection from a uid that NSS does not know."""
        config = self.dir / "bus.conf"
        config.write_text(BUS_CONFIG % {"socket": self.socket, "servicedir": ""})
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
        with open(self.dir / "dbus-daemon.log", "ab") as log:
            self.processes.append(subprocess.Popen(
                ["dbus-daemon", "--config-file=%s" % config, "--nofork", "--nopidfile"], env=dict(env, **(users or {})), stdout=log,
                stderr=log, stdin=subprocess.DEVNULL))
        self._wait(lambda: os.path.exists(self.socket), "dbus-daemon made no socket")
        with open(self.dir / "fakes.log", "ab") as log:
            self.processes.append(subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), self.address], env=env, stdout=log, stderr=log,
                stdin=subprocess.DEVNULL))
        self._wait(self._ready, "the fake desktop did not come up: " + self.log())
        return self

    def log(self):
        path = self.dir / "fakes.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _wait(self, predicate, message, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.05)
        raise RuntimeError(message)

    def _ready(self):
        import dbus
        try:
            self._test("Notifications")
            return True
        except dbus.exceptions.DBusException:
            return False

    def _test(self, method, *args):
        """Calls the test interface (a connection of its own per call: the test's process
        runs no main loop)."""
        import dbus
        connection = dbus.bus.BusConnection(self.address)
        try:
            proxy = connection.get_object(TEST, "/org/fingerauth/Test")
            return proxy.get_dbus_method(method, TEST)(*args, timeout=10)
        finally:
            connection.close()

    def set_sessions(self, sessions):
        self._test("SetSessions", json.dumps(sessions))

    def notifications(self):
        """Every notification shown so far, in order: id, summary, body, actions, closed
        (None while shown; "caller" after CloseNotification, "user" after an action), and the
        uid of the connection that asked."""
        return json.loads(str(self._test("Notifications")))

    def invoke(self, ident, key):
        """The person chooses action `key` on notification `ident`."""
        import dbus
        self._test("InvokeAction", dbus.UInt32(ident), key)

    def close(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(5)
        self.processes = []


def serve(address):
    """The fakes' process: logind, the notification daemon and the test interface."""
    import dbus
    import dbus.service
    from dbus.mainloop.glib import DBusGMainLoop
    from gi.repository import GLib

    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(address)
    state = {"sessions": [], "notes": [], "next": 1}

    def credentials(sender):
        """The asking process's gid and supplementary groups, from /proc while it waits."""
        pid = int(bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                    "GetConnectionUnixProcessID", "s", (sender,)))
        fields = dict(line.split(":", 1) for line in open("/proc/%d/status" % pid).read().splitlines() if ":" in line)
        return {"gids": fields["Gid"].split(), "groups": fields["Groups"].split()}

    def session_path(ident):
        return "/org/freedesktop/login1/session/_3" + ident

    class Properties(dbus.service.Object):
        def values(self, interface):
            return {}

        @dbus.service.method("org.freedesktop.DBus.Properties", in_signature="ss", out_signature="v")
        def Get(self, interface, name):
            values = self.values(interface)
            if name not in values:
                raise dbus.exceptions.DBusException("no property " + name,
                                                    name="org.freedesktop.DBus.Error.InvalidArgs")
            return values[name]

        @dbus.service.method("org.freedesktop.DBus.Properties", in_signature="s", out_signature="a{sv}")
        def GetAll(self, interface):
            return self.values(interface)

    class Manager(Properties):
        def values(self, interface):
            return {"LidClosed": dbus.Boolean(False)}

        @dbus.service.signal(LOGIN1 + ".Manager", signature="so")
        def SessionNew(self, ident, path):
            pass

        @dbus.service.method(LOGIN1 + ".Manager", in_signature="", out_signature="a(susso)")
        def ListSessions(self):
            return [(s["id"], dbus.UInt32(s["uid"]), s["user"], s["seat"], dbus.ObjectPath(session_path(s["id"])))
                    for s in state["sessions"]]

    class Session(Properties):
        def __init__(self, connection, path, ident):
            super().__init__(connection, path)
            self.ident = ident

        def values(self, interface):
            for s in state["sessions"]:
                if s["id"] == self.ident:
                    return {"Active": dbus.Boolean(s["active"]), "Remote": dbus.Boolean(s["remote"]),
                            "Class": s["class"], "LockedHint": dbus.Boolean(s["locked"]), "Name": s["user"],
                            "Seat": dbus.Struct((s["seat"], dbus.ObjectPath("/org/freedesktop/login1/seat/" +
                                                                            (s["seat"] or "self")))),
                            "User": dbus.Struct((dbus.UInt32(s["uid"]), dbus.ObjectPath("/org/freedesktop/login1/user/_"
                                                                                        + str(s["uid"]))))}
            raise dbus.exceptions.DBusException("no such session", name=LOGIN1 + ".NoSuchSession")

        @dbus.service.signal("org.freedesktop.DBus.Properties", signature="sa{sv}as")
        def PropertiesChanged(self, interface, changed, invalidated):
            pass

    class Notifications(dbus.service.Object):
        @dbus.service.method(NOTIFICATIONS, in_signature="susssasa{sv}i", out_signature="u", sender_keyword="sender")
        def Notify(self, app, replaces, icon, summary, body, actions, hints, timeout, sender=None):
            ident = state["next"]
            state["next"] += 1
            # Who asked, as the bus knows it (the kernel's credentials at connect time).
            state["notes"].append({"id": ident, "app": str(app), "summary": str(summary), "body": str(body),
                                   "actions": [str(a) for a in actions], "closed": None,
                                   "uid": int(bus.get_unix_user(sender)), **credentials(sender)})
            return dbus.UInt32(ident)

        @dbus.service.method(NOTIFICATIONS, in_signature="u", out_signature="")
        def CloseNotification(self, ident):
            for note in state["notes"]:
                if note["id"] == ident and note["closed"] is None:
                    note["closed"] = "caller"
                    self.NotificationClosed(dbus.UInt32(ident), dbus.UInt32(3))

        @dbus.service.method(NOTIFICATIONS, in_signature="", out_signature="as")
        def GetCapabilities(self):
            return ["actions", "body"]

        @dbus.service.signal(NOTIFICATIONS, signature="us")
        def ActionInvoked(self, ident, key):
            pass

        @dbus.service.signal(NOTIFICATIONS, signature="uu")
        def NotificationClosed(self, ident, reason):
            pass

    class Test(dbus.service.Object):
        def __init__(self, connection, path, notifications, manager):
            super().__init__(connection, path)
            self.notes = notifications
            self.manager = manager
            self.objects = {}

        @dbus.service.method(TEST, in_signature="s", out_signature="")
        def SetSessions(self, text):
            state["sessions"] = json.loads(text)
            # As logind does: a new session is announced, a changed one says what changed.
            for s in state["sessions"]:
                if s["id"] not in self.objects:
                    self.objects[s["id"]] = Session(bus, session_path(s["id"]), s["id"])
                    self.manager.SessionNew(s["id"], dbus.ObjectPath(session_path(s["id"])))
                else:
                    session = self.objects[s["id"]]
                    session.PropertiesChanged(LOGIN1 + ".Session", session.values(LOGIN1 + ".Session"), [])

        @dbus.service.method(TEST, in_signature="", out_signature="s")
        def Notifications(self):
            return json.dumps(state["notes"])

        @dbus.service.method(TEST, in_signature="us", out_signature="")
        def InvokeAction(self, ident, key):
            for note in state["notes"]:
                if note["id"] == ident:
                    self.notes.ActionInvoked(dbus.UInt32(ident), key)
                    # As a notification daemon does: the chosen notification goes.
                    if note["closed"] is None:
                        note["closed"] = "user"
                        self.notes.NotificationClosed(dbus.UInt32(ident), dbus.UInt32(2))

    manager = Manager(bus, "/org/freedesktop/login1")
    notifications = Notifications(bus, "/org/freedesktop/Notifications")
    Test(bus, "/org/fingerauth/Test", notifications, manager)
    bus.request_name(LOGIN1)
    bus.request_name(NOTIFICATIONS)
    bus.request_name(TEST)
    GLib.MainLoop().run()


if __name__ == "__main__":
    serve(sys.argv[1])
