"""`reader = fprintd`: Debian's real fprintd on a private system bus (dbus-daemon with a test
configuration, the real polkitd, fprintd with libfprint's virtual reader), the real module
through libpam, the real helper and fingerauthd over TLS. Prints are enrolled through
fprintd's D-Bus API (fprintd-enroll), never with `fingerauth enroll`; FingerAuth keeps only
the device key. Each test asserts the PAM code, what the user saw, the log line's reason,
and that the helper released fprintd's reader (the calls seen on the bus)."""

import json
import subprocess
import threading
import time

import pytest

from support.fprintd import PrivateBus, device_key, fprintd_for
from support.world import PASSWORDS

PLACE_FINGER = "Place your finger on the fingerprint reader"
NOBODY = 65534


@pytest.fixture
def bus(world):
    """fprintd on a private bus, reader = fprintd; nobody enrolled yet."""
    with fprintd_for(world, identity=None) as bus:
        yield bus


@pytest.fixture
def alice(world, bus):
    """alice's finger-A enrolled through fprintd, her device key registered."""
    bus.enroll("alice", "finger-A")
    device_key(world.cli, "alice")
    return bus


def finger_login(world, bus, *fingers, **kw):
    """One login with these fingers put on fprintd's reader, one per try, each when fprintd
    asks for it."""
    bus.feed_verification(["SCAN %s" % finger for finger in fingers])
    try:
        return world.login("alice", **kw)
    finally:
        bus.reader.wait(drop_unasked=True)


def only(world, name="fa-only"):
    return world.service(name, fallback=False)


def reason(world):
    line = world.log_lines()[-1]
    return line[line.index('reason="'):]


def assert_released(bus):
    released, still = bus.claims_released()
    assert released, "claims not released: %r in %r" % (still, bus.calls())


def test_a_print_enrolled_through_fprintd_logs_in_without_fingerauth_enroll(world, alice):
    bus = alice
    prints = world.paths("alice")[1]
    assert not prints.exists() or list(prints.iterdir()) == []  # no FingerAuth print at all
    login = finger_login(world, bus, "finger-A", service=only(world))
    assert login.name == "PAM_SUCCESS", login
    assert login.infos == [PLACE_FINGER] and login.errors == []
    line = world.log_lines()[-1]
    assert "result=PAM_SUCCESS" in line and "finger=right-index-finger" in line, line
    rows = [r for r in world.authd.audit_rows() if r.get("event") == "login"]
    assert rows[-1]["outcome"] == "accept" and rows[-1]["user"] == "alice"
    assert_released(bus)
    assert ("Release" in [m for _, m in bus.calls()])


def test_a_wrong_finger_is_no_match_each_try_and_the_password_follows(world, alice):
    bus = alice
    login = finger_login(world, bus, *["finger-B"] * 3, password=PASSWORDS["alice"])
    assert login.name == "PAM_SUCCESS", login  # by the password
    assert login.infos == [PLACE_FINGER, "No match, try again (2 left)", "No match, try again (1 left)"]
    assert login.errors == ["Fingerprint not recognised; too many tries"]
    assert login.prompts == ["Password: "]
    assert "result=PAM_MAXTRIES" in world.log_lines()[-2] or "PAM_MAXTRIES" in "".join(world.log_lines())
    assert_released(bus)


def test_fprintd_stopped_mid_verify_fails_closed(world, alice):
    bus = alice
    world.write_conf(timeout="10")

    def stop_when_armed():
        bus.reader.wait_for_new_socket(timeout=10)  # fprintd opened the reader for the claim
        time.sleep(0.3)
        bus.stop("fprintd")

    started = time.monotonic()
    stopper = threading.Thread(target=stop_when_armed)
    stopper.start()
    login = world.login("alice", service=only(world))
    stopper.join()
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.infos == [PLACE_FINGER]
    assert login.errors == ["Fingerprint login unavailable"]
    assert "fprintd stopped during the scan" in reason(world), reason(world)
    assert time.monotonic() - started < 8  # the stop ends it, not the 10 s timeout


