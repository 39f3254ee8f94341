"""The offline grant against the people it is for (issue 45, host side): a user whose key
was revoked keeps the grant on the host, and tries to make the helper believe the
authenticator is unreachable while it is not. Only the network's own word opens the grant
(refused by the far end, no route, a name server's answer, a timeout the helper was awake
for, 502-504); an error of this host (ports, descriptors), a helper kept from running, a
certificate of another CA and a wrong answer all fall to the password, and the log names
why. The real helper, module, fingerauthd and libpam; private network namespaces
(`ip netns`, whose ip_local_port_range is set to four ports) and a cgroup v2 chowned to an
unprivileged user stand in for what a local user controls."""

import http.server
import itertools
import os
import socket
import ssl
import subprocess
import sys
import threading
import time

import pytest

from support.vreader import scan_commands
from support.world import USERS
from support.fakeauth import TLSServer
from test_offline_grants import OFFLINE_TEXT, offline  # noqa: F401  (fixture)
from test_http_client_wire import RawServer, head

BOB = USERS["bob"]
PORTS = (40000, 40003)
_names = itertools.count()


def revoked_with_grant(offline, world):
    """alice logs in online (a grant), then her key is revoked: the host keeps the grant
    until its next contact, which the attacks below try to prevent."""
    offline.rule()
    offline.online()
    assert offline.grant_file.exists()
    world.authd.revoke(world.kid("alice"))


def attempt(offline, wrap=()):
    """A login that must not use the grant: the finger is offered all the same, and put on
    the reader only if the helper ever opens it (a helper that went offline would)."""
    world = offline.world
    world.reader.feed(scan_commands("finger-A"), timeout=8)
    try:
        return world.login("alice", service=world.service("fa-only", fallback=False), wrap=wrap)
    finally:
        try:
            world.reader.wait(timeout=10)
        except Exception:
            pass  # the reader was never opened: nothing to scan


def used_offline(offline):
    return offline.log_file.exists() and offline.log_file.read_text().strip() != ""


def last_line(world):
    return world.log_lines()[-1]


def as_bob(*cmd):
    return ["setpriv", "--reuid", str(BOB), "--regid", str(BOB), "--clear-groups", "--", *cmd]


HOLDER = """
import socket, sys
low, high = int(sys.argv[1]), int(sys.argv[2])
held = []
for port in range(low, high + 1):
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        s = socket.socket(socket.AF_INET, kind)
        s.bind(("0.0.0.0", port))  # no listen, no packet: the port is simply taken
        held.append(s)
print("held", len(held), flush=True)
sys.stdin.read()
"""

RESPONDER = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
print("ready", flush=True)
while True:
    query, peer = s.recvfrom(512)
    if len(query) < 12:
        continue
    # the same id and question, QR and RA set, RCODE 3: no such name
    s.sendto(query[:2] + bytes([0x81, 0x83]) + query[4:6] + bytes(6) + query[12:], peer)
