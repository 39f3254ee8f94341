"""Helpers for the `fingerauth` command-line tests: run the built binary with extra
environment or as another uid, read the authenticator's key registry, parse `status`."""

import json
import subprocess

from support.vreader import enroll_commands

__all__ = ["run", "enroll", "manual_approval", "server_keys", "active_kids", "status_lines", "status_checks", "CHECK_NAMES"]

CHECK_NAMES = ["config", "pam-helper", "login-helper", "backend", "reader", "fprintd", "lid", "enrolled", "key", "registered",
               "authenticator", "clock", "policy", "pam", "sessions", "offline"]


def run(world, *args, feed=None, env=None, uid=None, timeout=60):
    """`fingerauth ARGS --config CONF` with the world's environment plus `env`, as `uid`
    (through setpriv) when given."""
    if env is None and uid is None:
        return world.cli(*args, feed=feed, timeout=timeout)
    environment = dict(world.env)
    environment.update(env or {})
    cmd = [str(world.build / "fingerauth"), *args, "--config", str(world.conf_path)]
    if uid is not None:
        cmd = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"] + cmd
    if feed is not None:
        world.reader.feed(feed, timeout=timeout)
    try:
        return subprocess.run(cmd, env=environment, capture_output=True, text=True, timeout=timeout)
    finally:
        if feed is not None:
            world.reader.wait(timeout=timeout)


def enroll(world, user="alice", identity="finger-A", *extra):
    """A successful `fingerauth enroll` (5 stages)."""
    done = run(world, "enroll", "--user", user, *extra, feed=enroll_commands(identity))
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def server_keys(world):
    """`fingerauthd keys list --json` on the world's authenticator database."""
    done = world.authd.admin("keys", "list", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def active_kids(world, user="alice"):
    return [k["kid"] for k in server_keys(world) if k["user"] == user and k["status"] == "active"]


def status_lines(stdout):
    """{check name: (mark, text)} from `fingerauth status` text output."""
    lines = {}
    for line in stdout.splitlines():
        if line.startswith("[") and "]" in line:
            mark, _, rest = line.partition("]")
            name, _, text = rest.strip().partition(" ")
            lines[name] = (mark.strip("[ "), text.strip())
    return lines


def status_checks(stdout):
    """{check name: entry} from `fingerauth status --json`."""
    document = json.loads(stdout)
    return {c["name"]: c for c in document["checks"]}


def manual_approval(world):
    """Replaces the world's authenticator by one that holds new keys for approval
    (`--approval manual`); world.close() stops it."""
    import os
    from support.authd import Authd
    from support.world import AUDIENCE, HOST_ID
    world.authd.stop()
    world.authd = Authd(str(world.tmp / "authd-manual"), audience=AUDIENCE, tls=world.ca, args=("--approval", "manual"))
    world.authd.start()
    world.token_path.write_text(world.authd.create_token(HOST_ID) + "\n")
    os.chmod(world.token_path, 0o600)
    world.write_conf(url=world.authd.url + "/v1/login")
