#!/usr/bin/python3
"""make demo: the whole FingerAuth login on this machine, end to end, with nothing changed
outside a temporary folder. A real fingerauthd over TLS, libfprint's virtual reader, the
real PAM module loaded by real libpam; then the authenticator goes away and the same
login falls over to the password."""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "integration"))

from support.tls import make_ca  # noqa: E402
from support.world import HOST_ID, PASSWORDS, World  # noqa: E402

USER = "alice"
FINGER = "finger-of-alice"


def step(n, text):
    print("\n[%d/6] %s" % (n, text), flush=True)


def show(text, prefix="      "):
    for line in text.rstrip().splitlines():
        print(prefix + line, flush=True)


def show_login(login):
    for line in login.stdout.splitlines():
        kind, _, text = line.partition(" ")
        if kind == "INFO":
            show("(pam info)   " + text)
        elif kind == "ERROR":
            show("(pam error)  " + text)
        elif kind == "PROMPT":
            show("(pam prompt) %s  <- the demo types %s's password" % (text, USER))
    show("pam_authenticate returned %s" % login.name)


def main():
    tmp = tempfile.mkdtemp(prefix="fingerauth-demo.")
    world = None
    try:
        print("FingerAuth demo — working in %s" % tmp)
        step(1, "A test CA and an ECDSA P-256 certificate for 127.0.0.1 (openssl)")
        ca = make_ca(os.path.join(tmp, "ca"))
        show("CA: %s" % ca.ca_cert)

        step(2, "The reference authenticator, fingerauthd, over TLS on loopback")
        os.makedirs(os.path.join(tmp, "host"))
        world = World(os.path.join(tmp, "host"), ca)
        world.start_authenticator()
        show("listening on %s (SQLite %s)" % (world.authd.url, world.authd.db))
        show("host enrollment token for '%s' written to %s (mode 0600)" % (HOST_ID, world.token_path))
        show("module configuration %s:" % world.conf_path)
        show(world.conf_path.read_text(), prefix="        ")

        step(3, "Enroll %s's right index finger on the virtual reader; create and register the device key" % USER)
        done = world.enroll(USER, FINGER)
        show("$ fingerauth enroll --user %s --finger right-index-finger" % USER)
        show(done.stdout, prefix="        ")

        service = world.service("demo-login")
        step(4, "Log in through PAM with the finger on the reader")
        show("stack %s:" % (world.confdir / service))
        show((world.confdir / service).read_text(), prefix="        ")
        login = world.login(USER, scans=[FINGER], password=PASSWORDS[USER], service=service)
        show_login(login)
        if login.name != "PAM_SUCCESS" or login.prompts:
            raise SystemExit("demo failed: the fingerprint login did not succeed on its own")
        show("=> authenticated by fingerprint; no password was asked")
        row = [r for r in world.authd.audit_rows() if r.get("event") == "login"][-1]
        show("authenticator audit: %s user=%s outcome=%s kid=%s" % (row.get("event"), row.get("user"),
                                                                    row.get("outcome"), row.get("kid")))
        show("module log: " + world.log_lines()[-1])

        step(5, "Stop the authenticator and log in again: the password takes over at once")
        world.authd.stop()
        login = world.login(USER, password=PASSWORDS[USER], service=service)
        show_login(login)
        if login.name != "PAM_SUCCESS" or not login.prompts:
            raise SystemExit("demo failed: the password fall-over did not happen")
        if any("Place your finger" in info for info in login.infos):
            raise SystemExit("demo failed: a finger was asked for although the authenticator was down")
        show("=> nobody was asked for a finger that could not log them in; the fingerprint path")
        show("   failed closed and the password authenticated %s" % USER)
        show("module log: " + world.log_lines()[-1])

        step(6, "Clean up: server stopped, temporary folder removed")
    finally:
        if world is not None:
            world.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print("\ndemo finished: fingerprint login accepted, then password fall-over shown")


if __name__ == "__main__":
    main()
