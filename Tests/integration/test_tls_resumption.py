"""TLS session resumption across logins: every login is a new helper process and a new TLS
connection, so the helper keeps the session ticket fingerauthd gave the last login in a
root-only file (<state_dir>/tls/<hash of the URL>.session) and the next login resumes with
it — a handshake without a certificate signature on either side. fingerauthd counts each
connection's handshake in /metrics (`fingerauthd_tls_handshakes_total{kind=...}`), which
is how these tests tell a resumed login from a full one.

Abuse cases: a ticket file with the wrong mode or owner, or in a directory open to others,
is ignored (and the login still succeeds, with a full handshake); a ticket saved for another
URL or under another CA file or pin is not offered; a restarted fingerauthd (a new ticket
key) makes the helper fall back to a full handshake; the pin still holds for a resumed
session; nothing of the ticket reaches a log."""

import base64
import hashlib
import os
import re
import shutil
import subprocess

from support.authd import Authd
from support.world import AUDIENCE


def handshakes(world):
    """fingerauthd's (full, resumed) handshake counts, this request's own (full) one included."""
    text = world.authd.request("GET", "/metrics").body.decode()
    full = re.search(r'^fingerauthd_tls_handshakes_total\{kind="full"\} (\d+)$', text, re.M)
    resumed = re.search(r'^fingerauthd_tls_handshakes_total\{kind="resumed"\} (\d+)$', text, re.M)
    assert full and resumed, text
    return int(full.group(1)), int(resumed.group(1))


def login_counting(world, user="alice"):
    """One finger login; (PAM result name, full handshakes, resumed handshakes) it caused."""
    full0, resumed0 = handshakes(world)
    login = world.login(user, scans=("finger-A",))
    full1, resumed1 = handshakes(world)
    return login.name, full1 - full0 - 1, resumed1 - resumed0


def ticket_files(world):
    directory = world.state / "tls"
    return sorted(directory.glob("*.session")) if directory.exists() else []


def url_file(world, url):
    return world.state / "tls" / (hashlib.sha256(url.encode()).hexdigest()[:32] + ".session")


def test_the_second_login_resumes_the_first_logins_session_from_a_root_only_file(world):
    world.enroll("alice", "finger-A")
    assert login_counting(world) == ("PAM_SUCCESS", 1, 0)
    files = ticket_files(world)
    assert files == [url_file(world, world.settings["url"])], files
    info, directory = os.stat(files[0]), os.stat(world.state / "tls")
    assert (info.st_uid, oct(info.st_mode & 0o7777)) == (0, "0o600")
    assert (directory.st_uid, oct(directory.st_mode & 0o7777)) == (0, "0o700")
    assert files[0].read_bytes().startswith(b"fingerauth-tls-session 1 ")
    assert login_counting(world) == ("PAM_SUCCESS", 0, 1)
    assert login_counting(world) == ("PAM_SUCCESS", 0, 1)


def test_a_ticket_file_with_a_wrong_mode_or_owner_or_an_open_directory_is_not_used(world):
    world.enroll("alice", "finger-A")
    assert login_counting(world)[0] == "PAM_SUCCESS"
    path = ticket_files(world)[0]
    os.chmod(path, 0o640)
    assert login_counting(world) == ("PAM_SUCCESS", 1, 0)
    # replaced by that login's own ticket, root-only again
    assert oct(os.stat(path).st_mode & 0o7777) == "0o600"
    assert login_counting(world) == ("PAM_SUCCESS", 0, 1)
    os.chown(path, 5001, 5001)  # alice's
    assert login_counting(world) == ("PAM_SUCCESS", 1, 0)
    os.chmod(world.state / "tls", 0o755)
    saved = path.read_bytes()
    assert login_counting(world) == ("PAM_SUCCESS", 1, 0)
    # a directory open to others is neither read nor written (nor repaired)
    assert path.read_bytes() == saved
    assert oct(os.stat(world.state / "tls").st_mode & 0o7777) == "0o755"


def test_a_ticket_saved_for_another_url_is_not_offered(world):
    world.enroll("alice", "finger-A")
    assert login_counting(world)[0] == "PAM_SUCCESS"
    saved = ticket_files(world)[0]
    other = "https://localhost:%d/v1/login" % world.authd.port  # the same server, another URL
    os.rename(saved, url_file(world, other))
    world.write_conf(url=other)
    assert login_counting(world) == ("PAM_SUCCESS", 1, 0)
    assert login_counting(world) == ("PAM_SUCCESS", 0, 1)


def test_a_ticket_saved_under_another_ca_file_or_pin_is_not_offered(world):
    world.enroll("alice", "finger-A")
    assert login_counting(world)[0] == "PAM_SUCCESS"
    # the same CA, in a file whose bytes differ: what the host trusts changed
    copy = world.tmp / "ca-copy.pem"
    copy.write_text(open(world.ca.ca_cert).read() + "\n")
    world.write_conf(cafile=str(copy))
    assert login_counting(world) == ("PAM_SUCCESS", 1, 0)
    assert login_counting(world) == ("PAM_SUCCESS", 0, 1)
    world.write_conf(pinned_pubkey=spki_pin(world.ca.server_cert))
    assert login_counting(world) == ("PAM_SUCCESS", 1, 0)
    assert login_counting(world) == ("PAM_SUCCESS", 0, 1)


def test_a_restarted_authenticator_voids_the_ticket_and_the_login_falls_back_to_a_full_handshake(world):
    world.enroll("alice", "finger-A")
    assert login_counting(world)[0] == "PAM_SUCCESS"
    port = world.authd.port
    world.authd.stop()
    world.authd = Authd(str(world.tmp / "authd"), audience=AUDIENCE, tls=world.ca, listen="127.0.0.1:%d" % port)
    world.authd.start()
    assert login_counting(world) == ("PAM_SUCCESS", 1, 0)
    assert login_counting(world) == ("PAM_SUCCESS", 0, 1)


