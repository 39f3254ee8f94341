"""TPM key attestation at the authenticator (issue 14, the server's half), against a real
software TPM: the test plays the host with tpm2-pytss — EK, AK and a TPM-resident device
key on swtpm — and the real fingerauthd checks the EK certificate against swtpm's CA, the
AK by credential activation, and the device key by TPM2_Certify over its nonce. Every
refusal is a 4xx whose reason is also the audit row's; on both stores.

And the EK bound to its host (issue 32): a second swtpm with its own EK (certified by the
same trusted CA: a genuine TPM of another machine) is refused for a host whose first
attestation pinned the first one; the admin provisions, replaces and resets pins; a policy
can require an admin-provisioned EK; two instances on one PostgreSQL pin exactly one."""

import base64
import datetime
import hashlib
import json
import os
import subprocess
import sys
import threading

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.authd import Authd, build_dir  # noqa: E402
from support.swtpm import SoftwareTPM, available as swtpm_available, ek_ca_bundle  # noqa: E402
from test_authenticator_abuse import grant  # noqa: E402
from test_authenticator import AUDIENCE, PROOF_TYP, DeviceKey, b64url, claims, int_bytes  # noqa: E402
from test_policy import admin_ok, db, server  # noqa: E402,F401  (store fixtures: sqlite and postgresql)

try:
    from support.tpm_host import TPMHost
except ImportError:  # python3-tpm2-pytss missing: make test-deps installs it
    TPMHost = None

pytestmark = [
    pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauthd"), os.X_OK),
                       reason="no fingerauthd in %s" % build_dir()),
    pytest.mark.skipif(not swtpm_available() or TPMHost is None,
                       reason="swtpm, tpm2-tools or python3-tpm2-pytss missing (make test-deps)"),
]

HOSTNAME = "tpmhost1"


def unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.fixture(scope="module")
def tpm():
    with SoftwareTPM() as machine:
        yield machine


@pytest.fixture(scope="module")
def ca_bundle(tpm, tmp_path_factory):
    return ek_ca_bundle(str(tmp_path_factory.mktemp("ekca") / "ek-ca.pem"))


@pytest.fixture
def host(tpm):
    with TPMHost(tpm.tcti, ek_der=tpm.ek_certificate_der()) as machine:
        yield machine


def kid_of(jwk):
    canonical = '{"e":"%s","kty":"RSA","n":"%s"}' % (jwk["e"], jwk["n"])
    return b64url(hashlib.sha256(canonical.encode("ascii")).digest())


class TPMKey:
    """The host's TPM device key as the registration and login see it: JWK, kid, JWTs
    signed inside the TPM."""

    def __init__(self, machine, fixed=True):
        self.machine = machine
        self.public = machine.create_device_key(fixed=fixed)
        n = machine.device_key_modulus()
        e = machine.device_key_exponent()
        self.jwk = {"kty": "RSA", "n": b64url(n), "e": b64url(int_bytes(e))}
        self.kid = kid_of(self.jwk)

    def sign(self, document, typ="JWT"):
        header = {"alg": "RS256", "typ": typ, "kid": self.kid}
        signing_input = "%s.%s" % (b64url(json.dumps(header).encode()), b64url(json.dumps(document).encode()))
        return signing_input + "." + b64url(self.machine.sign_rs256(signing_input.encode("ascii")))

    def proof(self, document):
        return self.sign(document, typ=PROOF_TYP)


def challenge(authd, token, machine, user="alice", host=HOSTNAME, ak_public=None, ek=None):
    return authd.post_json("/v1/keys/challenge", {
        "user": user, "host": host,
        "ek_certificate": b64url(ek if ek is not None else machine.ek_certificate()),
        "ak_public": b64url(ak_public if ak_public is not None else machine.ak_public)}, token=token)


def attestation_for(machine, answer, nonce=None, credential=None, key_public=None):
    """What the host sends with the registration: the unwrapped secret and the
    certification of the loaded device key over the challenge's nonce."""
    document = answer.json()
    secret = machine.activate(unb64(document["credential_blob"]), unb64(document["encrypted_secret"]))
    attest, signature = machine.certify(nonce if nonce is not None else unb64(document["nonce"]))
    return {"challenge": document["challenge"], "credential": b64url(credential if credential is not None else secret),
            "key_public": b64url(key_public if key_public is not None else machine.key_public),
            "certify_info": b64url(attest), "certify_signature": b64url(signature)}


