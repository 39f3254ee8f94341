"""New connections per address are limited before the TLS handshake (`connection-rate`,
`connection-burst`): an address that opens connections faster than its rate has them
closed at the accept — no handshake, no request, no audit row — while other addresses
connect as usual. A refused address is logged at most once a minute however it floods;
/metrics counts every refusal. Trusted proxies are exempt. A handshake costs the server
milliseconds of CPU (more with an RSA-2048 certificate than a P-256 one), a connect costs
the client next to nothing: without this limit one address could keep every core busy
with handshakes."""

import os
import re
import ssl
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.authd import Authd, build_dir  # noqa: E402
from support.tls import make_ca  # noqa: E402

pytestmark = pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauthd"), os.X_OK),
                                reason="no fingerauthd in %s" % build_dir())

REFUSING = re.compile(r"refusing new connections from (\S+): more than (\d+) a second \(connection-rate; burst (\d+)\)")


def healthz(authd, source):
    """GET /healthz on a new TLS connection from `source`: the status, or "closed" when the
    connection was closed before the handshake finished."""
    try:
        return authd.request("GET", "/healthz", timeout=5, source=source).status
    except (ConnectionError, ssl.SSLError, OSError):
        return "closed"


def burst_of(authd, source, count):
    """`count` connections from `source` one after the other, as fast as they go: (answers, seconds)."""
    began = time.monotonic()
    answers = [healthz(authd, source) for _ in range(count)]
    return answers, time.monotonic() - began


def parallel_burst_of(authd, source, count, workers=16):
    """`count` connections from `source`, `workers` at a time: (answers, seconds)."""
    import concurrent.futures
    began = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        answers = list(pool.map(lambda _: healthz(authd, source), range(count)))
    return answers, time.monotonic() - began


def refused_total(authd):
    text = authd.request("GET", "/metrics").body.decode()
    match = re.search(r'^fingerauthd_connections_refused_total\{limit="connection_rate"\} (\d+)$', text, re.M)
    assert match, text
    return int(match.group(1))


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    return make_ca(tmp_path_factory.mktemp("ca"))


def test_an_address_over_its_rate_is_closed_before_tls_while_others_connect(tmp_path, ca):
    # 1 a second: what the bucket refills while a loop runs stays small however slow the machine
    with Authd(tmp_path / "a", tls=ca, args=("--connection-rate", "1", "--connection-burst", "10")) as authd:
        before = len(authd.audit_rows())
        answers, seconds = burst_of(authd, "127.0.0.2", 40)
        ok = answers.count(200)
        # the burst, plus what the bucket refilled while the loop ran
        assert 10 <= ok <= 10 + int(seconds) + 1, (answers, seconds)
        assert answers[:10] == [200] * 10, answers
        assert set(answers) == {200, "closed"}, answers
        # another address is not touched by it
        assert [healthz(authd, "127.0.0.1") for _ in range(5)] == [200] * 5
        assert refused_total(authd) == answers.count("closed")
        log = authd.log_text()
        assert REFUSING.findall(log) == [("127.0.0.2", "1", "10")], log[-3000:]
        # closed before any request: no request line, no audit row from that address
        assert len(re.findall(r"path=/healthz .*peer=127\.0\.0\.2 ", log)) == ok
        assert len(authd.audit_rows()) == before
        # the bucket refills at 1 a second: after 2 s, 2 more get through (and what the loop
        # itself took refilled)
        time.sleep(2.1)
        again, seconds = burst_of(authd, "127.0.0.2", 12)
        assert 2 <= again.count(200) <= 2 + int(seconds) + 1, (again, seconds)
        assert again[:2] == [200, 200] and "closed" in again, again
        # still one line: an address at its limit cannot fill the log
        assert len(REFUSING.findall(authd.log_text())) == 1
        assert refused_total(authd) == answers.count("closed") + again.count("closed")


def test_trusted_proxies_are_not_limited(tmp_path, ca):
    args = ("--connection-rate", "2", "--connection-burst", "3", "--trusted-proxies", "127.0.0.3")
    with Authd(tmp_path / "p", tls=ca, args=args) as authd:
        proxied, _ = burst_of(authd, "127.0.0.3", 20)
        assert proxied == [200] * 20
        direct, seconds = burst_of(authd, "127.0.0.2", 10)
        assert direct[:3] == [200] * 3 and direct.count(200) <= 3 + int(2 * seconds) + 1, (direct, seconds)
        assert "closed" in direct, direct
        assert [a for a, *_ in REFUSING.findall(authd.log_text())] == ["127.0.0.2"]


def test_the_default_is_20_a_second_with_a_burst_of_128(tmp_path, ca):
    with Authd(tmp_path / "d", tls=ca, connection_rate=True) as authd:
        assert "--connection-rate" not in authd.args
        answers, seconds = parallel_burst_of(authd, "127.0.0.2", 400)
        ok = answers.count(200)
        assert 128 <= ok <= 128 + int(20 * seconds) + 1, (ok, seconds)
        assert set(answers) == {200, "closed"}
        assert REFUSING.findall(authd.log_text()) == [("127.0.0.2", "20", "128")]
        assert healthz(authd, "127.0.0.1") == 200


def test_a_rate_of_zero_turns_the_limit_off(tmp_path, ca):
    with Authd(tmp_path / "z", tls=ca, args=("--connection-rate", "0", "--connection-burst", "1")) as authd:
        answers, _ = burst_of(authd, "127.0.0.2", 30)
        assert answers == [200] * 30
        assert refused_total(authd) == 0
        assert not REFUSING.search(authd.log_text())


def test_bad_values_are_refused_at_start(tmp_path):
    binary = os.path.join(build_dir(), "fingerauthd")
    import subprocess
    for flag, value in (("--connection-rate", "-1"), ("--connection-rate", "fast"), ("--connection-burst", "0")):
        done = subprocess.run([binary, "serve", "--listen", "127.0.0.1:0", "--db", str(tmp_path / "db"),
                               "--audience", "a", flag, value], capture_output=True, text=True, timeout=20)
        assert done.returncode != 0
        assert "%s must be a whole number" % flag in done.stderr, done.stderr


def test_the_simultaneous_cap_counts_an_ipv6_slash64_as_one_address(tmp_path):
    """Issue 32, point 6: `max-connections-per-address` compared whole IPv6 addresses (it
    was libmicrohttpd's own per-IP limit) while every other limit counts a /64. Addresses
    of one /64 need interfaces that only a network namespace of the test's own can give."""
    import json
    import shutil
    import subprocess
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs unshare(1) and ip(8) for a network namespace")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "support", "netns_connections.py")
    done = subprocess.run(["unshare", "--net", "--map-root-user", sys.executable, script,
                           os.path.join(build_dir(), "fingerauthd"), str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0 and "unshare failed" in done.stderr:
        pytest.skip("no network namespace here: " + done.stderr.strip())
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["held"] == ["HTTP/1.1 200 OK"] * 2
    # A third address of the same /64 finds its cap full; another /64 does not.
    assert seen["third_of_the_64"] == "closed"
    assert seen["another_64"] == "HTTP/1.1 200 OK"
    assert seen["after_one_closed"] == "HTTP/1.1 200 OK"
    assert 'fingerauthd_connections_refused_total{limit="connections_per_address"} 1' in seen["metrics"]
    log = open(tmp_path / "authd.stderr").read()
    assert log.count("refusing connections from 2001:db8:1::: it holds 2 already (max-connections-per-address") == 1, log
