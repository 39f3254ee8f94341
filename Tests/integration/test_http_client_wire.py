"""The login helper's HTTP client against answers fingerauthd never gives but a proxy or a
hostile server might: a chunked body, bytes after the body, a head larger than the client
reads, a body cut off, an HTTP/1.0 answer delimited by the end of the stream, an endless
chunked body. A raw TLS server (Python's ssl on a loopback port) writes exactly the bytes
each test asks for; the helper is the real one, started by the real module."""

import json
import re
import socket
import ssl
import threading

import pytest
from support.fakeauth import _claims


class RawServer:
    """Answers each request of each connection with `respond(method, body) -> (bytes, close)`;
    `close` "goodbye" ends the server's side (TCP FIN) and counts what the client still
    sends on that connection (`after_goodbye`)."""

    def __init__(self, ca, respond):
        self.respond = respond
        self.connections = 0
        self.after_goodbye = 0
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(ca.server_cert, ca.server_key)
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.url = "https://127.0.0.1:%d/v1/login" % self.listener.getsockname()[1]
        self.stop = False
        self.thread = threading.Thread(target=self.serve, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop = True
        # close() alone leaves accept() blocked and the join waiting out its 5 s; a
        # shutdown wakes it at once.
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        self.thread.join(5)

    def serve(self):
        while not self.stop:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self.handle, args=(raw,), daemon=True).start()

    def handle(self, raw):
        try:
            conn = self.context.wrap_socket(raw, server_side=True)
            conn.settimeout(10)
            data = b""
            while True:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                head, _, data = data.partition(b"\r\n\r\n")
                method = head.split(b" ", 1)[0].decode()
                length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
                need = int(length.group(1)) if length else 0
                while len(data) < need:
                    data += conn.recv(4096)
                body, data = data[:need], data[need:]
                answer, close = self.respond(method, body)
                conn.sendall(answer)
                if close == "goodbye":
                    conn.shutdown(socket.SHUT_WR)  # the FIN; what comes after is raw bytes
                    conn.settimeout(3)
                    while True:
                        chunk = conn.recv(4096)
                        if not chunk:
                            return
                        self.after_goodbye += len(chunk)
                if close:
                    conn.close()
                    return
        except (OSError, ValueError):
            pass
        finally:
            raw.close()


def verdict(body, user="alice"):
    claims = _claims(body)
    return json.dumps({"ok": True, "sub": user, "jti": claims["jti"], "kid": claims["_kid"]}).encode()


def head(status, headers):
    return ("HTTP/1.1 %d X\r\n" % status + "".join("%s: %s\r\n" % h for h in headers) + "\r\n").encode()


def warm_up(method):
    """The helper's GET: a plain 405 (as fingerauthd answers it)."""
    return head(405, [("Content-Length", "0"), ("Allow", "POST")])


def outcome_line(world):
    return [line for line in world.log_lines() if " result=" in line][-1]


def login_through(world, server):
    world.enroll("alice", "finger-A")  # registered with the real fingerauthd
    world.write_conf(url=server.url)
    return world.login("alice", scans=("finger-A",), service=world.service("fa-only", fallback=False))


def test_a_chunked_answer_is_read_whole(world):
    def respond(method, body):
        if method == "GET":
            return warm_up(method), False
        text = verdict(body)
        chunks = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(part), part) for part in (text[:10], text[10:]))
        return head(200, [("Transfer-Encoding", "chunked"), ("Content-Type", "application/json")]) + chunks + \
            b"0\r\nX-Trailer: yes\r\n\r\n", False

    with RawServer(world.ca, respond) as server:
        assert login_through(world, server).name == "PAM_SUCCESS"
        assert server.connections == 1  # the GET and the POST on one connection


def test_bytes_after_an_answer_are_never_read_as_the_next_answer(world):
    # The warm-up answer carries a forged second answer behind it: the client must not keep
    # that connection, and the POST goes on a new one (where the real verdict comes).
    def respond(method, body):
        if method == "GET":
            forged = head(200, [("Content-Length", "11")]) + b'{"ok":true}'
            return warm_up(method) + forged, False
        text = verdict(body)
        return head(200, [("Content-Length", str(len(text)))]) + text, False

    with RawServer(world.ca, respond) as server:
        assert login_through(world, server).name == "PAM_SUCCESS"
        assert server.connections == 2


def test_a_connection_the_server_ended_is_not_sent_the_login(world):
    # The server answers the warm-up, then ends its side (FIN) while the finger is awaited.
    # The login goes on a new connection; the old one gets nothing (no token sent into a
    # connection the server had said goodbye on, and none re-sent).
    def respond(method, body):
        if method == "GET":
            return warm_up(method), "goodbye"
        text = verdict(body)
        return head(200, [("Content-Length", str(len(text)))]) + text, False

    with RawServer(world.ca, respond) as server:
        world.enroll("alice", "finger-A")
        world.write_conf(url=server.url)
        world.reader.feed(["SCAN finger-A"], after=0.4)
        login = world.login("alice", service=world.service("fa-only", fallback=False))
        world.reader.wait()
        assert login.name == "PAM_SUCCESS", login
        assert server.connections == 2 and server.after_goodbye == 0, (server.connections, server.after_goodbye)


