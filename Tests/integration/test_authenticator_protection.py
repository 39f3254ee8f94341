"""fingerauthd protecting itself: failure rate limits per user and per address (429 with
Retry-After, audited), header and body limits, slow clients cut off, and SIGTERM that
answers the requests in flight before it exits.
"""

import json
import os
import signal
import socket
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.authd import Authd, build_dir  # noqa: E402
from test_authenticator import AUDIENCE, HOST, DeviceKey, claims  # noqa: E402

pytestmark = pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauthd"), os.X_OK),
                                reason="no fingerauthd in %s" % build_dir())


def with_keys(authd, *users):
    token = authd.create_token(HOST)
    keys = {}
    for user in users:
        key = DeviceKey()
        answer = authd.post_json("/v1/keys", {"user": user, "host": HOST, "jwk": key.jwk,
                                              "proof": key.proof(claims(sub=user))}, token=token)
        assert answer.status == 201, answer
        keys[user] = key
    return keys


def test_failures_for_one_user_are_limited_with_429_and_retry_after(tmp_path):
    authd = Authd(tmp_path / "u", args=("--user-failures", "3", "--failure-window", "60",
                                         "--address-failures", "0"))
    with authd:
        keys = with_keys(authd, "alice", "bob")
        for _ in range(3):
            assert authd.post_json("/v1/login", {"jwt": keys["alice"].sign(claims(aud="wrong"))}).status == 401
        # Now even a valid token for alice waits; bob is not affected.
        answer = authd.post_json("/v1/login", {"jwt": keys["alice"].sign(claims())})
        assert answer.status == 429 and answer.json() == {"error": "rate_limited"}
        assert 1 <= int(answer.headers["retry-after"]) <= 60
        row = authd.audit_rows()[-1]
        assert (row["event"], row["outcome"], row["reason"], row["user"]) == ("login", "deny", "rate_limited", "alice")
        assert authd.post_json("/v1/login", {"jwt": keys["bob"].sign(claims(sub="bob"))}).status == 200
        metrics = authd.request("GET", "/metrics").body.decode()
        assert 'fingerauthd_rate_limited_total{scope="user"} 1' in metrics
        assert "status=429 outcome=deny reason=rate_limited sub=alice" in authd.log_text()


def test_failures_from_one_address_are_limited_on_every_endpoint(tmp_path):
    authd = Authd(tmp_path / "a", args=("--address-failures", "3", "--failure-window", "60",
                                         "--user-failures", "0"))
    with authd:
        keys = with_keys(authd, "alice")
        for _ in range(3):
            assert authd.post_json("/v1/keys", {"user": "x"}, token="y" * 43).status == 401
        # The limit comes before anything is parsed: a body that is no JSON at all (or 16 KiB
        # of it) is 429 too, never 400 or 413.
        for path, document, raw in (("/v1/login", {"jwt": keys["alice"].sign(claims())}, None),
                                    ("/v1/login", None, b"{not json"), ("/v1/login", None, b"[" * 20000),
                                    ("/v1/keys", {}, None)):
            answer = authd.post_json(path, document, raw=raw)
            assert answer.status == 429 and int(answer.headers["retry-after"]) >= 1, (path, raw, answer)
        # The 429s are counted together in one row of their address and window, not one row each.
        rows = authd.wait_for_rows(lambda rows: any(r["event"] == "refusals" and r["count"] == 4 for r in rows))
        refusals = [r for r in rows if r["event"] == "refusals"]
        assert [(r["outcome"], r["reason"], r["peer"], r["count"], r["verified"]) for r in refusals] == \
               [("deny", "rate_limited", "127.0.0.1", 4, 0)]
        assert authd.request("GET", "/healthz").status == 200
        # /metrics is under the limit too; another address reads it.
        assert authd.request("GET", "/metrics").status == 429
        metrics = authd.request("GET", "/metrics", source="127.0.0.2").body.decode()
        assert 'fingerauthd_rate_limited_total{scope="address"} 5' in metrics
        assert "fingerauthd_refusals_counted_total 5" in metrics


def test_huge_headers_are_refused(tmp_path):
    with Authd(tmp_path / "h") as authd:
        answer = authd.request("GET", "/healthz", headers={"X-Filler": "a" * (64 * 1024)})
        assert answer.status in (413, 431)
        assert authd.request("GET", "/healthz").status == 200


def raw_connection(authd):
    s = socket.create_connection(("127.0.0.1", authd.port), timeout=20)
    return s


def closed_within(sock, seconds, trickle=None):
    """True when the server closes `sock` within `seconds` (optionally sending `trickle`
    bytes one per second meanwhile)."""
    deadline = time.monotonic() + seconds
    sock.settimeout(1.0)
    while time.monotonic() < deadline:
        try:
            if trickle:
                sock.sendall(trickle[:1])
                trickle = trickle[1:]
            data = sock.recv(4096)
            if data == b"" or b"HTTP/1.1" in data:
                return True
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


def test_slow_clients_are_disconnected(tmp_path):
    authd = Authd(tmp_path / "s", args=("--connection-timeout", "2", "--request-timeout", "4"))
    with authd:
        # Idle in the middle of the headers.
        idle = raw_connection(authd)
        try:
            idle.sendall(b"POST /v1/login HTTP/1.1\r\nHost: x\r\n")
            started = time.monotonic()
            assert closed_within(idle, 10)
            assert time.monotonic() - started < 8
        finally:
            idle.close()
        # A body trickled one byte a second (never idle for 2 s) is cut at 4 s.
        slow = raw_connection(authd)
        try:
            slow.sendall(b"POST /v1/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 60\r\n\r\n")
            started = time.monotonic()
            assert closed_within(slow, 12, trickle=b"x" * 59)
            assert time.monotonic() - started < 10
        finally:
            slow.close()
        assert "slow client" in authd.log_text()
        assert authd.request("GET", "/healthz").status == 200


def test_sigterm_answers_the_request_in_flight_then_exits_cleanly(tmp_path):
    authd = Authd(tmp_path / "t")
    authd.start()
    try:
        keys = with_keys(authd, "alice")
        body = json.dumps({"jwt": keys["alice"].sign(claims())}).encode()
        sock = raw_connection(authd)
        sock.sendall(b"POST /v1/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body[:20])
        time.sleep(0.3)
        os.kill(authd.pid, signal.SIGTERM)
        time.sleep(0.5)
        # No new connections once stopping...
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", authd.port), timeout=2).close()
        # ...but the request in flight is answered.
        sock.sendall(body[20:])
        sock.settimeout(10)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
        sock.close()
        assert answer.startswith(b"HTTP/1.1 200"), answer
        assert b'"ok":true' in answer and b"Connection: close" in answer
        authd._proc.wait(timeout=15)
        row = authd.audit_rows()[-1]
        assert (row["event"], row["outcome"], row["user"]) == ("login", "accept", "alice")
    finally:
        authd.stop()
    assert authd.returncode == 0
    assert "finishing requests in flight" in authd.log_text() and "stopped" in authd.log_text()
