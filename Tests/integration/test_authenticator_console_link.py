"""`fingerauthd admin create` and `admin reset` print a setup link that answers (issue 48,
point 3): on the configuration's `admin-listen` when the console is on; while it is off
(no `admin-listen` line, as shipped), the line to add and the restart that turn it on;
with the line but no serve that read it, the restart.
On a configuration `fingerauthd init` made (as root, for `nobody`, in a folder under /tmp);
the console answers the link over TLS on loopback."""

import os
import socket

from support.tls import https_status
from test_authenticator_init import NOBODY, Served, fingerauthd, init, place  # noqa: F401  (fixture)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_admin_create_without_admin_listen_names_the_line_and_the_restart_then_the_link_answers(place):
    done = init(place, "--name", "127.0.0.1", "--self-signed", "--listen", "127.0.0.1:8443")
    assert done.returncode == 0, done.stdout + done.stderr
    config = place / "fingerauthd.conf"

    off = fingerauthd("admin", "create", "ada", "--config", str(config))
    assert off.returncode == 0, off.stdout + off.stderr
    lines = off.stdout.splitlines()
    assert lines[:-1] == [
        "created admin ada; the one-time setup link (valid 24 hours, shown only now) is the last line below",
        "the console is off: %s has no admin-listen line, so nothing answers the link until you turn it on:" % config,
        "  1. add this line to %s:   admin-listen = 127.0.0.1:8444" % config,
        "  2. restart fingerauthd:   stop `fingerauthd serve --config %s` and start it again" % config,
        "(the console then listens on loopback only: from another machine, ssh -L 8444:127.0.0.1:8444 to this one)",
    ], off.stdout
    assert lines[-1].startswith("https://127.0.0.1:8444/setup?token="), off.stdout

    # The line it names, on a port of this test's (8444 may be taken here): then the link
    # is printed for that address, and answers once serve runs with it.
    port = free_port()
    with open(config, "a") as f:
        f.write("admin-listen = 127.0.0.1:%d\n" % port)
    prefix = "https://127.0.0.1:%d" % port
    # The line is there, but no serve has read it yet: the link is for it, and the restart is said.
    before = fingerauthd("admin", "reset", "ada", "--config", str(config))
    assert before.returncode == 0, before.stdout + before.stderr
    lines = before.stdout.splitlines()
    assert lines[1:-1] == [
        "nothing listens on 127.0.0.1:%d yet, so nothing answers the link: restart fingerauthd to open the console: "
        "stop `fingerauthd serve --config %s` and start it again" % (port, config)], before.stdout
    assert lines[-1].startswith(prefix + "/setup?token="), before.stdout
    served = Served(config)
    try:
        on = fingerauthd("admin", "reset", "ada", "--config", str(config))
        assert on.returncode == 0, on.stdout + on.stderr
        lines = on.stdout.splitlines()
        assert len(lines) == 2 and lines[0].endswith("the one-time setup link (valid 24 hours, shown only now):"), on.stdout
        link = lines[1]
        assert link.startswith(prefix + "/setup?token="), link
        assert https_status(port, link[len(prefix):], place / "tls" / "cert.pem") == "HTTP/1.1 200 OK"
    finally:
        served.stop()


def test_the_suggested_console_port_is_not_the_login_port_and_plain_http_is_said(place):
    config = place / "plain.conf"
    config.write_text("listen = 127.0.0.1:8444\naudience = a\ndb = %s\n" % (place / "state" / "authd.db"))
    os.chmod(config, 0o644)
    os.makedirs(place / "state", mode=0o700)
    os.chown(place / "state", NOBODY.pw_uid, NOBODY.pw_gid)
    done = fingerauthd("admin", "create", "bob", "--config", str(config))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  1. add this line to %s:   admin-listen = 127.0.0.1:8445" % config in done.stdout.splitlines(), done.stdout
    # No tls-cert: the console would be plain HTTP on loopback, and the link says so.
    assert done.stdout.splitlines()[-1].startswith("http://127.0.0.1:8445/setup?token="), done.stdout
