"""`lid = skip`: with the laptop's lid closed and only a built-in reader, the module skips at
once (PAM_AUTHINFO_UNAVAIL, no prompt, the reason and the milliseconds in the log line) and
the password follows; a reader on an external port still works; `lid = ignore` does not look.
The lid is a stand-in ACPI lid folder (`acpi_lid_dir`, `LID0/state` as /proc shows it), or a
stand-in logind on a private system bus (its `LidClosed` property). Real libpam, module,
helper, virtual reader and fingerauthd."""

import os
import re
import subprocess

import pytest

from support.fprintd import PrivateBus, fprintd_for
from support.world import PASSWORDS, USERS
from test_agent import lw  # noqa: F401  (the agent's fixture)

PLACE_FINGER = "Place your finger on the fingerprint reader"


def lid(world, state):
    folder = world.tmp / "acpi-lid"
    (folder / "LID0").mkdir(parents=True, exist_ok=True)
    (folder / "LID0" / "state").write_text("state:      %s\n" % state)
    world.write_conf(acpi_lid_dir=str(folder))
    return folder / "LID0" / "state"


def milliseconds(line):
    return int(re.search(r" ms=(\d+)", line).group(1))


def test_lid_closed_skips_at_once_without_a_prompt_and_the_password_follows(world):
    world.enroll("alice", "finger-A")
    state = lid(world, "closed")
    world.write_conf(timeout="10")
    login = world.login("alice", password=PASSWORDS["alice"])
    assert login.name == "PAM_SUCCESS", login  # by the password
    assert login.infos == [] and login.errors == []  # no "Place your finger", no excuse
    assert login.prompts == ["Password: "]
    line = [l for l in world.log_lines() if "result=" in l][-1]
    assert "result=PAM_AUTHINFO_UNAVAIL" in line, line
    assert ('reason="lid closed: lid closed (%s); no reader on an external port (built in: Virtual device for debugging)"'
            % state) in line, line
    assert milliseconds(line) < 2000, line  # liveness: nowhere near the 10 s timeout


def test_lid_closed_with_the_module_alone_is_authinfo_unavail(world):
    world.enroll("alice", "finger-A")
    lid(world, "closed")
    login = world.login("alice", service=world.service("fa-only", fallback=False))
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.infos == [] and login.errors == [] and login.prompts == []


def test_a_reader_on_an_external_port_still_works_with_the_lid_closed(world):
    world.enroll("alice", "finger-A")
    lid(world, "closed")
    world.write_conf(virtual_reader_removable="yes")  # the virtual reader stands for a desk reader
    login = world.login("alice", scans=["finger-A"])
    assert login.name == "PAM_SUCCESS", login
    assert login.infos == [PLACE_FINGER] and login.prompts == []


def test_lid_open_asks_for_the_finger(world):
    world.enroll("alice", "finger-A")
    lid(world, "open")
    login = world.login("alice", scans=["finger-A"])
    assert login.name == "PAM_SUCCESS", login
    assert login.infos == [PLACE_FINGER]


def test_lid_ignore_does_not_look(world):
    world.enroll("alice", "finger-A")
    lid(world, "closed")
    world.write_conf(lid="ignore")
    login = world.login("alice", scans=["finger-A"])
    assert login.name == "PAM_SUCCESS", login


def test_an_unreadable_lid_counts_as_open(world):
    world.enroll("alice", "finger-A")
    state = lid(world, "closed")
    state.write_text("something else\n")
    login = world.login("alice", scans=["finger-A"])
    assert login.name == "PAM_SUCCESS", login


@pytest.mark.parametrize("key,value", [("lid", "sometimes"), ("reader", "fprint")])
def test_a_wrong_lid_or_reader_value_is_a_configuration_error(world, key, value):
    world.enroll("alice", "finger-A")
    world.write_conf(**{key: value})
    login = world.login("alice", service=world.service("fa-only", fallback=False))
    assert login.name == "PAM_SERVICE_ERR", login
    status = world.cli("status", "--user", "alice")
    expected = "must be skip or ignore" if key == "lid" else "must be libfprint, fprintd or auto"
    assert "%s: %s" % (key, expected) in status.stdout + status.stderr, status.stdout + status.stderr