def register(authd, token, key, attestation=None, user="alice", host=HOSTNAME):
    body = {"user": user, "host": host, "jwk": key.jwk, "proof": key.proof(claims(sub=user, iss=host))}
    if attestation is not None:
        body["attestation"] = attestation
    return authd.post_json("/v1/keys", body, token=token)


def last_row(authd, event):
    rows = [r for r in authd.audit_rows() if r["event"] == event]
    assert rows, authd.audit_rows()
    return rows[-1]


def keys_by_kid(authd):
    return {k["kid"]: k for k in json.loads(admin_ok(authd, "keys", "list", "--json"))}


def test_tpm_key_is_registered_as_attested_and_its_hwk_login_is_accepted(tmp_path, db, host, ca_bundle):
    with Authd(tmp_path / "a", db=db, args=("--tpm-ek-ca", ca_bundle)) as authd:
        token = authd.create_token(HOSTNAME)
        host.create_ak()
        key = TPMKey(host)
        answer = challenge(authd, token, host)
        assert answer.status == 200, answer
        document = answer.json()
        assert document["expires_in"] == 120 and len(unb64(document["nonce"])) == 32
        created = register(authd, token, key, attestation_for(host, answer))
        assert created.status == 201, created
        assert created.json() == {"kid": key.kid, "status": "active"}
        assert keys_by_kid(authd)[key.kid]["kind"] == "attested-tpm"
        table = admin_ok(authd, "keys", "list")
        assert table.splitlines()[0].split()[-2:] == ["KIND", "EK"]
        assert [line for line in table.splitlines() if key.kid in line][0].split()[-2] == "attested-tpm"
        login = key.sign(claims(sub="alice", iss=HOSTNAME, amr=["fpt", "hwk"]))
        accepted = authd.post_json("/v1/login", {"jwt": login})
        assert accepted.status == 200, accepted
        row = last_row(authd, "login")
        assert (row["outcome"], row["kid"]) == ("accept", key.kid)


def test_software_key_keeps_kind_software_and_may_not_claim_hwk(tmp_path, db, ca_bundle):
    with Authd(tmp_path / "a", db=db, args=("--tpm-ek-ca", ca_bundle)) as authd:
        token = authd.create_token(HOSTNAME)
        key = DeviceKey()
        assert register(authd, token, key).status == 201
        assert keys_by_kid(authd)[key.kid]["kind"] == "software"
        claimed = authd.post_json("/v1/login", {"jwt": key.sign(claims(sub="alice", iss=HOSTNAME, amr=["fpt", "hwk"]))})
        assert claimed.status == 401, claimed
        assert claimed.json()["error"] == "hwk_not_attested"
        row = last_row(authd, "login")
        assert (row["outcome"], row["reason"]) == ("deny", "hwk_not_attested")
        plain = authd.post_json("/v1/login", {"jwt": key.sign(claims(sub="alice", iss=HOSTNAME))})
        assert plain.status == 200, plain


def other_ca_certificate_for(ek_der):
    """The EK's own public key in a certificate of a CA nobody trusts."""
    ek_public = x509.load_der_x509_certificate(ek_der).public_key()
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "not-a-tpm-vendor")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(ek_public)
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30)).sign(ca_key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.DER)