def test_without_session_tickets_every_login_makes_a_full_handshake(world):
    world.enroll("alice", "finger-A")
    port = world.authd.port
    world.authd.stop()
    world.authd = Authd(str(world.tmp / "authd"), audience=AUDIENCE, tls=world.ca, listen="127.0.0.1:%d" % port,
                        args=("--session-tickets", "0"))
    world.authd.start()
    assert login_counting(world) == ("PAM_SUCCESS", 1, 0)
    assert login_counting(world) == ("PAM_SUCCESS", 1, 0)
    assert ticket_files(world) == []


def spki_pin(cert_path):
    der = subprocess.run(["openssl", "x509", "-in", cert_path, "-pubkey", "-noout"], capture_output=True, check=True)
    spki = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "DER"], input=der.stdout, capture_output=True,
                          check=True).stdout
    return "sha256//" + base64.b64encode(hashlib.sha256(spki).digest()).decode()


def test_the_pin_holds_for_resumed_sessions_and_accepts_a_hash_list_or_a_key_file(world):
    world.enroll("alice", "finger-A")
    other = "sha256//" + base64.b64encode(b"\x01" * 32).decode()
    world.write_conf(pinned_pubkey=other + ";" + spki_pin(world.ca.server_cert))
    assert login_counting(world) == ("PAM_SUCCESS", 1, 0)
    assert login_counting(world) == ("PAM_SUCCESS", 0, 1)
    key_file = world.tmp / "server-pub.pem"
    key_file.write_bytes(subprocess.run(["openssl", "x509", "-in", world.ca.server_cert, "-pubkey", "-noout"],
                                        capture_output=True, check=True).stdout)
    world.write_conf(pinned_pubkey=str(key_file))
    assert login_counting(world)[0] == "PAM_SUCCESS"
    # a ticket saved under the right pin, offered under a wrong one by a file moved in place:
    # a resumed session's certificate is checked against the pin all the same
    saved = url_file(world, world.settings["url"]).read_bytes()
    world.write_conf(pinned_pubkey=other)
    header, _, der = saved.partition(b"\n")
    fields = header.split(b" ")
    fields[3] = hashlib.sha256(b"pin:" + other.encode() + b"\nca:" + open(world.ca.ca_cert, "rb").read()
                               ).hexdigest().encode()
    url_file(world, world.settings["url"]).write_bytes(b" ".join(fields) + b"\n" + der)
    login = world.login("alice", password="alice-password")
    assert login.name == "PAM_SUCCESS"  # the password, after the finger path gave up
    line = [entry for entry in world.log_lines() if "result=" in entry][-1]
    assert "TLS failure" in line and "not the pinned one" in line, line


def test_nothing_of_the_ticket_reaches_a_log(world):
    world.enroll("alice", "finger-A")
    for _ in range(2):
        assert login_counting(world)[0] == "PAM_SUCCESS"
    der = ticket_files(world)[0].read_bytes().partition(b"\n")[2]
    assert len(der) > 64
    logs = (world.module_log.read_text() + world.authd.log_text()).encode()
    for chunk in (der[i:i + 16] for i in range(0, len(der) - 16, 16)):
        for form in (chunk.hex().encode(), base64.b64encode(chunk)[:20], chunk):
            assert form not in logs


def test_drafts_of_helpers_that_died_mid_save_are_removed_and_a_live_ones_kept(world):
    world.enroll("alice", "finger-A")
    assert login_counting(world)[0] == "PAM_SUCCESS"
    saved = ticket_files(world)[0]
    dead = saved.parent / (saved.name + ".tmp.999999.1")
    live = saved.parent / (saved.name + ".tmp.%d.1" % os.getpid())
    other = saved.parent / "notes.txt.tmp.999999.1"
    for path in (dead, live, other):
        path.write_bytes(b"draft")
        os.chmod(path, 0o600)
    # a newer ticket comes with every full handshake: a restarted fingerauthd gives one
    port = world.authd.port
    world.authd.stop()
    world.authd = Authd(str(world.tmp / "authd"), audience=AUDIENCE, tls=world.ca, listen="127.0.0.1:%d" % port)
    world.authd.start()
    assert login_counting(world) == ("PAM_SUCCESS", 1, 0)
    assert not dead.exists()
    assert live.exists() and other.exists()


def openssl_session(world, version, tmp):
    """The session `openssl s_client -<version>` saves after one request (`-sess_out`), as
    `openssl sess_id -text` prints it."""
    path = tmp / ("session-" + version)
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    done = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % world.authd.port, "-" + version,
                           "-CAfile", world.ca.ca_cert, "-sess_out", str(path), "-ign_eof", "-quiet"],
                          input=request, capture_output=True, timeout=30)
    assert b'"ok":true' in done.stdout, done
    shown = subprocess.run(["openssl", "sess_id", "-in", str(path), "-text", "-noout"], capture_output=True,
                           text=True, timeout=30)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def test_session_tickets_are_issued_for_tls_1_3_only(world, tmp_path):
    """A TLS 1.2 ticket would be sealed by the process's ticket key for as long as it runs,
    and a 1.2 resumption has no fresh key exchange: the docs promise TLS 1.3 tickets only."""
    tls13 = openssl_session(world, "tls1_3", tmp_path)
    assert "TLSv1.3" in tls13 and "TLS session ticket:" in tls13, tls13
    tls12 = openssl_session(world, "tls1_2", tmp_path)
    assert "TLSv1.2" in tls12 and "TLS session ticket:" not in tls12, tls12
