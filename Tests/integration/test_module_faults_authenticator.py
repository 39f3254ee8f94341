"""The authenticator failing or lying: slow, 5xx, a yes for someone else, nonsense, a
redirect, the wrong certificate, plain http, proxies. Never PAM_SUCCESS."""

import json
import os

import pytest

from support.fakeauth import FakeAuthenticator, SilentServer, accept_as, answer, closed_port_url, issue_server_cert
from support.tls import make_ca

REFUSED = "Fingerprint login refused by the authenticator"
NOT_HERE = "Fingerprint login not allowed here by the authenticator's policy"
UNREACHABLE = "Fingerprint login unavailable: authenticator not reachable"


def login_against(world, url, reachable=True):
    """A login with the finger on the reader; for an authenticator that cannot be reached
    (`reachable=False`) nobody is asked for a finger, so none is put on the reader."""
    world.enroll("alice", "finger-A")
    world.write_conf(url=url + "/v1/login")
    return world.login("alice", scans=["finger-A"] if reachable else [], service=world.service("fa-only", fallback=False))


def test_fake_that_accepts_properly_succeeds(world):
    # The stand-in itself works: the failures below are the module's doing.
    with FakeAuthenticator(world.ca.server_cert, world.ca.server_key, accept_as()) as fake:
        login = login_against(world, fake.url)
    assert login.name == "PAM_SUCCESS", login


def test_answer_slower_than_the_total_timeout(world):
    with FakeAuthenticator(world.ca.server_cert, world.ca.server_key, accept_as(), delay=7) as fake:
        login = login_against(world, fake.url)
    assert login.name == "PAM_AUTHINFO_UNAVAIL" and login.errors == [UNREACHABLE], login
    assert "timed out" in world.log_lines()[-1]
    assert login.seconds < 5 + 1.5, login.seconds


def test_server_error(world):
    with FakeAuthenticator(world.ca.server_cert, world.ca.server_key, answer(500, {"error": "boom"})) as fake:
        login = login_against(world, fake.url)
    assert login.name == "PAM_AUTHINFO_UNAVAIL" and login.errors == [UNREACHABLE], login
    assert "answered 500" in world.log_lines()[-1]


def test_authenticator_unavailable_before_the_scan_asks_for_no_finger(world):
    """503 to the helper's warm-up request (its database down, a gateway with nobody behind
    it): the password at once, nobody asked for a finger, no token sent."""
    with FakeAuthenticator(world.ca.server_cert, world.ca.server_key, accept_as(), get_status=503) as fake:
        login = login_against(world, fake.url, reachable=False)
    assert login.name == "PAM_AUTHINFO_UNAVAIL" and login.infos == [] and login.errors == [UNREACHABLE], login
    assert fake.requests == 0
    assert "authenticator answered 503" in world.log_lines()[-1]


def test_yes_for_another_user_is_refused(world):
    with FakeAuthenticator(world.ca.server_cert, world.ca.server_key, accept_as("mallory")) as fake:
        login = login_against(world, fake.url)
    assert login.name == "PAM_AUTH_ERR" and login.errors == [REFUSED], login
    assert "accepted another user" in world.log_lines()[-1]


def test_yes_for_another_token_is_refused(world):
    behaviour = lambda claims: (200, {}, b'{"ok":true,"sub":"%s","jti":"other"}' % claims["sub"].encode())  # noqa: E731
    with FakeAuthenticator(world.ca.server_cert, world.ca.server_key, behaviour) as fake:
        login = login_against(world, fake.url)
    assert login.name == "PAM_AUTH_ERR", login


def test_yes_for_another_key_is_refused(world):
    behaviour = lambda claims: (200, {}, json.dumps({"ok": True, "sub": claims["sub"], "jti": claims["jti"],  # noqa: E731
                                                     "kid": "another-key"}).encode())
    with FakeAuthenticator(world.ca.server_cert, world.ca.server_key, behaviour) as fake:
        login = login_against(world, fake.url)
    assert login.name == "PAM_AUTH_ERR" and login.errors == [REFUSED], login
    assert "accepted another key" in world.log_lines()[-1]


@pytest.mark.parametrize("status,error,text", [
    (403, "policy_denied", NOT_HERE),
    # Worded like a policy refusal, but another code (or the policy's code with another
    # status): the login helper sends the code, and the module shows what the code says.
    (403, "policy_denied_for_maintenance", REFUSED),
    (403, "policy_denied, rule 1", REFUSED),
    (401, "policy_denied", REFUSED),
    (401, "key_revoked", REFUSED),
])
def test_the_refusals_code_not_its_wording_chooses_the_text(world, status, error, text):
    with FakeAuthenticator(world.ca.server_cert, world.ca.server_key, answer(status, {"error": error})) as fake:
        login = login_against(world, fake.url)
    assert login.name == "PAM_AUTH_ERR" and login.errors == [text], login
    assert "authenticator refused (%d: %s)" % (status, error) in world.log_lines()[-1]


def test_unparseable_answer(world):
    with FakeAuthenticator(world.ca.server_cert, world.ca.server_key, answer(200, raw=b"<html>ok</html>")) as fake:
        login = login_against(world, fake.url)
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert "unreadable body" in world.log_lines()[-1]