def test_attestation_refusals_each_answer_4xx_with_their_audit_reason(tmp_path, db, host, ca_bundle):
    with Authd(tmp_path / "a", db=db, args=("--tpm-ek-ca", ca_bundle, "--address-failures", "0",
                                            "--user-failures", "0")) as authd:
        token = authd.create_token(HOSTNAME)

        def refused(answer, status, reason, event="register"):
            assert answer.status == status, (reason, answer)
            assert answer.json()["error"] == reason
            row = last_row(authd, event)
            assert (row["outcome"], row["reason"]) == ("deny", reason), row

        # EK certificate from another CA.
        host.create_ak()
        refused(challenge(authd, token, host, ek=other_ca_certificate_for(host.ek_certificate())), 403, "ek_untrusted",
                "attest_challenge")
        # Not a certificate at all.
        refused(challenge(authd, token, host, ek=b"\x30\x03\x02\x01\x01"), 400, "invalid_attestation", "attest_challenge")
        # An AK that is not restricted could sign a forged TPMS_ATTEST.
        open_ak = host.create_ak(restricted=False)
        refused(challenge(authd, token, host, ak_public=open_ak), 403, "ak_invalid", "attest_challenge")
        host.create_ak()

        # AK not activated: the answer to the credential challenge is wrong.
        key = TPMKey(host)
        answer = challenge(authd, token, host)
        refused(register(authd, token, key, attestation_for(host, answer, credential=os.urandom(32))),
                403, "activation_failed")
        # The challenge was used up by that wrong answer; the right one comes too late.
        refused(register(authd, token, key, attestation_for(host, answer)), 403, "challenge_unknown")

        # A stale nonce: the certification is of an earlier challenge.
        first = challenge(authd, token, host)
        old_nonce = unb64(first.json()["nonce"])
        second = challenge(authd, token, host)
        refused(register(authd, token, key, attestation_for(host, second, nonce=old_nonce)), 403, "nonce_mismatch")

        # A software key with an attestation made up from a genuine TPM's answer.
        software = DeviceKey()
        refused(register(authd, token, software, attestation_for(host, challenge(authd, token, host))),
                403, "key_mismatch")

        # Certify over another key: key A's public key and JWK, key B certified.
        key_a = TPMKey(host)
        proof_a = key_a.proof(claims(sub="alice", iss=HOSTNAME))
        public_a = key_a.public
        TPMKey(host)  # key B is now the loaded key that certify() certifies
        answer = challenge(authd, token, host)
        body = {"user": "alice", "host": HOSTNAME, "jwk": key_a.jwk, "proof": proof_a,
                "attestation": attestation_for(host, answer, key_public=public_a)}
        refused(authd.post_json("/v1/keys", body, token=token), 403, "key_mismatch")

        # Attributes without fixedTPM and fixedParent: a key that could be duplicated out.
        loose = TPMKey(host, fixed=False)
        refused(register(authd, token, loose, attestation_for(host, challenge(authd, token, host))),
                403, "key_attributes")

        # Another user's name on the challenge than on the registration.
        key = TPMKey(host)
        answer = challenge(authd, token, host, user="bob")
        refused(register(authd, token, key, attestation_for(host, answer)), 403, "challenge_unknown")

        # Nothing refused was stored, and no secret of a challenge reached the log.
        assert keys_by_kid(authd) == {}
        log = authd.log_text()
        assert "EK certificate of tpmhost1 refused" in log
        assert answer.json()["nonce"] not in log and answer.json()["credential_blob"] not in log


def test_require_hardware_keys_refuses_software_keys_at_registration_and_login(tmp_path, host, ca_bundle):
    workdir = tmp_path / "a"
    with Authd(workdir, args=("--tpm-ek-ca", ca_bundle)) as authd:
        token = authd.create_token(HOSTNAME)
        older = DeviceKey()
        assert register(authd, token, older).status == 201
        database = authd.db
    with Authd(tmp_path / "b", db=database, args=("--tpm-ek-ca", ca_bundle, "--require-hardware-keys", "yes")) as authd:
        software = DeviceKey()
        answer = register(authd, token, software)
        assert answer.status == 403 and answer.json()["error"] == "hardware_key_required", answer
        assert software.kid not in keys_by_kid(authd)
        login = authd.post_json("/v1/login", {"jwt": older.sign(claims(sub="alice", iss=HOSTNAME))})
        assert login.status == 403 and login.json()["error"] == "hardware_key_required", login
        assert last_row(authd, "login")["reason"] == "hardware_key_required"
        # The OAuth grant takes a login token too: the same floor.
        granted = grant(authd, older.sign(claims(sub="alice", iss=HOSTNAME)))
        assert granted.status == 403 and granted.json()["error"] == "hardware_key_required", granted
        host.create_ak()
        key = TPMKey(host)
        assert register(authd, token, key, attestation_for(host, challenge(authd, token, host))).status == 201
        hardware = authd.post_json("/v1/login", {"jwt": key.sign(claims(sub="alice", iss=HOSTNAME, amr=["fpt", "hwk"]))})
        assert hardware.status == 200, hardware
        assert grant(authd, key.sign(claims(sub="alice", iss=HOSTNAME, amr=["fpt", "hwk"]))).status == 200


