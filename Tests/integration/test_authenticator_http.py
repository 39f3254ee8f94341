"""fingerauthd's HTTP layer, attacked over real TLS on loopback: the request-head deadline
(slowloris from four addresses, silent and half-sent TLS handshakes, keep-alive that
idles or drips), the login helper's warm connection across that deadline, the TLS policy
(TLS 1.3; TLS 1.2 with ECDHE and AEAD only) and the certificate reload on SIGHUP.

Times are asserted from the client's side: a connection must close at the head deadline,
not at the idle timeout, which every test sets far apart from it.
"""

import asyncio
import os
import random
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.authd import Authd, build_dir  # noqa: E402
from support.tls import TestCA  # noqa: E402

pytestmark = pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauthd"), os.X_OK),
                                reason="no fingerauthd in %s" % build_dir())

HEAD_TIMEOUT = 3.0
# Far from HEAD_TIMEOUT, so that a close at the idle timeout cannot pass for the deadline.
IDLE_TIMEOUT = "20"
# The watchdog looks every 0.1 s; the client needs a moment to see the close.
LATE = 1.0
SOURCES = ("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5")


def head_deadline_server(tmp_path, ca, *extra):
    return Authd(tmp_path, tls=ca, args=("--head-timeout", "%d" % HEAD_TIMEOUT,
                                         "--connection-timeout", IDLE_TIMEOUT, *extra))


def closed_after(sock, started, limit=15.0):
    """Seconds from `started` until the server closed `sock` (EOF or reset)."""
    sock.settimeout(0.05)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            if sock.recv(4096) == b"":
                return time.monotonic() - started
        except (socket.timeout, ssl.SSLWantReadError):
            continue
        except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
            return time.monotonic() - started
    raise AssertionError("still open after %.1f s" % limit)


def slow_client_lines(authd):
    return [line for line in authd.log_text().splitlines() if "slow client" in line]


def wait_for_slow_client_line(authd, text, timeout=2.0):
    """The log line is written just after the cut, by the same thread: allow it a moment."""
    deadline = time.monotonic() + timeout
    while not any(text in line for line in slow_client_lines(authd)):
        assert time.monotonic() < deadline, authd.log_text()
        time.sleep(0.02)


# -- the request-head deadline ---------------------------------------------------------------

async def _drip(address, port, context, stop_at, lifetimes, answered, refused):
    """One connection slot from `address`: connect over TLS, drip a header byte every 1-2 s,
    reconnect when the server closes; each close is recorded with the connection's age
    from the connect call (the server counts from its accept, which is later) and from the
    end of the handshake (which is after the accept)."""
    head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Drip: " + b"a" * 2000
    while time.monotonic() < stop_at:
        started = time.monotonic()
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(
                "127.0.0.1", port, ssl=context, server_hostname="127.0.0.1", local_addr=(address, 0)), 10)
        except (OSError, asyncio.TimeoutError, ssl.SSLError):
            refused.append(address)  # the per-address cap, while the previous one is cleaned up
            await asyncio.sleep(0.2)
            continue
        connected = time.monotonic()
        sent = 0
        try:
            while time.monotonic() < stop_at:
                writer.write(head[sent:sent + 1])
                sent += 1
                await writer.drain()
                try:
                    data = await asyncio.wait_for(reader.read(4096), random.uniform(1.0, 2.0))
                except asyncio.TimeoutError:
                    continue
                if data:
                    answered.append(data)
                else:
                    now = time.monotonic()
                    lifetimes.append((address, now - started, now - connected))
                break
        except (OSError, ssl.SSLError):
            now = time.monotonic()
            lifetimes.append((address, now - started, now - connected))
        finally:
            writer.close()


def _poll_healthz(authd, stop_at, polls):
    while time.monotonic() < stop_at:
        asked = time.monotonic()
        try:
            status = authd.request("GET", "/healthz", timeout=2).status
        except OSError as error:
            status = repr(error)
        polls.append((status, time.monotonic() - asked))
        time.sleep(max(0.0, 0.5 - (time.monotonic() - asked)))


