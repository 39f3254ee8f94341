"""The login helper's newline for `prompt = parallel`, on a pseudo-terminal made by the
test: the real `fingerauth-login --login` with a request naming the terminal, the virtual
reader, a real fingerauthd over TLS. It injects one newline after ACCEPTED only while the
terminal shows a password read pending (echo off, canonical), only into the device the
request named; otherwise nothing reaches the terminal's input."""

import base64
import os
import select
import subprocess
import termios

import pytest

from support.vreader import scan_commands
from support.world import HOST_ID


@pytest.fixture
def pty_pair():
    master, slave = os.openpty()
    try:
        yield master, slave
    finally:
        os.close(master)
        os.close(slave)


def request(world, terminal, device):
    s = world.settings
    jti = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
    lines = ["user=alice", "service=sudo", "jti=" + jti, "issuer=" + HOST_ID, "url=" + s["url"],
             "audience=" + s["audience"], "cafile=" + s["cafile"], "state_dir=" + s["state_dir"],
             "virtual_reader=" + s["virtual_reader"], "timeout=5", "terminal=" + terminal,
             "terminal_device=%d" % device]
    return "\n".join(lines) + "\n", jti


def run_helper(world, terminal, device, fingers):
    text, jti = request(world, terminal, device)
    world.reader.feed(scan_commands(*fingers), timeout=30)
    try:
        done = subprocess.run([str(world.build / "fingerauth-login"), "--login"], input=text, capture_output=True,
                              text=True, timeout=30, env={})
    finally:
        world.reader.wait(timeout=30)
    return done, jti


def pending_input(slave):
    """What the terminal's input queue holds (the slave side reads it), within 0.3 s."""
    ready, _, _ = select.select([slave], [], [], 0.3)
    return os.read(slave, 64) if ready else b""


def password_read_pending(slave):
    attrs = termios.tcgetattr(slave)
    attrs[3] = (attrs[3] & ~termios.ECHO) | termios.ICANON
    termios.tcsetattr(slave, termios.TCSANOW, attrs)


def test_newline_after_acceptance_while_a_password_read_is_pending(world, pty_pair):
    master, slave = pty_pair
    world.enroll("alice", "finger-A")
    password_read_pending(slave)
    done, jti = run_helper(world, os.ttyname(slave), os.fstat(slave).st_rdev, ["finger-A"])
    assert done.returncode == 0, done.stdout
    assert done.stdout.splitlines()[-1].startswith("ACCEPTED %s " % jti)
    assert pending_input(slave) == b"\n"
    assert pending_input(slave) == b""  # once


def test_no_newline_when_echo_is_on(world, pty_pair):
    """The read already ended (the host turned echo back on): nothing is injected."""
    master, slave = pty_pair
    world.enroll("alice", "finger-A")
    done, jti = run_helper(world, os.ttyname(slave), os.fstat(slave).st_rdev, ["finger-A"])
    assert done.returncode == 0 and "ACCEPTED %s " % jti in done.stdout, done.stdout
    assert pending_input(slave) == b""


def test_no_newline_into_another_device(world, pty_pair):
    master, slave = pty_pair
    world.enroll("alice", "finger-A")
    password_read_pending(slave)
    done, _ = run_helper(world, os.ttyname(slave), os.fstat(slave).st_rdev + 1, ["finger-A"])
    assert done.returncode == 0, done.stdout
    assert pending_input(slave) == b""


def test_no_newline_without_a_match(world, pty_pair):
    master, slave = pty_pair
    world.enroll("alice", "finger-A")
    password_read_pending(slave)
    done, _ = run_helper(world, os.ttyname(slave), os.fstat(slave).st_rdev, ["finger-B"] * 3)
    assert done.returncode != 0 and "ACCEPTED" not in done.stdout, done.stdout
    assert pending_input(slave) == b""