def test_attestation_needs_a_configured_ek_ca_and_bounds_open_challenges(tmp_path, host, ca_bundle):
    with Authd(tmp_path / "a") as authd:
        token = authd.create_token(HOSTNAME)
        host.create_ak()
        answer = challenge(authd, token, host)
        assert answer.status == 403 and answer.json()["error"] == "attestation_not_configured", answer
        # Without a host token nothing is looked at.
        assert challenge(authd, "not-a-token", host).status == 401
    with Authd(tmp_path / "b", args=("--tpm-ek-ca", ca_bundle)) as authd:
        token = authd.create_token(HOSTNAME)
        other = authd.create_token("otherhost")
        assert challenge(authd, other, host).status == 403  # another host's token: host_mismatch
        answers = [challenge(authd, token, host).status for _ in range(5)]
        assert answers == [200, 200, 200, 200, 429], answers
        assert last_row(authd, "attest_challenge")["reason"] == "too_many_challenges"


def test_require_hardware_keys_without_an_ek_ca_or_with_a_bad_bundle_is_a_usage_error(tmp_path):
    binary = os.path.join(build_dir(), "fingerauthd")
    base = [binary, "serve", "--listen", "127.0.0.1:0", "--audience", AUDIENCE, "--db", str(tmp_path / "db")]
    result = subprocess.run(base + ["--require-hardware-keys", "yes"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "require-hardware-keys = yes needs tpm-ek-ca" in result.stderr
    empty = tmp_path / "empty.pem"
    empty.write_text("not a certificate\n")
    result = subprocess.run(base + ["--tpm-ek-ca", str(empty)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "tpm-ek-ca: trust store: no certificate in the bundle" in result.stderr
    writable = tmp_path / "writable.pem"
    writable.write_text(open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")).read()[:10])
    os.chmod(writable, 0o666)
    result = subprocess.run(base + ["--tpm-ek-ca", str(writable)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "tpm-ek-ca:" in result.stderr


def test_a_challenge_made_by_one_instance_is_answered_at_another_and_used_once(tmp_path, server, db, host, ca_bundle):
    if server is None:
        pytest.skip("a fleet needs PostgreSQL")
    args = ("--tpm-ek-ca", ca_bundle)
    with Authd(tmp_path / "a", db=db, args=args) as a, Authd(tmp_path / "b", db=db, args=args) as b:
        token = a.create_token(HOSTNAME)
        host.create_ak()
        key = TPMKey(host)
        answer = challenge(a, token, host)
        assert answer.status == 200, answer
        attestation = attestation_for(host, answer)
        created = register(b, token, key, attestation)
        assert created.status == 201, created
        assert keys_by_kid(a)[key.kid]["kind"] == "attested-tpm"
        # The same answer again, at the first instance: the challenge is gone fleet-wide.
        again = register(a, token, key, attestation)
        assert again.status == 403 and again.json()["error"] == "challenge_unknown", again
        # The per-host limit counts the challenges of every instance.
        statuses = [challenge(a if i % 2 else b, token, host).status for i in range(5)]
        assert statuses == [200, 200, 200, 200, 429], statuses
        rows = a.sql("SELECT secret_sha256, nonce FROM attestation_challenges")
        assert len(rows) == 4 and all(len(unb64(r["secret_sha256"])) == 32 for r in rows)


# -- The EK bound to the host (issue 32, point 1) ---------------------------------------------

def ek_of(machine):
    """What fingerauthd pins for a TPM: SHA-256 (hex) of its EK's public key as DER
    SubjectPublicKeyInfo, computed here from the EK certificate with `cryptography`."""
    public = x509.load_der_x509_certificate(machine.ek_certificate()).public_key()
    return hashlib.sha256(public.public_bytes(serialization.Encoding.DER,
                                              serialization.PublicFormat.SubjectPublicKeyInfo)).hexdigest()


@pytest.fixture
def other_host():
    """A second machine: its own swtpm, its own EK (certified by the same trusted CA)."""
    with SoftwareTPM() as other, TPMHost(other.tcti, ek_der=other.ek_certificate_der()) as machine:
        yield machine


def attested_key(authd, token, machine, user="alice"):
    """A TPM key of `machine` registered for `user` on HOSTNAME with its attestation."""
    machine.create_ak()
    key = TPMKey(machine)
    answer = challenge(authd, token, machine, user=user)
    if answer.status != 200:
        return key, answer
    return key, register(authd, token, key, attestation_for(machine, answer), user=user)


def hosts_by_name(authd):
    return {h["host"]: h for h in json.loads(admin_ok(authd, "hosts", "list", "--json"))}


def key_status(authd, token, kid):
    answer = authd.request("GET", "/v1/keys/" + kid, headers={"Authorization": "Bearer " + token})
    assert answer.status == 200, answer
    return answer.json()


def test_a_key_attested_by_another_tpm_is_refused_for_the_host_its_first_attestation_pinned(
        tmp_path, db, host, other_host, ca_bundle):
    with Authd(tmp_path / "a", db=db, args=("--tpm-ek-ca", ca_bundle)) as authd:
        token = authd.create_token(HOSTNAME)
        assert hosts_by_name(authd)[HOSTNAME]["ek"] is None
        key, created = attested_key(authd, token, host)
        assert created.status == 201, created
        first = ek_of(host)
        assert ek_of(other_host) != first
        # Pinned on first use, and shown as such everywhere.
        pin = hosts_by_name(authd)[HOSTNAME]["ek"]
        assert (pin["sha256"], pin["source"], pin["by"]) == (first, "tofu", None), pin
        line = [l for l in admin_ok(authd, "hosts", "list").splitlines() if l.startswith(HOSTNAME)][0]
        assert line.endswith("%s (tofu: first attestation)" % first), line
        assert keys_by_kid(authd)[key.kid]["ek"] == first
        assert [l for l in admin_ok(authd, "keys", "list").splitlines() if key.kid in l][0].split()[-1] == first
        status = key_status(authd, token, key.kid)
        assert (status["kind"], status["ek"]) == ("attested-tpm", first), status
        pinned = last_row(authd, "ek_pin")
        assert (pinned["outcome"], pinned["reason"], pinned["kid"], pinned["user"]) == \
            ("accept", "tofu: (none) -> tofu " + first, key.kid, "alice"), pinned

        # Root on the host takes its token to a machine of its own: a genuine TPM, another EK.
        stolen, refused = attested_key(authd, token, other_host, user="bob")
        assert refused.status == 403 and refused.json()["error"] == "ek_mismatch", refused
        row = last_row(authd, "attest_challenge")
        assert (row["outcome"], row["reason"], row["user"], row["host"]) == ("deny", "ek_mismatch", "bob", HOSTNAME), row
        assert stolen.kid not in keys_by_kid(authd)
        assert "is not the host's pinned EK %s (tofu)" % first in authd.log_text()
        # The host's own TPM still registers and logs in.
        again, second = attested_key(authd, token, host, user="carol")
        assert second.status == 201, second
        assert authd.post_json("/v1/login", {"jwt": again.sign(claims(sub="carol", iss=HOSTNAME, amr=["fpt", "hwk"]))}).status == 200
        # A software key is not bound to any TPM: it stays what it was (no EK).
        software = DeviceKey()
        assert register(authd, token, software, user="dave").status == 201
        assert keys_by_kid(authd)[software.kid]["ek"] is None


def test_the_admin_provisions_the_hosts_ek_over_a_tofu_pin_and_resets_it_audited(
        tmp_path, db, host, other_host, ca_bundle):
    with Authd(tmp_path / "a", db=db, args=("--tpm-ek-ca", ca_bundle)) as authd:
        token = authd.create_token(HOSTNAME)
        # The wrong TPM attests first (root on the host before its first attestation): it wins the pin.
        intruder, created = attested_key(authd, token, other_host, user="mallory")
        assert created.status == 201, created
        wrong, right = ek_of(other_host), ek_of(host)
        assert hosts_by_name(authd)[HOSTNAME]["ek"]["source"] == "tofu"
        denied = attested_key(authd, token, host)[1]
        assert denied.status == 403 and denied.json()["error"] == "ek_mismatch", denied

        # The admin pins the host's own EK (from `fingerauth key ek` on it): the intruder's key goes.
        done = authd.admin("hosts", "add-ek", HOSTNAME, right.upper())
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == ["EK of %s: tofu %s -> admin %s" % (HOSTNAME, wrong, right),
                                            "revoked %s (mallory on %s): attested by another EK" % (intruder.kid, HOSTNAME)]
        pin = hosts_by_name(authd)[HOSTNAME]["ek"]
        assert (pin["sha256"], pin["source"]) == (right, "admin") and pin["by"], pin
        assert keys_by_kid(authd)[intruder.kid]["status"] == "revoked"
        login = authd.post_json("/v1/login", {"jwt": intruder.sign(claims(sub="mallory", iss=HOSTNAME, amr=["fpt", "hwk"]))})
        assert login.status == 401 and login.json()["error"] == "key_revoked", login
        rows = [(r["event"], r["outcome"], r["reason"], r["kid"], r["peer"]) for r in authd.audit_rows()
                if r["event"] in ("ek_pin", "admin_revoke")]
        assert rows[-2:] == [("ek_pin", "accept", "by %s: tofu %s -> admin %s" % (pin["by"], wrong, right), None, "local"),
                             ("admin_revoke", "accept", "ek_repinned", intruder.kid, "local")], rows
        key, registered = attested_key(authd, token, host)
        assert registered.status == 201, registered
        assert attested_key(authd, token, other_host, user="mallory")[1].json()["error"] == "ek_mismatch"

        # Another EK over the admin's pin needs --replace; the same one changes nothing.
        other = authd.admin("hosts", "add-ek", HOSTNAME, wrong)
        assert other.returncode == 1 and "add --replace" in other.stderr, other.stderr
        same = authd.admin("hosts", "add-ek", HOSTNAME, right)
        assert same.returncode == 0 and same.stdout == "EK of %s was already provisioned: %s\n" % (HOSTNAME, right)
        assert [r["outcome"] for r in authd.audit_rows() if r["event"] == "ek_pin"][-2:] == ["deny", "accept"]
        bad = authd.admin("hosts", "add-ek", HOSTNAME, "not-a-hash")
        assert bad.returncode == 2 and "is not an EK hash" in bad.stderr

        # A reset drops the pin and the keys of the pinned EK: the next attestation pins anew.
        reset = authd.admin("hosts", "reset-ek", HOSTNAME)
        assert reset.returncode == 0, reset.stderr
        assert "revoked %s" % key.kid in reset.stdout and "pins its EK (trust on first use)" in reset.stdout
        assert hosts_by_name(authd)[HOSTNAME]["ek"] is None
        assert last_row(authd, "ek_pin")["reason"].endswith(": admin %s -> (none)" % right)
        assert attested_key(authd, token, host, user="erin")[1].status == 201
        assert hosts_by_name(authd)[HOSTNAME]["ek"]["source"] == "tofu"
        nothing = authd.admin("hosts", "reset-ek", "nohost")
        assert nothing.returncode == 1 and "has no EK pinned" in nothing.stderr


def test_a_policy_requiring_a_provisioned_ek_refuses_a_tofu_hosts_key_until_the_admin_pins_it(
        tmp_path, db, host, ca_bundle):
    with Authd(tmp_path / "a", db=db, args=("--tpm-ek-ca", ca_bundle)) as authd:
        token = authd.create_token(HOSTNAME)
        # A key registered under the pin its first attestation made.
        tofu_key, created = attested_key(authd, token, host)
        assert created.status == 201, created
        out = admin_ok(authd, "policy", "add", "--stage", "login", "--users", "*", "--hosts", HOSTNAME,
                       "--action", "require-provisioned-ek")
        login_rule = int(out.split()[2])
        out = admin_ok(authd, "policy", "add", "--stage", "registration", "--users", "*", "--hosts", HOSTNAME,
                       "--action", "require-provisioned-ek")
        registration_rule = int(out.split()[2])
        hwk = lambda key, user="alice": key.sign(claims(sub=user, iss=HOSTNAME, amr=["fpt", "hwk"]))  # noqa: E731
        refused = authd.post_json("/v1/login", {"jwt": hwk(tofu_key)})
        assert refused.status == 403 and refused.json() == {"error": "policy_denied", "rule": login_rule}, refused
        # (The host's TPM holds one device key at a time: tofu_key cannot sign after this.)
        key, denied = attested_key(authd, token, host, user="bob")
        assert denied.status == 403 and denied.json() == {"error": "policy_denied", "rule": registration_rule}, denied
        assert (last_row(authd, "register")["reason"], last_row(authd, "register")["rule"]) == ("policy_denied", registration_rule)
        software = DeviceKey()
        assert register(authd, token, software, user="carol").json()["error"] == "policy_denied"
        tested = authd.admin("policy", "test", "--user", "alice", "--host", HOSTNAME, "--service", "sudo", "--provisioned-ek")
        assert tested.returncode == 3 and "(require-provisioned-ek)" in tested.stdout, tested.stdout

        # The admin provisions the same EK: nothing is revoked, and the host's TPM keys are allowed.
        done = authd.admin("hosts", "add-ek", HOSTNAME, ek_of(host))
        assert done.returncode == 0 and "revoked" not in done.stdout, done.stdout
        assert keys_by_kid(authd)[tofu_key.kid]["status"] == "active"
        key, registered = attested_key(authd, token, host, user="bob")
        assert registered.status == 201, registered
        assert authd.post_json("/v1/login", {"jwt": hwk(key, "bob")}).status == 200
        tested = authd.admin("policy", "test", "--user", "alice", "--host", HOSTNAME, "--service", "sudo", "--provisioned-ek")
        assert tested.returncode == 0, tested.stdout
        assert authd.admin("policy", "test", "--user", "alice", "--host", HOSTNAME, "--service", "sudo",
                           "--hardware").returncode == 3


def test_two_instances_attesting_two_tpms_at_once_pin_exactly_one(tmp_path, server, db, host, other_host, ca_bundle):
    if server is None:
        pytest.skip("a fleet needs PostgreSQL")
    args = ("--tpm-ek-ca", ca_bundle)
    with Authd(tmp_path / "a", db=db, args=args) as a, Authd(tmp_path / "b", db=db, args=args) as b:
        token = a.create_token(HOSTNAME)
        # Both challenges are made before anything is pinned: only the registrations decide.
        bodies = []
        for authd, machine, user in ((a, host, "alice"), (b, other_host, "bob")):
            machine.create_ak()
            key = TPMKey(machine)
            answer = challenge(authd, token, machine, user=user)
            assert answer.status == 200, answer
            bodies.append((authd, {"user": user, "host": HOSTNAME, "jwk": key.jwk,
                                   "proof": key.proof(claims(sub=user, iss=HOSTNAME)),
                                   "attestation": attestation_for(machine, answer)}))
        answers = [None, None]
        barrier = threading.Barrier(2)

        def send(i):
            barrier.wait()
            answers[i] = bodies[i][0].post_json("/v1/keys", bodies[i][1], token=token)

        threads = [threading.Thread(target=send, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        statuses = sorted(answer.status for answer in answers)
        assert statuses == [201, 403], answers
        loser = [answer for answer in answers if answer.status == 403][0]
        assert loser.json()["error"] == "ek_mismatch"
        winner = 0 if answers[0].status == 201 else 1
        pin = hosts_by_name(b)[HOSTNAME]["ek"]
        assert (pin["sha256"], pin["source"]) == (ek_of((host, other_host)[winner]), "tofu"), pin
        assert len(a.sql("SELECT * FROM host_eks")) == 1
        reasons = sorted(str(r["reason"]) for r in a.audit_rows() if r["event"] == "register")
        assert reasons == ["None", "ek_mismatch"], reasons


def test_the_console_shows_each_keys_ek_and_each_hosts_pin_and_where_it_came_from(tmp_path, ca, db, host, ca_bundle):
    from support.console import ConsoleClient, create_admin
    with Authd(tmp_path / "a", db=db, tls=ca, args=("--tpm-ek-ca", ca_bundle, "--admin-listen", "0")) as authd:
        create_admin(authd, "ada")
        client = ConsoleClient(authd)
        assert client.sign_in("ada").status == 303
        token = authd.create_token(HOSTNAME)
        authd.create_token("web02")
        key, created = attested_key(authd, token, host)
        assert created.status == 201, created
        ek = ek_of(host)
        keys = client.get("/keys")
        [row] = keys.table_rows("keys")
        assert (row[0], row[3], row[7]) == (key.kid, "attested-tpm", ek[:16]), row
        assert 'title="%s"' % ek in keys.text
        hosts = {r[0]: r for r in client.get("/hosts").table_rows("hosts")}
        assert hosts[HOSTNAME][6] == "%s TOFU (pinned by its first attestation)" % ek[:16], hosts
        assert hosts["web02"][6] == "none: the first attestation pins it"
        assert authd.admin("hosts", "add-ek", HOSTNAME, ek).returncode == 0
        hosts = {r[0]: r for r in client.get("/hosts").table_rows("hosts")}
        assert hosts[HOSTNAME][6].startswith("%s provisioned by " % ek[:16]), hosts
        audit = client.get("/audit?event=ek_pin")
        assert [r[7] for r in audit.table_rows("audit")][-1] == "tofu: (none) -> tofu " + ek