def test_redirect_is_not_followed(world):
    redirect = answer(302, {}, headers={"Location": world.authd.url + "/v1/login"})
    with FakeAuthenticator(world.ca.server_cert, world.ca.server_key, redirect) as fake:
        login = login_against(world, fake.url)
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert "redirected (302)" in world.log_lines()[-1]
    assert not [r for r in world.authd.audit_rows() if r.get("event") == "login"]


def test_certificate_from_another_ca(world, tmp_path):
    other = make_ca(str(tmp_path / "other-ca"))
    with FakeAuthenticator(other.server_cert, other.server_key, accept_as()) as fake:
        login = login_against(world, fake.url, reachable=False)
    assert login.name == "PAM_AUTHINFO_UNAVAIL" and fake.requests == 0, login
    assert "TLS failure" in world.log_lines()[-1]


def test_certificate_for_another_name(world, tmp_path):
    cert, key = issue_server_cert(world.ca, str(tmp_path / "wrong-name"), "DNS:wrong.example")
    with FakeAuthenticator(cert, key, accept_as()) as fake:
        login = login_against(world, fake.url, reachable=False)
    assert login.name == "PAM_AUTHINFO_UNAVAIL" and fake.requests == 0, login
    assert "TLS failure" in world.log_lines()[-1]


def issue_dated_cert(ca, directory, not_before, not_after):
    """A server certificate for 127.0.0.1 signed by `ca`, valid from `not_before` to
    `not_after` (datetimes): what `openssl x509 -req` cannot date in the past."""
    import ipaddress
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    os.makedirs(directory, exist_ok=True)
    ca_key = serialization.load_pem_private_key(open(ca.ca_key, "rb").read(), password=None)
    ca_cert = x509.load_pem_x509_certificate(open(ca.ca_cert, "rb").read())
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dated")]))
            .issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before).not_valid_after(not_after)
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
            .sign(ca_key, hashes.SHA256()))
    cert_path, key_path = os.path.join(directory, "s.pem"), os.path.join(directory, "s.key")
    open(cert_path, "wb").write(cert.public_bytes(serialization.Encoding.PEM))
    open(key_path, "wb").write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                 serialization.NoEncryption()))
    os.chmod(key_path, 0o600)
    return cert_path, key_path


@pytest.mark.parametrize("days", [(-30, -1), (1, 30)], ids=["expired", "not-yet-valid"])
def test_certificate_outside_its_dates(world, tmp_path, days):
    import datetime
    now = datetime.datetime.now(datetime.timezone.utc)
    cert, key = issue_dated_cert(world.ca, str(tmp_path / "dated"), now + datetime.timedelta(days=days[0]),
                                 now + datetime.timedelta(days=days[1]))
    with FakeAuthenticator(cert, key, accept_as()) as fake:
        login = login_against(world, fake.url, reachable=False)
    assert login.name == "PAM_AUTHINFO_UNAVAIL" and fake.requests == 0, login
    line = world.log_lines()[-1]
    reason = "certificate has expired" if days[1] < 0 else "certificate is not yet valid"
    assert "TLS failure" in line and reason in line, line


def test_pinned_key_mismatch(world):
    world.enroll("alice", "finger-A")
    world.write_conf(pinned_pubkey="sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
    login = world.login("alice", service=world.service("fa-only", fallback=False))
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert "TLS failure" in world.log_lines()[-1]


def test_plain_http_to_another_host_is_a_configuration_error(world):
    world.enroll("alice", "finger-A")
    world.write_conf(url="http://auth.example.com/v1/login", allow_http="yes")
    login = world.login("alice", service=world.service("fa-only", fallback=False))
    assert login.name == "PAM_SERVICE_ERR", login
    fallback = world.login("alice", password="alice-password")
    assert fallback.name == "PAM_SUCCESS" and fallback.prompts == ["Password: "], fallback


def test_plain_http_to_loopback_needs_allow_http(world):
    world.enroll("alice", "finger-A")
    world.write_conf(url="http://127.0.0.1:9/v1/login")
    assert world.login("alice", service=world.service("fa-only", fallback=False)).name == "PAM_SERVICE_ERR"


def test_proxy_variables_are_ignored(world):
    world.enroll("alice", "finger-A")
    proxy = closed_port_url().replace("https", "http")
    env = {"https_proxy": proxy, "HTTPS_PROXY": proxy, "http_proxy": proxy, "ALL_PROXY": proxy, "no_proxy": ""}
    login = world.login("alice", scans=["finger-A"], env=env, service=world.service("fa-only", fallback=False))
    assert login.name == "PAM_SUCCESS", login


def test_silent_authenticator_is_cut_off(world):
    with SilentServer() as silent:
        login = login_against(world, silent.url, reachable=False)
    assert login.name == "PAM_AUTHINFO_UNAVAIL" and login.errors == [UNREACHABLE], login
    assert login.seconds < 5 + 1.5, login.seconds


def test_refused_connection_falls_over_fast(world):
    login = login_against(world, closed_port_url(), reachable=False)
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert "cannot connect" in world.log_lines()[-1]
    # Nobody was asked for a finger: the whole login in well under a second.
    assert login.infos == [] and login.errors == [UNREACHABLE], login
    assert login.seconds < 1.0, login.seconds
    assert os.path.exists(world.module_log)
