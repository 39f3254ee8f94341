"""The authenticator is reached before anyone is asked for a finger: when it cannot be
(a refused port, a certificate from another CA, a name that never resolves) or the device
key cannot sign, the person sees the failure line and then the password prompt — never
"Place your finger…" first. And the plain-HTTP rule: only to a loopback port below the
kernel's net.ipv4.ip_unprivileged_port_start."""

import http.server
import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest

from support.authd import Authd
from support.fakeauth import FakeAuthenticator, TLSServer, accept_as, closed_port_url
from support.tls import make_ca
from support.world import AUDIENCE, HOST_ID, Login

PLACE = "Place your finger on the fingerprint reader"
UNREACHABLE = "Fingerprint login unavailable: authenticator not reachable"
UNAVAILABLE = "Fingerprint login unavailable"
CAPTURE = os.path.join(os.path.dirname(__file__), "support", "syslog_capture.py")
DNS_NAME = "auth.fa-test.example"


def namespaces_work():
    return subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode == 0


needs_namespaces = pytest.mark.skipif(not namespaces_work(), reason="mount namespaces are not allowed here")


# -- helpers ---------------------------------------------------------------------------


def private_helper(world):
    """A copy of fingerauth-login under this test's own folder (root, 0755), so that
    `pgrep -f` finds this test's helpers only and not those of anybody else's run."""
    directory = world.tmp / "libexec"
    directory.mkdir(mode=0o755)
    path = directory / "fingerauth-login"
    shutil.copy2(world.build / "fingerauth-login", path)
    os.chmod(path, 0o755)
    world.write_conf(login_helper=str(path))
    return str(path)


def helpers_left(path, grace=3.0):
    """Processes whose command line names `path`, after up to `grace` s for reaping."""
    deadline = time.monotonic() + grace
    while True:
        done = subprocess.run(["pgrep", "-a", "-f", path], capture_output=True, text=True)
        left = done.stdout.splitlines()
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


def reader_listening(world):
    """True when something still listens on the virtual reader's socket."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)
        try:
            sock.connect(world.reader.path)
        except (ConnectionRefusedError, FileNotFoundError):
            return False
        return True


def shown(login):
    """What the person saw, in order, as (kind, text); the RESULT line left out."""
    lines = []
    for line in login.stdout.splitlines():
        kind, _, text = line.partition(" ")
        if kind in ("INFO", "ERROR", "PROMPT"):
            lines.append((kind, text))
    return lines


def assert_password_came_without_a_finger(login, failure):
    """`failure`, then the password prompt, then success with the password; no request
    for a finger anywhere, least of all before the failure line."""
    seen = shown(login)
    failure_at = seen.index(("ERROR", failure)) if ("ERROR", failure) in seen else len(seen)
    assert ("INFO", PLACE) not in seen[:failure_at], seen
    assert ("INFO", PLACE) not in seen, seen
    assert seen == [("ERROR", failure), ("PROMPT", "Password: ")], seen
    assert login.name == "PAM_SUCCESS", login


def outcome_line(world):
    """The module's one line for the last attempt (debug steps left out)."""
    lines = [line for line in world.log_lines() if " result=" in line and "debug:" not in line]
    assert lines, world.log_lines()
    return lines[-1]


def helper_steps(world):
    return [line for line in world.log_lines() if "debug: login helper: " in line]


def assert_failed_before_ready(world, reason):
    """The module's line names the reason; the helper said FAIL unreachable and never
    READY; the reader is not left open; no helper is left running."""
    line = outcome_line(world)
    assert "result=PAM_AUTHINFO_UNAVAIL" in line and reason in line, line
    steps = helper_steps(world)
    assert any("login helper: FAIL unreachable " in s for s in steps), steps
    assert not any("login helper: READY" in s for s in steps), steps
    assert not reader_listening(world), "the virtual reader is still open after the login"
    assert helpers_left(world.settings["login_helper"]) == []


# -- 1. refused connection, TLS failure ---------------------------------------------------


def test_refused_connection_gives_the_password_prompt_without_asking_for_a_finger(world):
    private_helper(world)
    world.enroll("alice", "finger-A")
    world.write_conf(url=closed_port_url() + "/v1/login")
    login = world.login("alice", password="alice-password")
    assert_password_came_without_a_finger(login, UNREACHABLE)
    assert_failed_before_ready(world, "cannot connect to the authenticator")


