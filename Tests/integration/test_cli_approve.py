"""`fingerauth approve`: remote approval decided from a terminal on the workstation. A real
fingerauthd over TLS (the policy's approve stage allowing it), web01 asking with a host key
made here (support.approvals.Parties), and the workstation ws-alice as a World: its
fingerauth.conf, its virtual reader, alice's finger-A enrolled and her device key registered
under ws-alice. What the person sees (the request, the outcome line, the exit status) and
what the admin sees (the approval's state, the audit rows) are both checked."""

import os
import subprocess
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.approvals import Parties, approving_workstation, rows  # noqa: E402
from support.authd import build_dir  # noqa: E402
from support.cli import enroll, run, server_keys  # noqa: E402
from support.swtpm import SoftwareTPM, available as swtpm_available, ek_ca_bundle  # noqa: E402
from support.vreader import scan_commands  # noqa: E402
from support.world import NSS_WRAPPER, World  # noqa: E402

pytestmark = pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauthd"), os.X_OK),
                                reason="no fingerauthd in %s" % build_dir())

FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
MUTE = 3
ARGS = ("--user-failures", "0", "--address-failures", "0", "--approval-mute", str(MUTE), "--approval-wait", "5",
        "--approval-host-requests", "0", "--approval-address-requests", "0")
WORKSTATION = "ws-alice"


@pytest.fixture
def ws(tmp_path, ca):
    """The workstation ws-alice (alice enrolled with finger-A, bob with finger-B), its
    authenticator allowing remote approval, and web01's host key (`ws.web01`)."""
    w = World(tmp_path, ca)
    try:
        approving_workstation(w, WORKSTATION, ARGS)
        enroll(w, "alice", "finger-A")
        enroll(w, "bob", "finger-B")
        w.parties = Parties(w.authd)
        w.web01 = w.parties.host_key("web01")
        yield w
    finally:
        w.close()
    log = w.authd.log_text()
    for secret in w.parties.secrets:
        assert secret not in log
    # Nor the command's own tokens (a compact JWT's header starts `eyJ`).
    assert "eyJ" not in log


def approve(ws, *args, feed=None, env=None, timeout=60):
    return run(ws, "approve", *args, feed=feed, env=env, timeout=timeout)


def outcome(done):
    """The last line of the output: the outcome."""
    return done.stdout.strip().splitlines()[-1]


def no_secret_in(ws, done):
    text = done.stdout + done.stderr
    for secret in ws.parties.secrets:
        assert secret not in text
    # No compact JWT of any kind (header `{"alg"…` is `eyJ…`) and no key material.
    assert "eyJ" not in text and "PRIVATE KEY" not in text


