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
    """One login with these fingers put on fprintd's reader, one per try."""
    bus.reader.feed(["SCAN %s" % finger for finger in fingers])
    try:
        return world.login("alice", **kw)
    finally:
        bus.reader.wait()


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
    bus.reader.feed(["SCAN finger-A"] * 5)
    enrolled = world.cli("enroll", "--user", "alice")
    bus.reader.wait()
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