"""


class PrivateNet:
    """A network namespace of the test's own: loopback up, an ephemeral port range of four
    ports, optionally a resolv.conf naming 127.0.0.1 with a name server there that says
    NXDOMAIN to everything (`ip netns exec` binds /etc/netns/NAME/* over /etc)."""

    def __init__(self, dns=False):
        self.name = "fa-abuse-%d-%d" % (os.getpid(), next(_names))
        self.procs = []
        self.etc = "/etc/netns/" + self.name
        subprocess.run(["ip", "netns", "add", self.name], check=True, capture_output=True)
        self.run("ip", "link", "set", "lo", "up")
        self.run("sysctl", "-q", "-w", "net.ipv4.ip_local_port_range=%d %d" % PORTS)
        if dns:
            os.makedirs(self.etc, exist_ok=True)
            with open(self.etc + "/resolv.conf", "w") as f:
                f.write("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
            self.start([sys.executable, "-c", RESPONDER], "ready")

    @property
    def wrap(self):
        return ["ip", "netns", "exec", self.name]

    def run(self, *cmd):
        subprocess.run(self.wrap + list(cmd), check=True, capture_output=True, timeout=30)

    def start(self, cmd, ready):
        proc = subprocess.Popen(self.wrap + cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.procs.append(proc)
        line = proc.stdout.readline()
        assert line.startswith(ready), line
        return proc

    def hold_ports(self):
        """Bob, without privileges, binds every port of the range (TCP and UDP)."""
        return self.start(as_bob(sys.executable, "-c", HOLDER, str(PORTS[0]), str(PORTS[1])), "held 8")

    def release(self, proc):
        proc.stdin.close()
        proc.wait(timeout=10)
        self.procs.remove(proc)

    def close(self):
        for proc in self.procs:
            proc.kill()
            proc.wait()
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
        if os.path.isdir(self.etc):
            for name in os.listdir(self.etc):
                os.remove(os.path.join(self.etc, name))
            os.rmdir(self.etc)


@pytest.fixture
def net():
    if subprocess.run(["ip", "netns", "add", "fa-abuse-probe-%d" % os.getpid()], capture_output=True).returncode:
        pytest.skip("ip netns unavailable")
    subprocess.run(["ip", "netns", "del", "fa-abuse-probe-%d" % os.getpid()], capture_output=True)
    made = []

    def make(**kwargs):
        made.append(PrivateNet(**kwargs))
        return made[-1]

    yield make
    for n in made:
        n.close()


def test_a_user_who_takes_every_local_port_gets_no_offline_login(offline, world, net):
    """(a) The ports of ip_local_port_range all bound by bob: connect() fails with
    EADDRNOTAVAIL, an error of this host. The same namespace without bob's sockets refuses
    the connection (nothing listens there): that is the network's word, and the grant is used."""
    revoked_with_grant(offline, world)
    n = net()
    holder = n.hold_ports()
    login = attempt(offline, wrap=n.wrap)
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    line = last_line(world)
    assert "Cannot assign requested address" in line and "[local-error]" in line, line
    assert "offline: not used, no evidence the network is the problem" in line, line
    assert not used_offline(offline)

    n.release(holder)
    login = offline.offline(wrap=n.wrap)
    assert login.name == "PAM_SUCCESS", login
    assert OFFLINE_TEXT.match(login.infos[-1]), login.infos
    assert "authenticator unreachable (refused): offline grant" in last_line(world), last_line(world)


def test_a_user_who_takes_every_port_of_the_name_lookup_gets_no_offline_login(offline, world, net):
    """(a) The authenticator by name, the name server in the namespace: with bob's ports the
    query never leaves the host (getaddrinfo fails, and so does the helper's own probe), an
    error of this host. Without them the name server answers NXDOMAIN: the grant is used."""
    revoked_with_grant(offline, world)
    n = net(dns=True)
    world.write_conf(url="https://fingerauth-test.invalid:%d/v1/login" % world.authd.port)
    holder = n.hold_ports()
    login = attempt(offline, wrap=n.wrap)
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    line = last_line(world)
    assert "no address for" in line and "could not leave this host" in line, line
    assert "[local-error]" in line, line
    assert not used_offline(offline)

    n.release(holder)
    login = offline.offline(wrap=n.wrap)
    assert login.name == "PAM_SUCCESS", login
    assert "authenticator unreachable (no-such-name): offline grant" in last_line(world), last_line(world)


class FreezingProxy:
    """A TCP relay to fingerauthd that, when the helper's first connection arrives, has bob
    freeze the cgroup the login runs in (cgroup.freeze, chowned to him as a delegated
    cgroup is), waits `frozen` seconds, thaws it and only then relays: the authenticator is
    up, the helper was simply not running past its deadline."""

    def __init__(self, cgroup, port, frozen):
        self.cgroup, self.port, self.frozen = cgroup, port, frozen
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.url = "https://127.0.0.1:%d/v1/login" % self.listener.getsockname()[1]
        self.froze = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def freeze(self, value):
        subprocess.run(as_bob("sh", "-c", "echo %d > %s/cgroup.freeze" % (value, self.cgroup)), check=True)

    def serve(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.froze == 0:
                self.froze = 1
                self.freeze(1)
                time.sleep(self.frozen)
                self.freeze(0)
            upstream = socket.create_connection(("127.0.0.1", self.port))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.pump, args=(a, b), daemon=True).start()

    @staticmethod
    def pump(a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.listener.close()


@pytest.fixture
def user_cgroup():
    """A cgroup v2 delegated to bob (the directory, cgroup.procs and cgroup.freeze his), as
    the session of a desktop user is: sudo from his terminal runs in it."""
    root = "/sys/fs/cgroup/unified" if os.path.exists("/sys/fs/cgroup/unified/cgroup.procs") else "/sys/fs/cgroup"
    path = "%s/fa-abuse-%d" % (root, os.getpid())
    try:
        os.mkdir(path)
    except OSError as e:
        pytest.skip("no writable cgroup v2: %s" % e)
    if not os.path.exists(path + "/cgroup.freeze"):
        os.rmdir(path)
        pytest.skip("cgroup v2 without cgroup.freeze")
    for name in ("", "/cgroup.procs", "/cgroup.freeze"):
        os.chown(path + name, BOB, BOB)
    yield path
    with open(path + "/cgroup.freeze", "w") as f:
        f.write("0")
    for _ in range(50):
        try:
            os.rmdir(path)
            break
        except OSError:
            time.sleep(0.1)


def test_a_helper_frozen_past_its_deadline_gets_no_offline_login(offline, world, user_cgroup):
    """(b) The login runs in bob's cgroup; he freezes it for 3.2 s once the helper has
    connected (the warm-up's bounds are 2 s to connect, 3 s in all), then thaws it. The
    helper measures that it was not running for most of its wait: no evidence of silence."""
    revoked_with_grant(offline, world)
    proxy = FreezingProxy(user_cgroup, world.authd.port, frozen=3.2)
    try:
        world.write_conf(url=proxy.url)
        enter = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', user_cgroup]
        login = attempt(offline, wrap=enter)
    finally:
        proxy.close()
    assert proxy.froze == 1
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    line = last_line(world)
    assert "[stalled]" in line and "kept from running" in line, line
    assert not used_offline(offline)


@pytest.mark.parametrize("world", ["rsa:2048"], indirect=True)
def test_a_certificate_of_another_ca_gives_no_offline_login(offline, world, ca):
    """2. A server at the authenticator's address with a certificate the host's CA did not
    sign (a man in the middle after the key was revoked): reachable, and wrong."""
    revoked_with_grant(offline, world)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args):
            pass

    # The world trusts `rsa_ca`; this server shows the other CA's (`ca`) certificate.
    with TLSServer(Handler, ca.server_cert, ca.server_key) as other:
        world.write_conf(url=other.url + "/v1/login")
        login = attempt(offline)
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    line = last_line(world)
    assert "the certificate did not verify" in line and "[tls]" in line, line
    assert not used_offline(offline)


def endless(prefix, filler):
    """A warm-up answer that never ends: `prefix`, then `filler` for 4.5 s (past every bound)."""
    def stream(conn):
        conn.sendall(prefix)
        stop = time.monotonic() + 4.5
        while time.monotonic() < stop:
            conn.sendall(filler)
            time.sleep(0.01)
    return stream


class StreamingServer:
    """A TLS server of the host's CA that reads a request head, then runs `stream(conn)`."""

    def __init__(self, ca, stream):
        self.stream = stream
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(ca.server_cert, ca.server_key)
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.url = "https://127.0.0.1:%d/v1/login" % self.listener.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(raw,), daemon=True).start()

    def handle(self, raw):
        try:
            conn = self.context.wrap_socket(raw, server_side=True)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                data += chunk
            self.stream(conn)
        except (OSError, ValueError):
            pass
        finally:
            raw.close()

    def close(self):
        self.listener.close()


CHUNKED = head(200, [("Transfer-Encoding", "chunked")])


@pytest.mark.parametrize("answer, reason", [
    ("garbled", "not an HTTP/1.x answer"),
    ("closed", "closed the connection without an answer"),
    ("endless-trailer", "answer too large: trailers over 16384 bytes"),
    ("endless-extension", "answer too large: chunk line (extensions) over 1024 bytes"),
])
def test_a_wrong_answer_gives_no_offline_login(offline, world, answer, reason):
    """2 and 5. A server that answers the warm-up wrongly is reachable: garbled, a close
    without an answer, or trailers / a chunk extension that never end (a helper without
    bounds read them until its deadline, and called that a timeout)."""
    revoked_with_grant(offline, world)
    if answer in ("garbled", "closed"):
        reply = b"SSH-2.0-OpenSSH_9.2\r\n\r\n" if answer == "garbled" else b""
        server = RawServer(world.ca, lambda method, body: (reply, True))
        server.__enter__()
        close = lambda: server.__exit__(None, None, None)  # noqa: E731
    else:
        prefix = CHUNKED + (b"2\r\nok\r\n0\r\nX-Pad: " if answer == "endless-trailer" else b"2;x=")
        server = StreamingServer(world.ca, endless(prefix, b"a" * 1024))
        close = server.close
    try:
        world.write_conf(url=server.url)
        login = attempt(offline)
    finally:
        close()
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    line = last_line(world)
    assert reason in line and "[bad-answer]" in line, line
    assert not used_offline(offline)