def test_alices_finger_approves_web01s_request_and_the_audit_names_ws_alice_and_her_key(ws):
    asked = ws.parties.request(ws.web01, "alice", service="sudo", rhost="10.0.0.5", tty="ssh")
    assert asked.status == 201, asked.body
    opened = asked.json()
    done = approve(ws, "--user", "alice", feed=scan_commands("finger-A"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0].startswith("alice → sudo on web01, from 10.0.0.5 (ssh), code %s (expires in " % opened["code"])
    assert any(line.startswith("touch the reader (Virtual device for debugging) with alice's finger")
               for line in lines), lines
    assert outcome(done) == "approved: web01 may log alice in to sudo"
    assert "clock" not in done.stdout
    state = ws.parties.state(ws.web01, opened["id"]).json()
    kid = ws.kid("alice")
    assert (state["status"], state["workstation"], state["kid"]) == ("approved", WORKSTATION, kid)
    shown = rows(ws.authd, "approval_shown", opened["id"])
    assert [(r["workstation"], r["kid"]) for r in shown] == [(WORKSTATION, kid)]
    approved = rows(ws.authd, "approval_approved", opened["id"])
    assert [(r["outcome"], r["user"], r["host"], r["kid"], r["workstation"]) for r in approved] == [
        ("accept", "alice", "web01", kid, WORKSTATION)]
    no_secret_in(ws, done)


def test_a_request_another_user_asked_for_says_who_and_her_finger_approves_it_naming_them(ws):
    opened = ws.parties.request(ws.web01, "alice", service="su", rhost="10.0.0.9", tty="pts/1",
                                caller="bob").json()
    done = approve(ws, "--user", "alice", feed=scan_commands("finger-A"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0].startswith(
        "bob asks to become alice via su on web01, from 10.0.0.9 (pts/1), code %s (expires in " % opened["code"])
    assert outcome(done) == "approved: web01 may log alice in to su"
    assert ws.parties.state(ws.web01, opened["id"]).json()["status"] == "approved"


def test_a_wrong_finger_is_no_match_and_the_request_stays_pending(ws):
    opened = ws.parties.request(ws.web01, "alice").json()
    done = approve(ws, "--user", "alice", feed=scan_commands("finger-B", "finger-B", "finger-B"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no match; 2 tries left" in done.stdout.splitlines()
    assert outcome(done) == "no match: web01's request stays pending"
    assert ws.parties.state(ws.web01, opened["id"]).json()["status"] == "pending"
    assert rows(ws.authd, "approval_approved", opened["id"]) == []


def test_bobs_finger_cannot_approve_alices_request(ws):
    """bob's print is enrolled on the same reader: for alice only alice's prints count."""
    opened = ws.parties.request(ws.web01, "alice").json()
    done = approve(ws, "--user", "alice", feed=scan_commands("finger-B", "finger-B", "finger-B"))
    assert done.returncode == 1 and outcome(done).startswith("no match")
    assert ws.parties.state(ws.web01, opened["id"]).json()["status"] == "pending"


def test_not_me_denies_without_a_finger_and_mutes_alices_next_request(ws):
    opened = ws.parties.request(ws.web01, "alice", rhost="", tty="pts/3").json()
    done = approve(ws, "--user", "alice", "--deny", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0].startswith("alice → sudo on web01, from web01 itself (pts/3), code ")
    assert outcome(done).startswith("denied: web01 may not log alice in to sudo; alice's requests are muted")
    assert "touch the reader" not in done.stdout
    assert ws.parties.state(ws.web01, opened["id"]).json()["status"] == "denied"
    denied = rows(ws.authd, "approval_denied", opened["id"])
    assert [(r["user"], r["workstation"], r["kid"]) for r in denied] == [("alice", WORKSTATION, ws.kid("alice"))]
    muted = ws.parties.request(ws.web01, "alice", tty="pts/4")
    assert (muted.status, muted.json()["error"]) == (429, "approval_muted")
    no_secret_in(ws, done)


def test_deny_without_a_terminal_needs_yes(ws):
    ws.parties.request(ws.web01, "alice")
    done = approve(ws, "--user", "alice", "--deny")
    assert done.returncode == 2
    assert done.stderr.startswith("fingerauth: --deny without a terminal needs --yes\nusage: fingerauth approve")


def test_nothing_pending_within_the_wait_is_nothing_to_approve(ws):
    started = time.monotonic()
    done = approve(ws, "--user", "alice", "--wait", "1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == "nothing to approve: no request for alice within 1 s\n"
    assert 0.9 < time.monotonic() - started < 10


def test_a_request_that_comes_while_it_waits_is_shown_and_approved(ws):
    asked = {}

    def web01_asks():
        time.sleep(1.5)
        asked["answer"] = ws.parties.request(ws.web01, "alice")

    asking = threading.Thread(target=web01_asks)
    asking.start()
    done = approve(ws, "--user", "alice", "--wait", "10", feed=scan_commands("finger-A"))
    asking.join(10)
    assert done.returncode == 0, done.stdout + done.stderr
    assert outcome(done) == "approved: web01 may log alice in to sudo"
    opened = asked["answer"].json()
    assert ws.parties.state(ws.web01, opened["id"]).json()["status"] == "approved"


def test_bobs_pending_request_is_not_shown_to_alice(ws):
    opened = ws.parties.request(ws.web01, "bob").json()
    done = approve(ws, "--user", "alice", "--wait", "1")
    assert done.returncode == 1
    assert done.stdout == "nothing to approve: no request for alice within 1 s\n"
    assert "bob" not in done.stdout
    assert ws.parties.state(ws.web01, opened["id"]).json()["status"] == "pending"
    # bob's own approval, by his own finger, is his.
    mine = approve(ws, "--user", "bob", feed=scan_commands("finger-B"))
    assert mine.returncode == 0, mine.stdout + mine.stderr
    assert outcome(mine) == "approved: web01 may log bob in to sudo"


@pytest.mark.skipif(not os.path.exists(FAKETIME), reason="libfaketime is not installed (apt-get install faketime)")
def test_a_workstation_clock_ten_minutes_off_is_approved_by_the_authenticators_clock_and_told(ws):
    opened = ws.parties.request(ws.web01, "alice").json()
    ahead = {"LD_PRELOAD": NSS_WRAPPER + ":" + FAKETIME, "FAKETIME": "+600s", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
             "FAKETIME_NO_CACHE": "1"}
    # Through env(1), as test_authenticator_abuse runs fingerauthd ahead: the preloaded
    # library then leaves the program's own arguments alone.
    ws.reader.feed(scan_commands("finger-A"), timeout=60)
    try:
        done = subprocess.run(["/usr/bin/env", str(ws.build / "fingerauth"), "approve", "--user", "alice",
                               "--config", str(ws.conf_path)], env=dict(ws.env, **ahead), capture_output=True,
                              text=True, timeout=60)
    finally:
        ws.reader.wait(timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    notes = [line for line in done.stdout.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1, done.stdout
    assert "this computer's clock is " in notes[0] and " s ahead of the authenticator's" in notes[0]
    seconds = int(notes[0].split("clock is ")[1].split(" s ")[0])
    assert 595 <= seconds <= 605, notes
    assert outcome(done) == "approved: web01 may log alice in to sudo"
    assert ws.parties.state(ws.web01, opened["id"]).json()["status"] == "approved"


def test_the_authenticator_stopped_is_one_clear_line_and_exit_1(ws):
    ws.authd.stop()
    done = approve(ws, "--user", "alice", "--wait", "1")
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("fingerauth: cannot connect to the authenticator: "), lines
    assert "refused the connection" in lines[0]
    assert "(GET " in lines[0] and "/healthz)" in lines[0]


def test_wrong_usage_exits_2(ws):
    for args in (["--wait", "-1"], ["--wait", "soon"], ["--wait", "3601"], ["--deny=yes"]):
        done = approve(ws, "--user", "alice", *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "usage: fingerauth approve" in done.stderr


def test_a_user_without_a_device_key_is_told_how_to_make_one(ws):
    done = approve(ws, "--user", "carol", "--wait", "0")
    assert done.returncode == 1
    assert done.stderr == "fingerauth: carol has no device key (create one: fingerauth key create --user carol)\n"



@pytest.mark.skipif(not swtpm_available(), reason="swtpm or tpm2-tools missing (make test-deps)")
def test_a_tpm_device_key_signs_the_watch_and_the_approval_where_the_policy_requires_one(tmp_path, ca):
    """alice's key in a (software) TPM; the approve rule requires a hardware key, which
    fingerauthd decides again at the decision by the kind of the workstation's key."""
    ek_ca = ek_ca_bundle(str(tmp_path / "ek-ca.pem"))
    (tmp_path / "ws").mkdir()
    with SoftwareTPM() as machine:
        w = World(tmp_path / "ws", ca)
        try:
            w.start_authenticator(args=ARGS + ("--tpm-ek-ca", ek_ca))
            rule = w.authd.admin("policy", "add", "--stage", "approve", "--users", "*", "--hosts", "*",
                                 "--action", "require-hardware-key")
            assert rule.returncode == 0, rule.stderr
            w.token_path.write_text(w.authd.create_token(WORKSTATION) + "\n")
            w.write_conf(host_id=WORKSTATION, tpm_tcti=machine.tcti)
            enroll(w, "alice", "finger-A", "--store", "tpm")
            parties = Parties(w.authd)
            web01 = parties.host_key("web01")
            opened = parties.request(web01, "alice").json()
            done = approve(w, "--user", "alice", feed=scan_commands("finger-A"))
            assert done.returncode == 0, done.stdout + done.stderr
            assert outcome(done) == "approved: web01 may log alice in to sudo"
            kid = w.kid("alice")
            assert [k["kind"] for k in server_keys(w) if k["kid"] == kid] == ["attested-tpm"]
            state = parties.state(web01, opened["id"]).json()
            assert (state["status"], state["kid"]) == ("approved", kid)
            # bob's key is a file: the same rule refuses his finger's approval, and he is told why.
            enroll(w, "bob", "finger-B", "--store", "file")
            asked = parties.request(web01, "bob").json()
            refused = approve(w, "--user", "bob", feed=scan_commands("finger-B"))
            assert refused.returncode == 1, refused.stdout + refused.stderr
            assert outcome(refused) == "refused by the authenticator: policy_denied (403)"
            assert parties.state(web01, asked["id"]).json()["status"] == "pending"
        finally:
            w.close()
