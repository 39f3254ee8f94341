"""The whole login through real libpam: module, scan helper, virtual reader, fingerauthd
over TLS. Each test asserts the PAM code and what the user was shown."""

import base64
import json
import socket
import time

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from support.recorder import RecordingProxy
from support.world import AUDIENCE, HOST_ID, PASSWORDS

PLACE_FINGER = "Place your finger on the fingerprint reader"


def served_key_type(authd):
    """What the authenticator's certificate holds, as a client sees it: ("EC", bits) or ("RSA", bits)."""
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec
    with socket.create_connection(("127.0.0.1", authd.port), timeout=5) as raw, \
            authd.tls.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        key = x509.load_der_x509_certificate(tls.getpeercert(binary_form=True)).public_key()
    return ("EC" if isinstance(key, ec.EllipticCurvePublicKey) else "RSA"), key.key_size


@pytest.mark.parametrize("world, served", [("ec", ("EC", 256)), ("rsa:2048", ("RSA", 2048))], indirect=["world"])
def test_right_finger_with_registered_key_logs_in(world, served):
    assert served_key_type(world.authd) == served
    world.enroll("alice", "finger-A")
    login = world.login("alice", scans=["finger-A"])
    assert login.name == "PAM_SUCCESS", login
    assert login.infos == [PLACE_FINGER]
    assert login.prompts == [] and login.errors == []
    line = world.log_lines()[-1]
    assert "user=alice" in line and "result=PAM_SUCCESS" in line and "finger=right-index-finger" in line
    rows = [r for r in world.authd.audit_rows() if r.get("event") == "login"]
    assert rows[-1]["outcome"] == "accept" and rows[-1]["user"] == "alice"


def test_wrong_finger_max_tries_times_gives_maxtries(world):
    world.enroll("alice", "finger-A")
    login = world.login("alice", scans=["finger-B"] * 3, service=world.service("fa-only", fallback=False))
    assert login.name == "PAM_MAXTRIES", login
    assert login.infos == [PLACE_FINGER, "No match, try again (2 left)", "No match, try again (1 left)"]
    assert login.errors == ["Fingerprint not recognised; too many tries"]
    assert "result=PAM_MAXTRIES" in world.log_lines()[-1]


def test_no_reader_is_authinfo_unavail(world):
    world.enroll("alice", "finger-A")
    world.write_conf(virtual_reader=None)  # no virtual reader, and this machine has no real one
    login = world.login("alice", service=world.service("fa-only", fallback=False))
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.errors == ["Fingerprint login unavailable"]
    assert 'reason="reader: no-reader' in world.log_lines()[-1]


def test_authenticator_not_listening_is_authinfo_unavail_before_any_finger(world):
    """The helper reaches the authenticator before it arms the reader: nobody is asked for a
    finger that could not log them in, and nobody touches the reader."""
    world.enroll("alice", "finger-A")
    world.authd.stop()
    started = time.monotonic()
    login = world.login("alice", service=world.service("fa-only", fallback=False))
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.infos == []
    assert login.errors == ["Fingerprint login unavailable: authenticator not reachable"]
    assert "cannot connect to the authenticator" in world.log_lines()[-1]
    assert time.monotonic() - started < 2


def test_revoked_key_is_auth_err(world):
    world.enroll("alice", "finger-A")
    world.authd.revoke(world.kid("alice"))
    login = world.login("alice", scans=["finger-A"], service=world.service("fa-only", fallback=False))
    assert login.name == "PAM_AUTH_ERR", login
    assert login.errors == ["Fingerprint login refused by the authenticator"]
    assert "authenticator refused (401" in world.log_lines()[-1]


def test_key_unknown_to_the_authenticator_is_auth_err(world):
    world.enroll("alice", "finger-A", register=False)
    login = world.login("alice", scans=["finger-A"], service=world.service("fa-only", fallback=False))
    assert login.name == "PAM_AUTH_ERR", login
    assert login.errors == ["Fingerprint login refused by the authenticator"]


def test_user_not_enrolled_is_ignored_quietly(world):
    login = world.login("bob", service=world.service("fa-only", fallback=False))
    assert login.name == "PAM_IGNORE", login
    assert login.infos == [] and login.errors == [] and login.prompts == []
    assert 'reason="user not enrolled"' in world.log_lines()[-1]


def test_password_takes_over_when_the_finger_fails(world):
    world.enroll("alice", "finger-A")
    login = world.login("alice", scans=["finger-B"] * 3, password=PASSWORDS["alice"])
    assert login.name == "PAM_SUCCESS", login
    assert login.errors == ["Fingerprint not recognised; too many tries"]
    assert login.prompts == ["Password: "]
    wrong = world.login("alice", scans=["finger-B"] * 3, password="not-the-password")
    assert wrong.name == "PAM_AUTH_ERR", wrong


def test_password_is_not_asked_when_the_finger_succeeds(world):
    world.enroll("alice", "finger-A")
    login = world.login("alice", scans=["finger-A"], password=PASSWORDS["alice"])
    assert login.name == "PAM_SUCCESS", login
    assert login.prompts == []


