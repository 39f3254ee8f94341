"""The agent's limits that a local user must not be able to dodge (issue 31): the real
`fingerauth-agent`, clients run as unprivileged test users (setpriv), the real login helper,
libfprint's virtual reader and the real fingerauthd over TLS.

- A request that armed the reader counts as a failed attempt unless it succeeded, whatever
  ended it: a client that hangs up the moment it sees "Place your finger…" included; the
  count is the helper's READY, not the text shown (`text.place_finger[.SERVICE]`).
- Another uid gets the reader while one uid cycles (`ReaderTurns`: a uid that just had the
  reader yields 10 s to a uid told "busy").
- The client hears a fixed word, never the agent's internal reason; the token's `service`
  is `fingerauth-agent` and the client's word is `client_service` (fingerauthd's audit row)."""

import os
import subprocess
import threading
import time

import pytest

from test_agent import ALICE, BOB, PLACE_FINGER, locker, lw  # noqa: F401  (the fixture)

TOO_MANY = "Fingerprint login unavailable: too many failed attempts, use the password"
BUSY = "Fingerprint reader busy: another login is using it"

# A client that sends one request and hangs up as soon as it has read an INFO line (the
# reader is armed) or the RESULT: what a locker killed at the prompt, or a user looping
# "connect, wait for the prompt, hang up", does.
HANG_UP = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(20)
s.sendall(sys.argv[2].encode() + b"\n")
got = b""
while not any(l.startswith((b"INFO ", b"RESULT ")) for l in got.split(b"\n")[:-1]):
    chunk = s.recv(4096)
    if not chunk:
        break
    got += chunk
sys.stdout.write(got.decode("ascii", "replace"))
"""


def hang_up_when_armed(w, uid, user, service="swaylock"):
    """One request as `uid`, closed the moment the reader is armed; returns the lines read."""
    done = subprocess.run(["setpriv", "--reuid", str(uid), "--regid", str(uid), "--clear-groups", "--",
                           "/usr/bin/python3", "-c", HANG_UP, str(w.agent.socket),
                           "FINGERAUTH-AGENT 1 LOGIN %s %s verbose" % (user, service)],
                          capture_output=True, text=True, timeout=30)
    return done.stdout.splitlines()


def armed(lines):
    return "INFO " + PLACE_FINGER in lines or any(line.startswith("INFO ") for line in lines)


def test_hanging_up_at_the_prompt_counts_and_stops_arming_after_five(lw):
    """Before: a client that hung up after "Place your finger…" was never counted (only the
    exit status of a finished login was), so connect/hang-up cycles armed the reader forever."""
    lw.enroll("alice", "finger-A")
    for n in range(5):
        lines = hang_up_when_armed(lw, ALICE, "alice")
        assert lines[-1] == "INFO " + PLACE_FINGER, (n, lines)
        lw.agent.wait_for_log("went away")
    before = lw.reader._inode()
    lines = hang_up_when_armed(lw, ALICE, "alice")
    # Refused before the reader: the client hears the text and the category only.
    assert lines == ["ERROR " + TOO_MANY, "RESULT 9 - - - too-many-attempts"], lines
    assert lw.reader._inode() == before, "the reader was armed again"
    line = lw.agent.wait_for_log("reader not armed for another")
    assert "5 failed fingerprint attempts in a row" in line and "uid=%d" % ALICE in line
    gone = [l for l in lw.agent.log_lines() if "the client went away during the login" in l]
    assert len(gone) == 5, gone
    # The record is root's own, in a root-only folder, and says 5.
    record = lw.tmp / "attempts" / "alice"
    assert record.read_text().startswith("fingerauth-attempts 1 0005 ")
    assert oct(record.stat().st_mode & 0o777) == "0o600" and record.stat().st_uid == 0
    assert oct((lw.tmp / "attempts").stat().st_mode & 0o777) == "0o700"


@pytest.mark.parametrize("key", ["text.place_finger", "text.place_finger.locker-only"])
def test_custom_prompt_texts_keep_the_limit(lw, key):
    """Before: "armed" was decided by comparing the text shown with the English prompt, so an
    admin's own `text.place_finger` (or `.SERVICE`, and the client names SERVICE) turned the
    limit off."""
    lw.enroll("alice", "finger-A")
    lw.write_conf(max_tries="1", **{key: "Touch the reader, please"})
    for n in range(5):
        login = locker(lw, scans=["finger-B"])
        assert login.name == "PAM_MAXTRIES" and login.infos == ["Touch the reader, please"], (n, login)
    before = lw.reader._inode()
    login = locker(lw)
    assert login.name == "PAM_AUTHINFO_UNAVAIL" and login.errors == [TOO_MANY] and login.infos == [], login
    assert lw.reader._inode() == before
    assert "5 failed fingerprint attempts in a row" in lw.agent.wait_for_log("reader not armed for another")


def test_a_second_user_gets_the_reader_while_the_first_cycles(lw):
    """alice loops connect / wait for the prompt / hang up as fast as she can; bob's locker asks
    every 0.25 s. Bound: bob gets the reader as soon as the request alice holds ends — alice
    arms it at most once after bob was first told "busy" — and here within 5 s. Before,
    alice's cycles kept the reader and bob was told "busy" again and again."""
    lw.enroll("alice", "finger-A")
    lw.enroll("bob", "finger-B")
    stop = threading.Event()
    alice_arms = []

    def alice():
        while not stop.is_set():
            if armed(hang_up_when_armed(lw, ALICE, "alice")):
                alice_arms.append(time.monotonic())

    cycling = threading.Thread(target=alice, daemon=True)
    cycling.start()
    try:
        deadline = time.monotonic() + 10
        while not alice_arms:
            assert time.monotonic() < deadline, "alice never armed the reader"
            time.sleep(0.01)
        started = time.monotonic()
        first_busy = None
        answers = []
        while True:
            lines = hang_up_when_armed(lw, BOB, "bob")
            answers.append(lines)
            if armed(lines):
                bob_armed = time.monotonic()
                break
            if first_busy is None and "ERROR " + BUSY in lines:
                first_busy = time.monotonic()
            assert time.monotonic() - started < 20, "bob never got the reader: %r" % answers[-5:]
            time.sleep(0.25)
    finally:
        stop.set()
        cycling.join(30)
    waited = bob_armed - started
    assert waited < 5.0, (waited, answers)
    if first_busy is not None:
        after = [t for t in alice_arms if first_busy < t < bob_armed]
        assert len(after) <= 1, "alice armed the reader %d times while bob waited" % len(after)
        line = lw.agent.wait_for_log("other-users-turn")
        assert "uid=%d" % ALICE in line and "reader not armed" in line