def test_a_bus_name_held_by_a_user_is_not_believed(world, bus):
    bus.stop("fprintd")
    bus.wait_for_name_gone("net.reactivated.Fprint")
    device_key(world.cli, "alice")
    # A user's program takes fprintd's name on the bus (the test bus lets anyone own it).
    # `nobody`: dbus-daemon wants a user it can look up, and the test users live in
    # nss_wrapper only.
    impostor = subprocess.Popen(
        ["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups", "--",
         "/usr/bin/python3", "-c", IMPOSTOR, bus.socket], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert impostor.stdout.readline().strip() == b"owned", impostor
        login = world.login("alice", service=only(world))
    finally:
        impostor.kill()
        impostor.wait()
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.infos == [] and login.errors == ["Fingerprint login unavailable"]
    assert "net.reactivated.Fprint is held by uid %d, not root" % NOBODY in reason(world), reason(world)
    assert [m for _, m in bus.calls()] == []  # not one call reached bob's program


def test_no_finger_before_the_timeout_fails_closed_and_releases(world, alice):
    bus = alice
    world.write_conf(timeout="2")
    started = time.monotonic()
    login = world.login("alice", service=only(world))
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.infos == [PLACE_FINGER] and login.errors == ["Fingerprint login unavailable"]
    assert 'reason="reader: timeout' in reason(world), reason(world)
    assert time.monotonic() - started < 5
    calls = [m for _, m in bus.calls()]
    assert calls[-3:] == ["VerifyStart", "VerifyStop", "Release"], calls
    assert_released(bus)


def test_a_user_without_fprintd_prints_is_told_the_command(world, bus):
    device_key(world.cli, "alice")
    login = world.login("alice", service=only(world))
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.infos == [] and login.errors == ["Fingerprint login unavailable"]
    assert "alice has no finger enrolled in fprintd (fprintd-enroll -f right-index-finger alice)" in reason(world)


def test_fprintd_busy_with_another_client_is_busy_at_once(world, alice):
    bus = alice
    holder = subprocess.Popen(["fprintd-verify", "alice"], env=bus._env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
    try:
        bus.reader.wait_for_new_socket(timeout=10)
        started = time.monotonic()
        login = world.login("alice", service=only(world))
        took = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.infos == []
    assert "reader in use: fprintd is busy with another login or enrollment" in reason(world), reason(world)
    assert took < 3


def test_reader_libfprint_says_reader_in_use_by_fprintd_at_once(world, bus):
    world.write_conf(reader="libfprint", virtual_reader=world.reader.path, timeout="10")
    world.enroll("alice", "finger-A")  # FingerAuth's own print, on the libfprint virtual reader
    started = time.monotonic()
    login = world.login("alice", service=only(world))
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.infos == [] and login.errors == ["Fingerprint login unavailable"]
    assert "reader in use by fprintd" in reason(world), reason(world)
    assert time.monotonic() - started < 2  # at once, not after the 10 s timeout


def test_auto_takes_fprintd_when_it_holds_the_users_prints(world, alice):
    bus = alice
    world.write_conf(reader="auto")
    login = finger_login(world, bus, "finger-A", service=only(world))
    assert login.name == "PAM_SUCCESS", login
    assert_released(bus)


def test_auto_uses_libfprint_when_fprintd_is_not_installed(world, bus):
    bus.stop("fprintd")
    bus.wait_for_name_gone("net.reactivated.Fprint")
    world.write_conf(reader="auto", virtual_reader=world.reader.path)
    world.enroll("alice", "finger-A")
    login = world.login("alice", scans=["finger-A"], service=only(world))
    assert login.name == "PAM_SUCCESS", login


def test_fprintd_started_by_the_bus_on_demand_logs_in(world):
    bus = PrivateBus(activation=True)
    try:
        bus.start()
        bus.install_activation()
        world.write_conf(system_bus=bus.socket, reader="fprintd", virtual_reader=None)
        bus.wait_for_name_gone("net.reactivated.Fprint", timeout=1)
        bus.enroll("alice", "finger-A")  # fprintd-enroll starts it
        device_key(world.cli, "alice")
        login = finger_login(world, bus, "finger-A", service=only(world))
        assert login.name == "PAM_SUCCESS", login
    finally:
        bus.close()


IMPOSTOR = r"""
import sys
from gi.repository import Gio, GLib
flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
conn = Gio.DBusConnection.new_for_address_sync("unix:path=" + sys.argv[1], flags, None, None)
reply = conn.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                       GLib.Variant("(su)", ("net.reactivated.Fprint", 4)), None, Gio.DBusCallFlags.NONE, 5000, None)
print("owned" if reply.unpack()[0] == 1 else "not-owned", flush=True)
GLib.MainLoop().run()
"""


def test_fingerauth_enroll_goes_through_fprintd_and_still_registers_the_key(world, bus):
    bus.feed_enrollment(["SCAN finger-A"] * 5)
    try:
        enrolled = world.cli("enroll", "--user", "alice")
    finally:
        bus.reader.wait(drop_unasked=True)
    assert enrolled.returncode == 0, enrolled.stdout + enrolled.stderr
    lines = enrolled.stdout.splitlines()
    assert lines[0] == ("enrolling right-index-finger for alice through fprintd on Virtual device for debugging: place "
                        "your finger on the reader, lift it, and repeat until every stage is done")
    assert lines[1:6] == ["stage %d/5" % n for n in range(1, 6)], lines
    assert lines[6] == "enrolled right-index-finger for alice in fprintd"
    assert lines[7].startswith("created device key: kid ") and lines[8].startswith("registered key ")
    listed = bus.fprintd_cli("fprintd-list", "alice")
    assert " - #0: right-index-finger" in listed.stdout, listed.stdout
    prints = world.paths("alice")[1]
    assert not prints.exists() or list(prints.iterdir()) == []
    again = world.cli("enroll", "--user", "alice")
    assert again.returncode == 1
    assert again.stderr == "fingerauth: right-index-finger is already enrolled for alice in fprintd (use --force to replace it)\n"
    login = finger_login(world, bus, "finger-A", service=only(world))
    assert login.name == "PAM_SUCCESS", login
    assert_released(bus)


def test_status_names_the_backend_and_the_fingers_fprintd_holds(world, alice):
    bus = alice
    done = world.cli("status", "--user", "alice", "--json", "--pam-dir", str(world.confdir))
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["backend"]["status"] == "pass", checks["backend"]
    assert checks["backend"]["detail"] == ("fprintd (reader = fprintd): root holds net.reactivated.Fprint on %s; "
                                           "fprintd's prints, FingerAuth's device key" % bus.socket)
    assert checks["reader"]["detail"] == "Virtual device for debugging (through fprintd)"
    assert checks["enrolled"] == {"name": "enrolled", "status": "pass", "detail": "right-index-finger (in fprintd)",
                                  "fix": None}
    world.write_conf(reader="auto")
    checks = {c["name"]: c for c in json.loads(world.cli("status", "--user", "bob", "--json").stdout)["checks"]}
    assert checks["backend"]["detail"] == ("libfprint (reader = auto: fprintd holds no prints for bob): FingerAuth's "
                                           "prints, the reader opened by the login helper")
    bus.stop("fprintd")
    bus.wait_for_name_gone("net.reactivated.Fprint")
    world.write_conf(reader="fprintd")
    failed = world.cli("status", "--user", "alice", "--json")
    checks = {c["name"]: c for c in json.loads(failed.stdout)["checks"]}
    assert failed.returncode == 1
    assert checks["backend"]["status"] == "fail"
    assert checks["backend"]["detail"] == "fprintd (reader = fprintd): fprintd is not running and not installed on this system bus"


@pytest.mark.parametrize("case,reason", [
    ("no bus", "fprintd not reachable: no system bus at /nonexistent/system_bus_socket"),
    ("not installed", "fprintd is not running and not installed on this system bus"),
    ("no reader", "fprintd has no fingerprint reader"),
])
def test_fprintd_that_cannot_serve_fails_closed_with_its_reason(world, bus, case, reason):
    device_key(world.cli, "alice")
    if case == "no bus":
        world.write_conf(system_bus="/nonexistent/system_bus_socket")
    else:
        bus.stop("fprintd")
        bus.wait_for_name_gone("net.reactivated.Fprint")
        if case == "no reader":
            bus.start_fprintd(reader=False)
    login = world.login("alice", service=only(world))
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.infos == [] and login.errors == ["Fingerprint login unavailable"]
    assert 'reason="reader: no-reader: %s"' % reason in reason_line(world), reason_line(world)


def reason_line(world):
    return [line for line in world.log_lines() if "result=" in line][-1]


def test_auto_uses_fingerauths_prints_again_while_the_fprintd_it_started_idles(world):
    """auto asks fprintd (D-Bus activation starts it), finds no prints for alice there and uses
    libfprint; fprintd stays up idle (holding no reader) for a while: the next login must
    not be told "reader in use by fprintd"."""
    bus = PrivateBus(activation=True)
    try:
        bus.start()
        bus.install_activation()
        world.write_conf(system_bus=bus.socket, reader="libfprint")
        world.enroll("alice", "finger-A")
        world.write_conf(reader="auto")
        first = world.login("alice", scans=["finger-A"], service=only(world))
        assert first.name == "PAM_SUCCESS", first
        assert bus.has_owner("net.reactivated.Fprint")  # started by the bus for our question
        again = world.login("alice", scans=["finger-A"], service=only(world))
        assert again.name == "PAM_SUCCESS", (again, reason_line(world))
    finally:
        bus.close()


def test_a_strangers_forged_verify_status_is_not_heard(world, alice):
    """Anyone on the bus may broadcast a signal that looks like fprintd's; the helper listens
    to the holder of fprintd's name only. No finger: the login times out."""
    bus = alice
    world.write_conf(timeout="3")
    forger = subprocess.Popen(
        ["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups", "--",
         "/usr/bin/python3", "-c", FORGER, bus.socket], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        login = world.login("alice", service=only(world))
    finally:
        forger.kill()
        output = forger.communicate()[0]
    assert b"sent" in output, output  # the forged signals went out while the helper waited
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert 'reason="reader: timeout' in reason_line(world), reason_line(world)


@pytest.mark.parametrize("mode,reason", [
    ("enroll-status", "fprintd sent an unexpected signal net.reactivated.Fprint.Device.EnrollStatus"),
    ("match-not-done", "fprintd sent an unexpected signal net.reactivated.Fprint.Device.VerifyStatus"),
    ("unknown-word", "fprintd sent an unknown verify status verify-matched"),
    ("other-reader", "fprintd sent an unexpected signal net.reactivated.Fprint.Device.VerifyStatus on "
                     "/net/reactivated/Fprint/Device/1"),
])
def test_a_root_service_that_says_odd_things_is_never_a_match(world, bus, mode, reason):
    """A root process in fprintd's place that answers every call and then sends a signal
    fprintd would not (or a match that is not final, a word it does not know, a match for
    another reader) before a proper verify-match: the login fails, it never succeeds."""
    bus.stop("fprintd")
    bus.wait_for_name_gone("net.reactivated.Fprint")
    device_key(world.cli, "alice")
    standin = subprocess.Popen(["/usr/bin/python3", "-c", STANDIN, bus.socket, mode], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    try:
        assert standin.stdout.readline().strip() == b"owned"
        login = world.login("alice", service=only(world))
    finally:
        standin.kill()
        standin.wait()
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.errors == ["Fingerprint login unavailable"]
    assert reason in reason_line(world), reason_line(world)
    assert [r for r in world.authd.audit_rows() if r.get("event") == "login"] == []


FORGER = r"""
import sys, time
from gi.repository import Gio, GLib
flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
conn = Gio.DBusConnection.new_for_address_sync("unix:path=" + sys.argv[1], flags, None, None)
for _ in range(40):
    conn.emit_signal(None, "/net/reactivated/Fprint/Device/0", "net.reactivated.Fprint.Device",
                     "VerifyFingerSelected", GLib.Variant("(s)", ("right-index-finger",)))
    conn.emit_signal(None, "/net/reactivated/Fprint/Device/0", "net.reactivated.Fprint.Device",
                     "VerifyStatus", GLib.Variant("(sb)", ("verify-match", True)))
    conn.flush_sync(None)
    time.sleep(0.05)
print("sent", flush=True)
time.sleep(30)
"""

STANDIN = r"""
import sys
from gi.repository import Gio, GLib
XML = '''<node>
<interface name="net.reactivated.Fprint.Manager"><method name="GetDefaultDevice"><arg type="o" direction="out"/></method></interface>
<interface name="net.reactivated.Fprint.Device">
<method name="ListEnrolledFingers"><arg type="s" direction="in"/><arg type="as" direction="out"/></method>
<method name="Claim"><arg type="s" direction="in"/></method><method name="Release"/>
<method name="VerifyStart"><arg type="s" direction="in"/></method><method name="VerifyStop"/>
<property name="name" type="s" access="read"/></interface></node>'''
flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
conn = Gio.DBusConnection.new_for_address_sync("unix:path=" + sys.argv[1], flags, None, None)
mode = sys.argv[2]
node = Gio.DBusNodeInfo.new_for_xml(XML)
DEV = "/net/reactivated/Fprint/Device/0"

def signal(name, args, path=DEV):
    conn.emit_signal(None, path, "net.reactivated.Fprint.Device", name, args)

def after_verify_start():
    if mode == "enroll-status":
        signal("EnrollStatus", GLib.Variant("(sb)", ("enroll-completed", True)))
    elif mode == "match-not-done":
        signal("VerifyStatus", GLib.Variant("(sb)", ("verify-match", False)))
    elif mode == "unknown-word":
        signal("VerifyStatus", GLib.Variant("(sb)", ("verify-matched", True)))
    elif mode == "other-reader":
        signal("VerifyStatus", GLib.Variant("(sb)", ("verify-match", True)), "/net/reactivated/Fprint/Device/1")
    signal("VerifyFingerSelected", GLib.Variant("(s)", ("right-index-finger",)))
    signal("VerifyStatus", GLib.Variant("(sb)", ("verify-match", True)))
    return False

def call(connection, sender, path, interface, method, params, invocation):
    if method == "GetDefaultDevice":
        invocation.return_value(GLib.Variant("(o)", (DEV,)))
    elif method == "ListEnrolledFingers":
        invocation.return_value(GLib.Variant("(as)", (["right-index-finger"],)))
    else:
        invocation.return_value(None)
        if method == "VerifyStart":
            GLib.idle_add(after_verify_start)

conn.register_object("/net/reactivated/Fprint/Manager", node.interfaces[0], call, None, None)
conn.register_object(DEV, node.interfaces[1], call, lambda *a: GLib.Variant("s", "Stand-in reader"), None)
reply = conn.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                       GLib.Variant("(su)", ("net.reactivated.Fprint", 4)), None, Gio.DBusCallFlags.NONE, 5000, None)
print("owned" if reply.unpack()[0] == 1 else "not-owned", flush=True)
GLib.MainLoop().run()
"""


def test_enroll_through_fprintd_on_a_match_on_chip_reader_says_the_finger_is_taken(world):
    """fprintd with libfprint's match-on-chip virtual reader: bob's finger is on the sensor;
    `fingerauth enroll` for alice with that finger is refused with what to do."""
    bus = PrivateBus()
    try:
        bus.start()
        bus.start_fprintd(storage=True)
        world.write_conf(system_bus=bus.socket, reader="fprintd", virtual_reader=None)
        bus.enroll("bob", "bob-R", scans=6)  # fprintd looks for duplicates first: one scan more
        bus.feed_enrollment(["SCAN bob-R"])
        try:
            refused = world.cli("enroll", "--user", "alice")
        finally:
            bus.reader.wait(drop_unasked=True)
    finally:
        bus.close()
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert ("enrollment through fprintd failed: the sensor already holds this finger, for this or another user "
            "(fprintd: enroll-duplicate): enroll another finger, or delete it where it was enrolled") in refused.stderr, \
        refused.stderr


def test_enroll_with_fprintd_unreachable_says_what_to_do(world):
    world.write_conf(reader="fprintd", system_bus="/nonexistent/system_bus_socket")
    done = world.cli("enroll", "--user", "alice")
    assert done.returncode == 1
    assert done.stderr == ("fingerauth: fprintd cannot be used (no system bus at /nonexistent/system_bus_socket); start it, "
                           "or enroll with fprintd-enroll -f right-index-finger alice once it runs\n")
    assert not world.paths("alice")[2].exists()  # no key made for a finger that was not enrolled