def test_an_http_1_0_answer_ends_with_the_stream(world):
    def respond(method, body):
        if method == "GET":
            return warm_up(method), False
        return b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + verdict(body), True

    with RawServer(world.ca, respond) as server:
        assert login_through(world, server).name == "PAM_SUCCESS"


@pytest.mark.parametrize("answer, reason", [
    (head(200, [("X-Padding", "a" * 17000)]), "answer head larger than 16384 bytes"),
    (head(200, [("Content-Length", "100")]) + b'{"ok":', "answer ended early"),
    (head(200, [("Transfer-Encoding", "chunked")]) + b"4000\r\n" + b"a" * 0x4000 + b"\r\n4000\r\n" + b"a" * 0x4000,
     "answer larger than 16384 bytes"),
    (head(200, [("Transfer-Encoding", "gzip")]) + b"x", "unsupported Transfer-Encoding"),
    # a signed chunk size: the helper trapped on it before (the http-answer fuzz target)
    (head(200, [("Transfer-Encoding", "chunked")]) + b"-d\r\n" + b"x" * 40 + b"\r\n", "malformed chunked body"),
    (b"SSH-2.0-OpenSSH_9.2\r\n\r\n", "not an HTTP/1.x answer"),
    # trailers and chunk extensions are bounded like the head (a megabyte was read whole before)
    (head(200, [("Transfer-Encoding", "chunked")]) + b"0\r\nX-Pad: " + b"a" * (1 << 20) + b"\r\n\r\n",
     "answer too large: trailers over 16384 bytes"),
    (head(200, [("Transfer-Encoding", "chunked")]) + b"2;x=" + b"a" * (1 << 20) + b"\r\nok\r\n0\r\n\r\n",
     "answer too large: chunk line (extensions) over 1024 bytes"),
], ids=["huge-head", "cut-body", "endless-chunks", "gzip", "negative-chunk", "not-http", "huge-trailer",
        "huge-extension"])
def test_a_malformed_answer_is_no_verdict(world, answer, reason):
    def respond(method, body):
        return (warm_up(method), False) if method == "GET" else (answer, True)

    with RawServer(world.ca, respond) as server:
        login = login_through(world, server)
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    line = outcome_line(world)
    assert reason in line, line


def test_a_login_post_cut_after_it_went_out_is_never_sent_again(world):
    """The kept connection is cut after the POST went out (the server read it, then closed
    without a word): the token may have been spent, so the helper does not send it again on
    a new connection (the authenticator would answer "replayed" and the audit hold an
    acceptance for a login that failed). One POST, and the login fails saying why."""
    posts = []

    def respond(method, body):
        if method == "GET":
            return warm_up(method), False
        posts.append(body)
        return b"", True

    with RawServer(world.ca, respond) as server:
        login = login_through(world, server)
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert len(posts) == 1, len(posts)
    line = outcome_line(world)
    assert "closed after the request went out (not sent again)" in line, line


def late_finger_login(world, url, after=5.5):
    world.write_conf(url=url, timeout="15")
    world.reader.feed(["SCAN finger-A"], after=after)
    try:
        return world.login("alice", service=world.service("fa-only", fallback=False))
    finally:
        world.reader.wait()


def test_a_connection_idle_past_the_margin_does_not_carry_the_login(world):
    """fingerauthd closes a connection idle for 10 s, the default finger timeout: a login
    written into a connection the server is closing would be lost. The warm-up's connection,
    idle over 5 s when the finger comes, is left; the POST goes on a new one."""
    def respond(method, body):
        if method == "GET":
            return warm_up(method), False
        text = verdict(body)
        return head(200, [("Content-Length", str(len(text)))]) + text, False

    world.enroll("alice", "finger-A")
    with RawServer(world.ca, respond) as server:
        login = late_finger_login(world, server.url)
        assert login.name == "PAM_SUCCESS", login
        assert server.connections == 2, server.connections


def test_a_finger_after_the_idle_margin_logs_in_with_the_real_authenticator(world):
    world.enroll("alice", "finger-A")
    login = late_finger_login(world, world.settings["url"])
    assert login.name == "PAM_SUCCESS", login
    rows = [r for r in world.authd.audit_rows() if r["event"] == "login"]
    assert rows[-1]["outcome"] == "accept" and len([r for r in rows if r["outcome"] != "accept"]) == 0, rows