def test_the_client_hears_a_category_never_the_internal_reason(lw):
    """Before: RESULT carried the agent's full reason (paths, TLS errors) to an unprivileged
    client. Now a fixed word; the details stay in the agent's log, and the module's log line
    says the word."""
    lw.enroll("alice", "finger-A")
    # The locker's module runs as alice: it appends only to a root-owned file, which alice
    # must be able to write.
    module_log = lw.tmp / "locker-module.log"
    module_log.write_text("")
    os.chmod(module_log, 0o666)
    lw.write_conf(cafile=str(lw.tmp / "no-such-ca.pem"), debug_file=str(module_log))
    answer, _ = lw.agent.raw(b"FINGERAUTH-AGENT 1 LOGIN alice swaylock verbose\n", as_uid=ALICE)
    result = answer.splitlines()[-1]
    assert result == "RESULT 9 - - - authenticator-unavailable", answer
    assert "no-such-ca" not in answer and "/" not in result
    line = lw.agent.wait_for_log("sent=authenticator-unavailable")
    assert "no-such-ca.pem" in line or "CA" in line or "certificate" in line, line
    login = locker(lw)
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    module = module_log.read_text().splitlines()
    assert [l for l in module if 'reason="agent: authenticator-unavailable"' in l], module[-3:]


def test_the_token_names_the_agent_as_its_service_and_the_clients_word_apart(lw):
    """Before: the client chose the token's `service`. Now `service` is fingerauth-agent and
    the client's word is `client_service`, recorded as such; a root host's own login keeps its
    PAM service and has no client_service."""
    lw.enroll("alice", "finger-A")
    login = locker(lw, scans=["finger-A"])
    assert login.name == "PAM_SUCCESS", login
    row = [r for r in lw.authd.audit_rows() if r.get("event") == "login"][-1]
    assert (row["outcome"], row["user"], row["service"], row["client_service"]) == \
        ("accept", "alice", "fingerauth-agent", "locker-only"), row
    root = lw.login("alice", scans=["finger-A"], service=lw.service("root-only", fallback=False))
    assert root.name == "PAM_SUCCESS", root
    row = [r for r in lw.authd.audit_rows() if r.get("event") == "login"][-1]
    assert (row["service"], row["client_service"]) == ("root-only", None), row
    audit = lw.authd.admin("audit", "--json")
    assert '"service":"fingerauth-agent","client_service":"locker-only"' in audit.stdout, audit.stdout


def test_a_policy_keyed_on_service_cannot_be_met_by_the_clients_word(lw):
    """Rules allow fingerprint logins for sudo only. Before, a locker client that named
    "sudo" in its request got a token with service sudo and was let in; now the token says
    fingerauth-agent, which the rules do not allow."""
    lw.enroll("alice", "finger-A")
    for args in (["--services", "sudo", "--action", "allow"], ["--action", "deny"]):
        done = lw.authd.admin("policy", "add", "--stage", "login", "--users", "*", "--hosts", "*", *args)
        assert done.returncode == 0, done.stderr
    lw.reader.feed(["SCAN finger-A"], timeout=30)
    try:
        answer, _ = lw.agent.raw(b"FINGERAUTH-AGENT 1 LOGIN alice sudo verbose\n", as_uid=ALICE)
    finally:
        lw.reader.wait(timeout=30)
    assert answer.splitlines()[-1].startswith("RESULT 7 right-index-finger "), answer
    assert answer.splitlines()[-1].endswith(" policy-denied"), answer
    row = [r for r in lw.authd.audit_rows() if r.get("event") == "login"][-1]
    assert (row["outcome"], row["reason"], row["service"], row["client_service"]) == \
        ("deny", "policy_denied", "fingerauth-agent", "sudo"), row