def test_certificate_from_another_ca_gives_the_password_prompt_without_asking_for_a_finger(world, tmp_path):
    private_helper(world)
    world.enroll("alice", "finger-A")
    other = make_ca(str(tmp_path / "other-ca"))
    with FakeAuthenticator(other.server_cert, other.server_key, accept_as()) as fake:
        world.write_conf(url=fake.url + "/v1/login")
        login = world.login("alice", password="alice-password")
    assert fake.requests == 0
    assert_password_came_without_a_finger(login, UNREACHABLE)
    assert_failed_before_ready(world, "TLS failure")


# -- 2. a name that never resolves ------------------------------------------------------------


def dns_question(packet):
    """The QNAME of a DNS query (b'\\x04auth...' after the 12-byte header), or None."""
    labels, at = [], 12
    try:
        while packet[at]:
            length = packet[at]
            labels.append(packet[at + 1:at + 1 + length].decode("ascii", "replace"))
            at += 1 + length
    except IndexError:
        return None
    return ".".join(labels)


class SilentDNS:
    """A name server on a loopback address, port 53, UDP and TCP: it reads every query
    and never answers."""

    def __init__(self):
        self.queries = []
        self.tcp_connections = []
        self.udp = self.tcp = None
        for last in range(153, 254):
            address = "127.0.0.%d" % last
            udp, tcp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM), socket.socket()
            try:
                tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                udp.bind((address, 53))
                tcp.bind((address, 53))
                tcp.listen(8)
            except OSError:
                udp.close()
                tcp.close()
                continue
            self.address, self.udp, self.tcp = address, udp, tcp
            break
        if self.udp is None:
            raise RuntimeError("no free loopback address for port 53")
        self._stop = False
        self._threads = [threading.Thread(target=self._read_udp, daemon=True),
                         threading.Thread(target=self._accept_tcp, daemon=True)]

    def _read_udp(self):
        self.udp.settimeout(0.2)
        while not self._stop:
            try:
                packet, _ = self.udp.recvfrom(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            self.queries.append(("udp", dns_question(packet)))

    def _accept_tcp(self):
        self.tcp.settimeout(0.2)
        while not self._stop:
            try:
                connection, _ = self.tcp.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.tcp_connections.append(connection)  # held open, never answered
            connection.settimeout(0.5)
            try:
                packet = connection.recv(4096)
                self.queries.append(("tcp", dns_question(packet[2:])))
            except OSError:
                pass

    def __enter__(self):
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self._stop = True
        for thread in self._threads:
            thread.join(5)
        for s in [self.udp, self.tcp] + self.tcp_connections:
            s.close()


def in_private_resolver(world, nameserver, command):
    """`command` in a private mount namespace whose resolv.conf names only `nameserver`,
    whose hosts file knows only localhost and whose nsswitch says `hosts: files dns`."""
    etc = world.tmp / "etc"
    etc.mkdir()
    (etc / "resolv.conf").write_text("nameserver %s\n" % nameserver)
    (etc / "hosts").write_text("127.0.0.1 localhost\n")
    nsswitch = open("/etc/nsswitch.conf").read()
    nsswitch = re.sub(r"(?m)^hosts:.*$", "hosts: files dns", nsswitch)
    if not re.search(r"(?m)^hosts:", nsswitch):
        nsswitch += "hosts: files dns\n"
    (etc / "nsswitch.conf").write_text(nsswitch)
    for name in ("resolv.conf", "hosts", "nsswitch.conf"):
        os.chmod(etc / name, 0o644)
    script = ('mount --bind "$1/resolv.conf" /etc/resolv.conf && mount --bind "$1/hosts" /etc/hosts && '
              'mount --bind "$1/nsswitch.conf" /etc/nsswitch.conf && shift && exec "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(etc)] + command


def login_with_a_silent_name_server(world):
    """alice's login through the module and the password, to https://auth.fa-test.example
    whose name server never answers. Returns (login, wall seconds, queries the server got)."""
    world.enroll("alice", "finger-A")
    port = world.authd.port  # a real authenticator listens there; the name never gets it that far
    world.write_conf(url="https://%s:%d/v1/login" % (DNS_NAME, port))
    service = world.service("fa-test")
    with SilentDNS() as dns:
        cmd = in_private_resolver(world, dns.address, [
            str(world.build / "fa-pamtest"), "--timing", "--confdir", str(world.confdir), "--service", service,
            "--user", "alice", "--password", "alice-password"])
        started = time.monotonic()
        done = subprocess.run(cmd, env=world.env, capture_output=True, text=True, timeout=60)
        wall = time.monotonic() - started
        queries = list(dns.queries)
    assert "RESULT" in done.stdout, done.stdout + done.stderr
    login = Login(done.stdout)
    print("DNS never answers: pam_authenticate %.3f s, whole command %.3f s, queries %r; %s"
          % (login.seconds, wall, queries, outcome_line(world)))
    # The test reached the silent server: the helper really asked it for the name.
    assert DNS_NAME in [name for _, name in queries], queries
    return login, wall, queries


@needs_namespaces
def test_name_that_never_resolves_falls_over_within_the_connect_bound(world, record_property):
    helper = private_helper(world)
    login, wall, _ = login_with_a_silent_name_server(world)
    record_property("pam_authenticate_seconds", login.seconds)
    assert_password_came_without_a_finger(login, UNREACHABLE)
    # The connect bound (2 s) plus a generous margin.
    assert login.seconds < 4.5, login.seconds
    line = outcome_line(world)
    assert "result=PAM_AUTHINFO_UNAVAIL" in line, line
    steps = helper_steps(world)
    assert any("login helper: FAIL unreachable " in s for s in steps), steps
    assert not any("login helper: READY" in s for s in steps), steps
    assert helpers_left(helper) == []
    assert not [r for r in world.authd.audit_rows() if r.get("event") == "login"]


@needs_namespaces
def test_name_resolution_is_cut_by_the_clients_connect_bound(world):
    # The 2 s connect bound is meant to cover DNS too: the reason must be the HTTP client's
    # own "the name … was not resolved within 2000 ms", not the helper's 3.5 s backstop
    # ("authenticator did not answer within 3500 ms"), which only fires when the client
    # overran its bounds (a lookup that waited for glibc's own timeouts, 10 s here).
    helper = private_helper(world)
    login_with_a_silent_name_server(world)
    line = outcome_line(world)
    assert "result=PAM_AUTHINFO_UNAVAIL" in line, line
    assert "was not resolved within" in line and "did not answer within" not in line, line
    assert helpers_left(helper) == []


# -- 3. an encrypted device key, on a terminal --------------------------------------------


def on_terminal(argv, env, timeout, stop_on=None):
    """Runs `argv` with a new pseudo-terminal as its controlling terminal and as its
    standard input, output and error. Returns (transcript, hung): everything written to
    the terminal, and whether it had to be killed at `timeout` (or on `stop_on`)."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    transcript, hung = b"", False
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                hung = True
                break
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the other side is closed
                break
            if not chunk:
                break
            transcript += chunk
            if stop_on is not None and stop_on in transcript.lower():
                hung = True
                break
    finally:
        if hung:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    return transcript.decode("utf-8", "replace").replace("\r\n", "\n"), hung


def test_encrypted_device_key_fails_without_a_passphrase_prompt(world):
    helper = private_helper(world)
    world.enroll("alice", "finger-A")
    _, _, key = world.paths("alice")
    encrypted = world.tmp / "encrypted.key"
    subprocess.run(["openssl", "pkcs8", "-topk8", "-v2", "aes-256-cbc", "-passout", "pass:x", "-in", str(key),
                    "-out", str(encrypted)], check=True, capture_output=True, timeout=60)
    assert encrypted.read_text().startswith("-----BEGIN ENCRYPTED PRIVATE KEY-----")
    key.write_bytes(encrypted.read_bytes())
    os.chown(key, 0, 0)
    os.chmod(key, 0o600)

    # The terminal works and sees a pass-phrase prompt when there is one: OpenSSL's own
    # command asks on it (and would wait forever), so the checks below can fail.
    control, waited = on_terminal(["/usr/bin/openssl", "pkey", "-in", str(key), "-noout"], world.env, timeout=15,
                                  stop_on=b"pass phrase")
    assert waited and "pass phrase" in control.lower(), control

    pamtest = [str(world.build / "fa-pamtest"), "--timing", "--confdir", str(world.confdir), "--user", "alice"]
    alone, hung = on_terminal(pamtest + ["--service", world.service("fa-only", fallback=False)], world.env, timeout=20)
    assert not hung, alone
    for text in ("pass phrase", "passphrase", "enter pem"):
        assert text not in alone.lower(), alone
    login = Login(alone)
    assert login.name == "PAM_AUTHINFO_UNAVAIL", alone
    assert shown(login) == [("ERROR", UNAVAILABLE)], alone
    line = outcome_line(world)
    assert "result=PAM_AUTHINFO_UNAVAIL" in line and "device key" in line and str(key) in line, line
    assert "encrypted" in line or "not a usable RSA private key" in line, line

    fallback, hung = on_terminal(pamtest + ["--service", world.service("fa-test"), "--password", "alice-password"],
                                 world.env, timeout=20)
    assert not hung, fallback
    assert "pass phrase" not in fallback.lower() and "passphrase" not in fallback.lower(), fallback
    login = Login(fallback)
    assert shown(login) == [("ERROR", UNAVAILABLE), ("PROMPT", "Password: ")], fallback
    assert login.name == "PAM_SUCCESS", fallback
    assert "result=PAM_AUTHINFO_UNAVAIL" in outcome_line(world)
    assert helpers_left(helper) == []


# -- 4. allow_http: only to a privileged loopback port ---------------------------------------


def unprivileged_port_start():
    with open("/proc/sys/net/ipv4/ip_unprivileged_port_start") as f:
        return int(f.read().strip())


class PlainHTTP(TLSServer):
    """A plain-HTTP server on a loopback port that says yes to everything and counts every
    request it gets."""

    def __init__(self, port=0):
        self.requests = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _any(self):
                outer.requests += 1
                body = json.dumps({"ok": True}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _any

            def log_message(self, *args):
                pass

        TLSServer.__init__(self, Handler, None, None, port=port)


def login_with_syslog(world, service):
    cmd = ["unshare", "--mount", "--propagation", "private", "/usr/bin/python3", CAPTURE, "--",
           str(world.build / "fa-pamtest"), "--confdir", str(world.confdir), "--service", service, "--user", "alice"]
    done = subprocess.run(cmd, env=world.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "RESULT" in report["stdout"], report
    return Login(report["stdout"]), [m for m in report["syslog"] if "pam_fingerauth" in m]


@needs_namespaces
def test_plain_http_to_an_unprivileged_loopback_port_is_a_configuration_error(world):
    start = unprivileged_port_start()
    world.enroll("alice", "finger-A")
    # Anybody could listen on a port from `start` up: here a stand-in that would say yes.
    with PlainHTTP() as impostor:
        assert impostor.port >= start, (impostor.port, start)
        url = "http://127.0.0.1:%d/v1/login" % impostor.port
        world.write_conf(url=url, allow_http="yes")
        login, syslog = login_with_syslog(world, world.service("fa-only", fallback=False))
        fallback = world.login("alice", password="alice-password")
    assert login.name == "PAM_SERVICE_ERR", login
    assert shown(login) == [], login
    assert len(syslog) == 1, syslog
    text = syslog[0]
    for part in ("configuration error", ": url: ", "http://", "loopback port", "below %d" % start):
        assert part in text, text
    assert impostor.requests == 0
    assert fallback.name == "PAM_SUCCESS" and shown(fallback) == [("PROMPT", "Password: ")], fallback


def privileged_authd(workdir, start):
    """fingerauthd over plain HTTP on a free loopback port below `start` (root only)."""
    errors = []
    for port in range(600, min(start, 1000)):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        authd = Authd(os.path.join(workdir, "authd-%d" % port), audience=AUDIENCE, listen="127.0.0.1:%d" % port)
        try:
            authd.start()
            return authd
        except RuntimeError as error:
            authd.stop()
            errors.append(str(error))
    pytest.fail("no privileged loopback port for fingerauthd: %s" % errors[-3:])


def test_plain_http_to_a_privileged_loopback_port_logs_in(world):
    start = unprivileged_port_start()
    if start <= 600:
        pytest.skip("net.ipv4.ip_unprivileged_port_start is %d: no privileged port from 600 up" % start)
    authd = privileged_authd(str(world.tmp), start)
    try:
        assert authd.url.startswith("http://127.0.0.1:") and authd.port < start, authd.url
        world.token_path.write_text(authd.create_token(HOST_ID) + "\n")
        world.write_conf(url=authd.url + "/v1/login", allow_http="yes", cafile=None)
        world.enroll("alice", "finger-A")
        kid = world.kid("alice")
        login = world.login("alice", scans=["finger-A"], service=world.service("fa-only", fallback=False))
        rows = [r for r in authd.audit_rows() if r.get("event") == "login"]
    finally:
        authd.stop()
    assert login.name == "PAM_SUCCESS", login
    assert shown(login) == [("INFO", PLACE)], login
    line = outcome_line(world)
    assert "result=PAM_SUCCESS" in line and "kid=" + kid in line, line
    assert [(r["user"], r["kid"], r["outcome"]) for r in rows] == [("alice", kid, "accept")], rows
    # The world's own TLS authenticator was not the one that answered.
    assert not [r for r in world.authd.audit_rows() if r.get("event") == "login"]