def test_fprintds_reader_counts_as_built_in(world):
    with fprintd_for(world) as bus:
        state = lid(world, "closed")
        before = len(bus.calls())
        login = world.login("alice", service=world.service("fa-only", fallback=False))
        claimed = bus.calls()[before:]
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.infos == [] and login.errors == []
    assert 'reason="lid closed: lid closed (%s); fprintd\'s reader counts as built in"' % state in world.log_lines()[-1]
    assert claimed == []  # fprintd's reader was never claimed


@pytest.mark.parametrize("owner,closed,skipped", [(0, True, True), (0, False, False), (65534, True, False)])
def test_logind_says_where_it_runs_and_only_root_is_believed(world, owner, closed, skipped):
    """A stand-in logind on a private bus; the ACPI lid says open. A LidClosed from a
    name that a user holds is not believed (the ACPI files are read instead)."""
    world.enroll("alice", "finger-A")
    lid(world, "open")
    bus = PrivateBus()
    logind = None
    try:
        bus.start()
        world.write_conf(system_bus=bus.socket)
        argv = ["/usr/bin/python3", "-c", LOGIND, bus.socket, "true" if closed else "false"]
        if owner:
            argv = ["setpriv", "--reuid", str(owner), "--regid", str(owner), "--clear-groups", "--"] + argv
        logind = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert logind.stdout.readline().strip() == b"owned"
        login = world.login("alice", scans=[] if skipped else ["finger-A"],
                            service=world.service("fa-only", fallback=False))
    finally:
        if logind is not None:
            logind.kill()
            logind.wait()
        bus.close()
    if skipped:
        assert login.name == "PAM_AUTHINFO_UNAVAIL", login
        assert "reason=\"lid closed: lid closed (logind); no reader on an external port" in world.log_lines()[-1]
    else:
        assert login.name == "PAM_SUCCESS", login


def test_the_agent_skips_with_the_lid_closed_and_says_lid_closed(lw):
    """A screen locker (the module as the user) through fingerauth-agent: the same skip,
    and the client hears the one word `lid-closed`."""
    lw.enroll("alice", "finger-A")
    lid(lw, "closed")
    # The locker's module runs as alice: its debug file must be writable by her.
    module_log = lw.tmp / "locker-module.log"
    module_log.write_text("")
    os.chmod(module_log, 0o666)
    lw.write_conf(debug_file=str(module_log))
    login = lw.login("alice", as_uid=USERS["alice"], password=PASSWORDS["alice"])
    assert login.name == "PAM_SUCCESS", login  # by the password
    assert login.infos == [] and login.errors == []
    assert [l for l in module_log.read_text().splitlines() if 'reason="agent: lid-closed"' in l]
    assert "lid closed (" in lw.agent.wait_for_log("sent=lid-closed")


LOGIND = r"""
import sys
from gi.repository import Gio, GLib
XML = '''<node><interface name="org.freedesktop.login1.Manager">
<property name="LidClosed" type="b" access="read"/></interface></node>'''
flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
conn = Gio.DBusConnection.new_for_address_sync("unix:path=" + sys.argv[1], flags, None, None)
closed = sys.argv[2] == "true"
info = Gio.DBusNodeInfo.new_for_xml(XML).interfaces[0]
conn.register_object("/org/freedesktop/login1", info, None,
                     lambda *a: GLib.Variant("b", closed), None)
reply = conn.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                       GLib.Variant("(su)", ("org.freedesktop.login1", 4)), None, Gio.DBusCallFlags.NONE, 5000, None)
print("owned" if reply.unpack()[0] == 1 else "not-owned", flush=True)
GLib.MainLoop().run()
"""
