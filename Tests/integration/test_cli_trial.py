"""`fingerauth trial`: the virtual reader for a machine without one. `start` adds
`virtual_reader` between marker lines and nothing else, `touch` plays the finger for the
real `enroll` and `test`, `stop` takes the lines, the socket and every print the virtual
reader made back out (and resets a user left without prints: key revoked at the
authenticator). A real fingerauthd over TLS, libfprint's virtual reader, the built CLI."""

import os
import stat
import subprocess
import time

from support.cli import run, server_keys

MARKER = "# >>> fingerauth trial:"


def trial_world(world):
    """The world's configuration without its own virtual_reader: a machine with no reader."""
    world.write_conf(virtual_reader=None)
    return world.conf_path.read_text()


def touch_in_background(world, *args):
    return subprocess.Popen([str(world.build / "fingerauth"), "trial", "touch", *args, "--config", str(world.conf_path)],
                            env=world.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(proc, timeout=30):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out + err
    return out


def test_trial_start_enroll_test_and_stop_leave_the_configuration_as_it_was(world):
    original = trial_world(world)
    socket = str(world.state / "trial" / "reader.sock")

    started = run(world, "trial", "start", "--user", "alice")
    assert started.returncode == 0, started.stdout + started.stderr
    conf = world.conf_path.read_text()
    assert conf.startswith(original)  # nothing of the file changed: five lines added at the end
    added = conf[len(original):].splitlines()
    assert added[0].startswith(MARKER)
    assert added[1:] == ["reader = libfprint", "lid = ignore", "virtual_reader = " + socket, "# <<< fingerauth trial"]
    st = os.stat(world.state / "trial")
    assert (stat.S_IMODE(st.st_mode), st.st_uid) == (0o700, 0)  # only root can touch the reader
    assert "fingerauth trial touch --times 5" in started.stdout and "fingerauth enroll --user alice" in started.stdout

    toucher = touch_in_background(world, "--times", "5")
    enrolled = run(world, "enroll", "--user", "alice")
    assert "touched the virtual reader (5/5)" in finished(toucher)
    assert enrolled.returncode == 0, enrolled.stdout + enrolled.stderr
    assert "stage 5/5" in enrolled.stdout and "registered key" in enrolled.stdout
    [key] = [k for k in server_keys(world) if k["user"] == "alice"]
    assert key["status"] == "active"

    toucher = touch_in_background(world)
    tested = run(world, "test", "--user", "alice")
    finished(toucher)
    assert tested.returncode == 0 and "accepted by the authenticator for alice" in tested.stdout, tested.stdout

    toucher = touch_in_background(world, "--wrong", "--times", "3")
    wrong = run(world, "test", "--user", "alice")
    finished(toucher)
    assert wrong.returncode == 1 and "no match in 3 tries" in wrong.stdout, wrong.stdout

    stopped = run(world, "trial", "stop")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert world.conf_path.read_text() == original
    assert not (world.state / "trial").exists()
    assert not (world.state / "users" / "alice").exists()  # prints, key and registration
    assert [k["status"] for k in server_keys(world) if k["user"] == "alice"] == ["revoked"]
    assert "revoked key %s at the authenticator" % key["kid"] in stopped.stdout


def test_trial_stop_keeps_prints_of_another_reader_and_the_key(world):
    trial_world(world)
    assert run(world, "trial", "start").returncode == 0
    toucher = touch_in_background(world, "--times", "5")
    assert run(world, "enroll", "--user", "bob").returncode == 0
    finished(toucher)
    toucher = touch_in_background(world, "--times", "5")
    assert run(world, "enroll", "--user", "bob", "--finger", "left-thumb").returncode == 0
    finished(toucher)
    # The left thumb as a print of another driver: the same serialized print, its driver
    # name changed (same length), as a real reader's print would carry its own.
    _, prints, key = world.paths("bob")
    thumb = prints / "left-thumb.fpt"
    data = thumb.read_bytes()
    assert data.count(b"virtual_device") == 1
    thumb.write_bytes(data.replace(b"virtual_device", b"usb_reader_xyz"))

    stopped = run(world, "trial", "stop")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert sorted(os.listdir(prints)) == ["left-thumb.fpt"]
    assert key.exists()
    assert [k["status"] for k in server_keys(world) if k["user"] == "bob"] == ["active"]
    assert "bob: deleted 1 print(s) of the virtual reader; the other prints and the key stay" in stopped.stdout


def test_touch_without_a_trial_says_how_to_start_one(world):
    trial_world(world)
    done = run(world, "trial", "touch")
    assert done.returncode == 1
    assert done.stderr.strip() == "fingerauth: no virtual reader is configured: start a trial first (fingerauth trial start)"


def test_touch_gives_up_when_no_command_opens_the_reader(world):
    trial_world(world)
    assert run(world, "trial", "start").returncode == 0
    started = time.monotonic()
    done = run(world, "trial", "touch", "--wait", "1")
    elapsed = time.monotonic() - started
    assert done.returncode == 1 and elapsed < 5, (elapsed, done.stderr)
    assert "the virtual reader was not opened within 1 s" in done.stderr


def test_trial_start_refuses_a_virtual_reader_set_by_hand_and_runs_once(world):
    before = world.conf_path.read_text()  # the world's own virtual_reader line
    done = run(world, "trial", "start")
    assert done.returncode == 1 and "sets virtual_reader = %s already, outside a trial" % world.reader.path in done.stderr
    assert world.conf_path.read_text() == before

    original = trial_world(world)
    os.chmod(world.conf_path, 0o600)  # the admin's mode stays
    assert run(world, "trial", "start").returncode == 0
    again = run(world, "trial", "start")
    assert again.returncode == 0 and "a trial is running already" in again.stdout
    assert world.conf_path.read_text().count(MARKER) == 1
    assert stat.S_IMODE(os.stat(world.conf_path).st_mode) == 0o600
    assert run(world, "trial", "stop").returncode == 0
    assert world.conf_path.read_text() == original
    assert stat.S_IMODE(os.stat(world.conf_path).st_mode) == 0o600


def test_only_root_runs_the_trial(world):
    trial_world(world)
    for action in ("start", "touch", "stop"):
        done = run(world, "trial", action, uid=5001)
        assert done.returncode == 1 and "must run as root" in done.stderr, (action, done.stderr)