def test_password_works_for_a_user_who_is_not_enrolled(world):
    login = world.login("bob", password=PASSWORDS["bob"])
    assert login.name == "PAM_SUCCESS", login
    assert login.prompts == ["Password: "] and login.infos == []


def _public_key(jwk):
    def number(field):
        raw = base64.urlsafe_b64decode(jwk[field] + "=" * (-len(jwk[field]) % 4))
        return int.from_bytes(raw, "big")
    return rsa.RSAPublicNumbers(number("e"), number("n")).public_key()


def test_token_that_reached_the_server_verifies_with_pyjwt(world):
    world.enroll("alice", "finger-A")
    shown = json.loads(world.cli("key", "show", "--user", "alice", "--json").stdout)
    with RecordingProxy(world.authd.url, world.ca) as proxy:
        world.write_conf(url=proxy.url + "/v1/login")
        login = world.login("alice", scans=["finger-A"])
    assert login.name == "PAM_SUCCESS", login
    [(path, body)] = proxy.requests
    # The token, and beside it the helper's times (whole milliseconds, nothing else).
    assert path == "/v1/login" and list(body) == ["jwt", "stages"], body
    assert list(body["stages"]) == ["ready_ms", "match_ms", "connect_ms"], body["stages"]
    assert all(type(v) is int and 0 <= v < 60_000 for v in body["stages"].values()), body["stages"]
    token = body["jwt"]

    header = jwt.get_unverified_header(token)
    assert header == {"alg": "RS256", "typ": "JWT", "kid": shown["kid"]}
    claims = jwt.decode(token, _public_key(shown["jwk"]), algorithms=["RS256"], audience=AUDIENCE)
    assert claims["iss"] == HOST_ID and claims["sub"] == "alice" and claims["aud"] == AUDIENCE
    assert claims["nbf"] == claims["iat"] and claims["exp"] - claims["iat"] == 30
    assert abs(claims["iat"] - time.time()) < 10
    assert claims["amr"] == ["fpt", "swk"] and claims["service"] == "fa-test"
    assert len(base64.urlsafe_b64decode(claims["jti"] + "==")) == 16
    assert set(claims) == {"iss", "sub", "aud", "iat", "nbf", "exp", "jti", "amr", "service"}
    assert shown["kid"] in world.log_lines()[-1] and token not in world.module_log.read_text()


BODY_HEADERS = ("content-type", "content-length", "transfer-encoding")


def test_the_warm_up_is_a_get_without_body_and_the_login_one_post_on_the_same_connection(world):
    """The helper opens the connection with a GET of the login URL while the finger is
    awaited, then POSTs the token: the GET carries no body and no body headers."""
    world.enroll("alice", "finger-A")
    with RecordingProxy(world.authd.url, world.ca) as proxy:
        world.write_conf(url=proxy.url + "/v1/login")
        login = world.login("alice", scans=["finger-A"])
    assert login.name == "PAM_SUCCESS", login
    [(get, get_path, get_headers, get_body), (post, post_path, post_headers, post_body)] = proxy.seen
    assert (get, get_path, get_body) == ("GET", "/v1/login", b"")
    assert [h for h in BODY_HEADERS if h in get_headers] == [], get_headers
    assert get_headers["accept"] == "application/json"
    assert (post, post_path) == ("POST", "/v1/login")
    assert post_headers["content-type"] == "application/json" and int(post_headers["content-length"]) == len(post_body)


def test_warm_ups_leave_the_authenticators_audit_table_and_limits_untouched(world):
    """fingerauthd answers the warm-up GET of the login URL (405, Allow: POST) without an
    audit row and without a failure against the address, however many come; the login
    itself is audited once. An empty POST (what a warm-up sent as POST would be) is, by
    contrast, a refused login: an audit row and a failure each."""
    world.authd.stop()
    world.start_authenticator(args=["--address-failures", "3"])
    world.enroll("alice", "finger-A")
    rows = len(world.authd.audit_rows())
    for _ in range(10):
        answer = world.authd.request("GET", "/v1/login")
        assert answer.status == 405 and answer.headers["allow"] == "POST"
    for _ in range(5):
        login = world.login("alice", scans=["finger-A"])  # each one warms up with a GET
        assert login.name == "PAM_SUCCESS", login
    added = world.authd.audit_rows()[rows:]
    assert [(r["event"], r["outcome"]) for r in added] == [("login", "accept")] * 5, added

    for _ in range(3):
        answer = world.authd.request("POST", "/v1/login", body=b"", headers={"Content-Type": "application/json"})
        assert answer.status == 400
    added = world.authd.audit_rows()[rows + 5:]
    assert [(r["event"], r["outcome"], r["reason"]) for r in added] == [("login", "deny", "invalid_json")] * 3, added
    assert world.authd.request("POST", "/v1/login", body=b"", headers={"Content-Type": "application/json"}).status == 429