def test_slowloris_from_four_addresses_is_cut_at_the_head_deadline_and_healthz_keeps_answering(tmp_path, ca):
    """4 addresses x 64 connections (the per-address default) drip their heads; the
    defaults leave the global cap above them. Every connection is closed at the head
    deadline (not at the idle timeout), and /healthz from 127.0.0.1 is answered within
    2 s throughout, over several deadlines."""
    for address in SOURCES:
        socket.create_server((address, 0)).close()  # the whole of 127/8 is loopback on Linux
    with head_deadline_server(tmp_path, ca) as authd:
        context = ca.ssl_context()
        lifetimes, answered, refused, polls = [], [], [], []
        stop_at = time.monotonic() + 3.5 * HEAD_TIMEOUT
        poller = threading.Thread(target=_poll_healthz, args=(authd, stop_at, polls))
        poller.start()

        async def attack():
            await asyncio.gather(*(_drip(address, authd.port, context, stop_at, lifetimes, answered, refused)
                                   for address in SOURCES for _ in range(64)))

        asyncio.run(attack())
        poller.join()

        assert answered == []
        # Each slot was cut at least twice (3.5 deadlines long), never at the idle timeout.
        assert len(lifetimes) >= 2 * 4 * 64, (len(lifetimes), len(refused))
        for address in SOURCES:
            assert sum(1 for a, _, _ in lifetimes if a == address) >= 2 * 64, address
        assert min(age for _, age, _ in lifetimes) >= HEAD_TIMEOUT - 0.05
        # Measured from the handshake's end, a connection that waited in the accept queue
        # of a loaded machine does not count that wait against the server.
        ages = sorted(age for _, _, age in lifetimes)
        assert ages[-1] <= HEAD_TIMEOUT + LATE, ages[-5:]
        assert ages[len(ages) // 2] <= HEAD_TIMEOUT + 0.5
        # /healthz: answered every time, each within 2 s.
        assert len(polls) >= 15
        assert all(status == 200 for status, _ in polls), polls
        assert max(latency for _, latency in polls) < 2.0, polls
        # The log names every address, aggregated: at most a line or so a second.
        lines = slow_client_lines(authd)
        for address in SOURCES:
            assert any(address in line for line in lines), address
        assert "request head not complete after 3 s" in lines[0]
        assert len(lines) <= 3.5 * HEAD_TIMEOUT + 3, len(lines)
        assert authd.request("GET", "/healthz").status == 200


def _client_hello():
    """The first bytes a TLS client sends (a real ClientHello), from a memory BIO."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def test_a_silent_or_half_sent_tls_handshake_is_cut_at_the_head_deadline(tmp_path, ca):
    with head_deadline_server(tmp_path, ca) as authd:
        silent = socket.create_connection(("127.0.0.1", authd.port))
        silent_started = time.monotonic()
        half = socket.create_connection(("127.0.0.1", authd.port))
        half_started = time.monotonic()
        hello = _client_hello()
        half.sendall(hello[:len(hello) // 2])
        try:
            for sock, started in ((silent, silent_started), (half, half_started)):
                assert HEAD_TIMEOUT - 0.05 <= closed_after(sock, started) <= HEAD_TIMEOUT + LATE
        finally:
            silent.close()
            half.close()
        wait_for_slow_client_line(authd, "slow client 127.0.0.1: request head not complete after 3 s; "
                                         "connection closed")


def cpu_seconds(pid):
    """User + system CPU time of process `pid` so far (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stalled_handshakes(port):
    """Four connections that stop at each point a TLS handshake can wait for the client:
    before any byte, inside the ClientHello, after it, and after reading the server's
    flight without answering it. Returns the sockets (the caller closes them)."""
    silent = socket.create_connection(("127.0.0.1", port))
    hello = _client_hello()
    half = socket.create_connection(("127.0.0.1", port))
    half.sendall(hello[:len(hello) // 2])
    whole = socket.create_connection(("127.0.0.1", port))
    whole.sendall(hello)
    answered = socket.create_connection(("127.0.0.1", port))
    answered.sendall(_client_hello())
    answered.settimeout(5)
    assert answered.recv(65536)  # the server's flight; the client never sends its own
    return [silent, half, whole, answered]


def test_a_client_that_stops_mid_handshake_costs_the_server_no_cpu_while_it_waits(tmp_path, ca):
    # libmicrohttpd's epoll loop spun on such a connection: one core at 100% until the head
    # timeout, for each stalled client (fingerauthd now runs its poll loop).
    with Authd(tmp_path, tls=ca, args=("--head-timeout", "30")) as authd:
        sockets = stalled_handshakes(authd.port)
        try:
            time.sleep(0.3)
            before = cpu_seconds(authd.pid)
            time.sleep(2.0)
            spent = cpu_seconds(authd.pid) - before
            assert spent < 0.2, "fingerauthd used %.2f s of CPU in 2 s with 4 stalled handshakes" % spent
            assert authd.request("GET", "/healthz").status == 200
        finally:
            for sock in sockets:
                sock.close()


def test_an_openssl_client_gets_no_hello_retry_request(tmp_path, ca):
    # OpenSSL (the login helper's libcurl) sends an X25519 key share; a server preferring
    # P-256 answered with a HelloRetryRequest: a second ClientHello and round trip per login.
    with Authd(tmp_path, tls=ca) as authd:
        done = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % authd.port,
                               "-CAfile", authd.tls.ca_cert, "-verify_return_error", "-msg"],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
        hellos = re.findall(r"^>>> .*, ClientHello$", done.stdout, re.M)
        assert done.returncode == 0 and "Server Temp Key: X25519" in done.stdout, done.stdout[-2000:]
        assert len(hellos) == 1, "the client sent %d ClientHellos" % len(hellos)


def test_keep_alive_requests_pass_an_idle_one_closes_quietly_and_a_dripping_one_is_cut(tmp_path, ca):
    with head_deadline_server(tmp_path, ca) as authd:
        # Requests in a row, 1.5 s apart, on one connection: the deadline restarts after each.
        kept = authd.connection(timeout=5)
        try:
            kept.request("GET", "/healthz")
            first = kept.getresponse()
            assert first.status == 200 and first.read()
            sock = kept.sock
            for _ in range(2):
                time.sleep(HEAD_TIMEOUT / 2)
                kept.request("POST", "/v1/login", body=b'{"jwt":"x"}', headers={"Content-Type": "application/json"})
                answer = kept.getresponse()
                answer.read()
                assert answer.status == 401 and kept.sock is sock
            answered = time.monotonic()
            # Then idle: closed at the deadline after the last answer, without a log line.
            assert HEAD_TIMEOUT - 0.05 <= closed_after(sock, answered) <= HEAD_TIMEOUT + LATE
        finally:
            kept.close()
        time.sleep(0.5)  # a line, were one written, would be there by now
        assert slow_client_lines(authd) == []

        # One quick request, then a head dripped: cut at the deadline, and logged.
        dripping = authd.connection(timeout=5)
        try:
            dripping.request("GET", "/healthz")
            assert dripping.getresponse().read()
            answered = time.monotonic()
            sock = dripping.sock
            sock.settimeout(0.5)
            age = None
            for byte in b"GET /healthz HTTP/1.1\r\nX-Drip: aaaaaaaaaaaaaaaaaa":
                try:
                    sock.sendall(bytes([byte]))
                    if sock.recv(4096) == b"":
                        age = time.monotonic() - answered
                        break
                except (socket.timeout, ssl.SSLWantReadError):
                    continue
                except (OSError, ssl.SSLError):
                    age = time.monotonic() - answered
                    break
            assert age is not None and HEAD_TIMEOUT - 0.05 <= age <= HEAD_TIMEOUT + LATE, age
        finally:
            dripping.close()
        wait_for_slow_client_line(authd, "slow client 127.0.0.1: request head not complete after 3 s")
        time.sleep(0.5)
        assert len(slow_client_lines(authd)) == 1


class CountingForwarder:
    """A TCP forwarder in front of fingerauthd (TLS passes through it untouched) that
    records when each client connection opened and when the server closed it."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.opened = []
        self.server_closed = []
        self._sockets = []
        self._stop = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self):
        self.listener.settimeout(0.1)
        while not self._stop:
            try:
                client, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            self.opened.append(time.monotonic())
            self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, None), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, self.server_closed), daemon=True).start()

    @staticmethod
    def _pump(source, sink, closes):
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            if not data:
                if closes is not None:
                    closes.append(time.monotonic())
                try:
                    sink.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            try:
                sink.sendall(data)
            except OSError:
                return

    def close(self):
        self._stop = True
        self.listener.close()
        self._thread.join(2)
        for sock in self._sockets:
            sock.close()


def test_the_login_helper_reconnects_when_the_deadline_closed_its_warm_connection(world):
    """The helper opens its connection with a GET while the finger is awaited and POSTs on
    it after the match. A finger slower than the head deadline finds that connection
    closed: libcurl reconnects and the login succeeds."""
    from support.world import AUDIENCE
    world.authd.stop()
    world.authd = Authd(str(world.tmp / "authd"), audience=AUDIENCE, tls=world.ca,
                        args=("--head-timeout", "2", "--connection-timeout", IDLE_TIMEOUT))
    world.authd.start()
    forwarder = CountingForwarder(world.authd.port)
    try:
        world.write_conf(url="https://127.0.0.1:%d/v1/login" % forwarder.port)
        world.enroll("alice", "finger-A")
        before = len(forwarder.opened)

        world.reader.feed(["SCAN finger-A"], after=3.5)
        login = world.login("alice", service=world.service("fa-only", fallback=False))
        world.reader.wait()
        assert login.name == "PAM_SUCCESS", login
        opened = forwarder.opened[before:]
        closed = [t for t in forwarder.server_closed if t > opened[0]]
        # The warm connection, closed by the server about 2 s after the warm-up's answer,
        # and the one libcurl opened afterwards for the POST.
        assert len(opened) == 2, opened
        assert closed and closed[0] < opened[1]
        assert 1.9 <= closed[0] - opened[0] <= 2 + LATE
        rows = [r for r in world.authd.audit_rows() if r.get("event") == "login"]
        assert rows[-1]["outcome"] == "accept" and rows[-1]["user"] == "alice"
    finally:
        forwarder.close()


def limited(tmp_path, limit):
    """A wrapper that starts fingerauthd under `ulimit LIMIT` (a soft or hard open-file limit)."""
    path = tmp_path / "limited.sh"
    path.write_text('#!/bin/sh\nulimit %s\nexec %s "$@"\n' % (limit, os.path.join(build_dir(), "fingerauthd")))
    os.chmod(path, 0o755)
    return str(path)


def open_files(pid):
    with open("/proc/%d/limits" % pid) as f:
        soft, hard = re.search(r"^Max open files\s+(\d+)\s+(\d+)", f.read(), re.M).groups()
    return int(soft), int(hard)


def test_the_open_file_limit_is_raised_for_max_connections_or_the_shortfall_is_logged(tmp_path):
    authd = Authd(tmp_path / "soft")
    authd.binary = limited(tmp_path, "-Sn 256")  # soft 256 under a higher hard limit
    with authd:
        soft, hard = open_files(authd.pid)
        assert soft == min(hard, 1024 + 64 + 3 * 4), (soft, hard)  # connections, reserve, 4 workers
        assert "open-file limit" not in authd.log_text()
    authd = Authd(tmp_path / "hard", args=("--max-connections", "200"))
    authd.binary = limited(tmp_path, "-n 600")  # soft and hard 600
    with authd:
        assert open_files(authd.pid) == (600, 600)
        log = authd.log_text()
    assert "open-file limit" not in log
    assert "max-connections 200 is below 4 x max-connections-per-address 64" in log
    authd = Authd(tmp_path / "short")
    authd.binary = limited(tmp_path, "-n 600")
    with authd:
        assert "open-file limit 600 is below the 1100 that max-connections 1024 needs" in authd.log_text()


# -- TLS policy ------------------------------------------------------------------------------

def s_client(authd, *args):
    done = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % authd.port,
                           "-CAfile", authd.tls.ca_cert, "-verify_return_error", *args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
    cipher = re.search(r"Cipher is (\S+)", done.stdout)
    protocol = re.search(r"^New, (\S+),", done.stdout, re.M)
    return done.returncode, cipher.group(1) if cipher else None, protocol.group(1) if protocol else None


@pytest.mark.parametrize("args", [
    ("-tls1_2", "-cipher", "AES256-SHA256"),          # static RSA, CBC
    ("-tls1_2", "-cipher", "AES128-SHA"),             # static RSA, CBC (GnuTLS NORMAL allows it)
    ("-tls1_2", "-cipher", "AES128-GCM-SHA256"),      # static RSA, AEAD
    ("-tls1_2", "-cipher", "ECDHE-RSA-AES128-SHA"),   # ECDHE, CBC
])
def test_tls12_without_ecdhe_or_aead_is_refused(tmp_path, rsa_ca, args):
    # Static RSA key exchange needs an RSA certificate: with an EC one it could not be offered at all.
    with Authd(tmp_path, tls=rsa_ca) as authd:
        returncode, cipher, _ = s_client(authd, *args)
        assert returncode != 0 and cipher == "(NONE)"
        assert authd.request("GET", "/healthz").status == 200


def test_tls12_cbc_is_refused_with_an_ecdsa_certificate(tmp_path, ca):
    with Authd(tmp_path, tls=ca) as authd:
        returncode, cipher, _ = s_client(authd, "-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA")
        assert returncode != 0 and cipher == "(NONE)"
        assert s_client(authd, "-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256") == \
            (0, "ECDHE-ECDSA-AES128-GCM-SHA256", "TLSv1.2")


@pytest.mark.parametrize("key", ["RSA", "ECDSA"])
def test_tls13_and_tls12_ecdhe_aead_are_accepted(tmp_path, ca, rsa_ca, key):
    with Authd(tmp_path, tls=rsa_ca if key == "RSA" else ca) as authd:
        for cipher in ("ECDHE-%s-AES128-GCM-SHA256" % key, "ECDHE-%s-CHACHA20-POLY1305" % key):
            assert s_client(authd, "-tls1_2", "-cipher", cipher) == (0, cipher, "TLSv1.2")
        returncode, cipher, protocol = s_client(authd, "-tls1_3")
        assert (returncode, protocol) == (0, "TLSv1.3") and cipher.startswith("TLS_")


# -- handshake signatures: OpenSSL signs for an RSA key (HandshakeSigner) ------------------

def signature_of(authd, *args):
    """(exit code, signature type, hash) of a handshake as `openssl s_client -brief` saw it;
    the client checks the server's signature itself and fails the handshake otherwise."""
    done = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % authd.port, "-brief",
                           "-CAfile", authd.tls.ca_cert, "-verify_return_error", *args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
    kind = re.search(r"^Signature type: (\S+)", done.stderr, re.M)
    digest = re.search(r"^Hash used: (\S+)", done.stderr, re.M)
    return done.returncode, kind.group(1) if kind else None, digest.group(1) if digest else None


@pytest.mark.parametrize("args, expected", [
    (("-tls1_2", "-sigalgs", "RSA+SHA256"), ("RSA", "SHA256")),
    (("-tls1_2", "-sigalgs", "RSA+SHA384"), ("RSA", "SHA384")),
    (("-tls1_2", "-sigalgs", "RSA+SHA512"), ("RSA", "SHA512")),
    (("-tls1_2", "-sigalgs", "RSA-PSS+SHA256"), ("RSA-PSS", "SHA256")),
    (("-tls1_3", "-sigalgs", "RSA-PSS+SHA256"), ("RSA-PSS", "SHA256")),
    (("-tls1_3", "-sigalgs", "RSA-PSS+SHA384"), ("RSA-PSS", "SHA384")),
    (("-tls1_3", "-sigalgs", "RSA-PSS+SHA512"), ("RSA-PSS", "SHA512")),
])
def test_every_rsa_handshake_signature_verifies_at_the_client(tmp_path, rsa_ca, args, expected):
    with Authd(tmp_path, tls=rsa_ca) as authd:
        assert signature_of(authd, *args) == (0,) + expected


def test_tls13_refuses_pkcs1_and_nobody_gets_a_sha1_signature(tmp_path, rsa_ca):
    with Authd(tmp_path, tls=rsa_ca) as authd:
        assert signature_of(authd, "-tls1_3", "-sigalgs", "RSA+SHA256")[0] != 0
        assert signature_of(authd, "-tls1_2", "-sigalgs", "RSA+SHA1")[0] != 0
        assert authd.request("GET", "/healthz").status == 200


def test_an_ecdsa_certificate_is_signed_by_gnutls_itself(tmp_path, ca):
    with Authd(tmp_path / "a", tls=ca) as authd:
        assert signature_of(authd, "-tls1_3") == (0, "ECDSA", "SHA256")
        assert signature_of(authd, "-tls1_2") == (0, "ECDSA", "SHA256")
        assert authd.request("GET", "/healthz").status == 200


# -- certificate reload on SIGHUP ---------------------------------------------------------

def own_copy(ca, directory):
    """The test CA with a server certificate and key of this test's own, to be replaced."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for source, name, mode in ((ca.server_cert, "server.pem", 0o644), (ca.server_key, "server.key", 0o600)):
        path = os.path.join(directory, name)
        with open(source, "rb") as f, open(path, "wb") as out:
            out.write(f.read())
        os.chmod(path, mode)
        paths.append(path)
    return TestCA(directory, ca.ca_cert, ca.ca_key, *paths)


def issue(ca, directory, name, subject):
    """A new server certificate for 127.0.0.1 from the same CA, with an EC key of its own and
    a random serial. Returns (cert path, key path)."""
    path = lambda suffix: os.path.join(directory, name + suffix)  # noqa: E731
    with open(path(".ext"), "w") as ext:
        ext.write("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                  "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for args in (["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                  "-keyout", path(".key"), "-out", path(".csr"), "-subj", subject],
                 ["x509", "-req", "-in", path(".csr"), "-CA", ca.ca_cert, "-CAkey", ca.ca_key,
                  "-set_serial", "0x%x" % random.getrandbits(64), "-days", "2", "-sha256",
                  "-extfile", path(".ext"), "-out", path(".pem")]):
        done = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    os.chmod(path(".key"), 0o600)
    return path(".pem"), path(".key")


def install(source, target, mode):
    """Replaces `target` by a copy of `source` the way a deploy does (write, rename)."""
    with open(source, "rb") as f:
        data = f.read()
    temporary = target + ".new"
    with open(temporary, "wb") as out:
        out.write(data)
    os.chmod(temporary, mode)
    os.replace(temporary, target)


def der(pem_path):
    with open(pem_path) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def served(authd):
    """The certificate a new TLS connection is given, DER."""
    with socket.create_connection(("127.0.0.1", authd.port), timeout=5) as raw:
        with authd.tls.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return tls.getpeercert(binary_form=True)


def serial_of(pem_path):
    done = subprocess.run(["openssl", "x509", "-in", pem_path, "-noout", "-serial"],
                          capture_output=True, text=True, timeout=20)
    return done.stdout.strip().split("=", 1)[1]


def hup(authd, expected):
    """SIGHUP; waits for the next reload line, which must contain `expected`."""
    count = len(reload_lines(authd))
    os.kill(authd.pid, signal.SIGHUP)
    deadline = time.monotonic() + 5
    while len(reload_lines(authd)) == count:
        assert time.monotonic() < deadline, authd.log_text()
        time.sleep(0.02)
    line = reload_lines(authd)[count]
    assert expected in line, line
    return line


def reload_lines(authd):
    return [line for line in authd.log_text().splitlines()
            if "reloaded TLS certificate" in line or "TLS certificate not reloaded" in line]


def read_answer(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


class HandshakeInProgress:
    """A TLS handshake stopped after the server's first flight (certificate, signature) and
    before the client's Finished, through a memory BIO over a plain socket."""

    def __init__(self, authd):
        self.sock = socket.create_connection(("127.0.0.1", authd.port), timeout=5)
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = authd.tls.ssl_context().wrap_bio(self.incoming, self.outgoing, server_hostname="127.0.0.1")
        with pytest.raises(ssl.SSLWantReadError):
            self.tls.do_handshake()
        self.sock.sendall(self.outgoing.read())
        self.sock.settimeout(0.3)
        while True:  # the whole server flight, until the server waits for us
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                break
            assert data, "server closed the handshake"
            self.incoming.write(data)

    def finish_and_get(self, path):
        """Completes the handshake, sends GET `path`, returns (answer bytes, certificate)."""
        self.sock.settimeout(5)
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.sock.sendall(self.outgoing.read())
                self.incoming.write(self.sock.recv(65536))
        self.tls.write(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" % path.encode())
        self.sock.sendall(self.outgoing.read())
        answer = b""
        while b"\r\n\r\n" not in answer:
            try:
                answer += self.tls.read(4096)
            except ssl.SSLWantReadError:
                data = self.sock.recv(65536)
                if not data:
                    break
                self.incoming.write(data)
        return answer, self.tls.getpeercert(binary_form=True)

    def close(self):
        self.sock.close()


def test_sighup_serves_the_new_certificate_and_keeps_what_is_in_flight(tmp_path, ca):
    tls = own_copy(ca, str(tmp_path / "tls"))
    with Authd(tmp_path / "authd", tls=tls) as authd:
        old = der(tls.server_cert)
        assert served(authd) == old
        # In flight across the reload: a keep-alive connection, a body half sent, a
        # handshake that got the old certificate but has not finished.
        kept = authd.connection(timeout=5)
        kept.request("GET", "/healthz")
        assert kept.getresponse().read()
        body = b'{"jwt":"' + b"x" * 40 + b'"}'
        slow = authd.tls.ssl_context().wrap_socket(socket.create_connection(("127.0.0.1", authd.port), timeout=5),
                                                    server_hostname="127.0.0.1")
        slow.sendall(b"POST /v1/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body[:10])
        handshake = HandshakeInProgress(authd)
        try:
            cert, key = issue(ca, str(tmp_path), "reloaded", "/CN=fingerauthd reloaded")
            install(cert, tls.server_cert, 0o644)
            install(key, tls.server_key, 0o600)
            hup(authd, "reloaded TLS certificate (subject CN=fingerauthd reloaded, serial %s, not after "
                % serial_of(cert))

            new = der(cert)
            assert new != old and served(authd) == new
            kept.request("GET", "/healthz")
            answer = kept.getresponse()
            assert answer.status == 200 and answer.read()
            assert kept.sock.getpeercert(binary_form=True) == old
            slow.sendall(body[10:])
            assert read_answer(slow).startswith(b"HTTP/1.1 401 ")
            answer, certificate = handshake.finish_and_get("/healthz")
            assert answer.startswith(b"HTTP/1.1 200 ") and certificate == old
        finally:
            kept.close()
            slow.close()
            handshake.close()
        assert authd.request("GET", "/healthz").status == 200


def test_a_bad_reload_keeps_the_previous_certificate_and_says_why(tmp_path, ca):
    tls = own_copy(ca, str(tmp_path / "tls"))
    with Authd(tmp_path / "authd", tls=tls) as authd:
        old = der(tls.server_cert)
        good_cert, good_key = issue(ca, str(tmp_path), "next", "/CN=fingerauthd next")

        os.chmod(tls.server_key, 0o644)  # readable by everyone
        hup(authd, "TLS certificate not reloaded, the previous one stays in use: %s: mode 644 is too open"
            % tls.server_key)
        assert served(authd) == old
        os.chmod(tls.server_key, 0o600)

        install(good_cert, tls.server_cert, 0o644)  # with the old key: they do not match
        hup(authd, "the key does not belong to the certificate (subject CN=fingerauthd next)")
        assert served(authd) == old

        secret = "S3CRETKEYBYTES" * 4
        with open(tls.server_key, "w") as f:
            f.write("-----BEGIN PRIVATE KEY-----\n%s\n-----END PRIVATE KEY-----\n" % secret)
        line = hup(authd, "TLS certificate not reloaded")
        assert "key file" in line and secret not in authd.log_text()
        assert served(authd) == old and authd.request("GET", "/healthz").status == 200

        install(good_key, tls.server_key, 0o600)  # a good pair at last
        hup(authd, "reloaded TLS certificate (subject CN=fingerauthd next")
        assert served(authd) == der(good_cert)
        assert authd._proc.poll() is None
