"""Device keys in the TPM (issue 14, the host's half), on real software TPMs: `fingerauth
enroll --store tpm` makes the key inside swtpm and registers it with its attestation (EK
certificate, credential activation, TPM2_Certify); the real fingerauthd checks it against
swtpm's CA only; the login goes through real libpam, the virtual reader and the helper,
which signs inside the TPM. A second swtpm (another machine) and a cleared TPM cannot use
the key file: the module falls through to the password, and `status` says what to do."""

import base64
import hashlib
import json
import os
import stat
import sys

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.cli import run, server_keys, status_lines  # noqa: E402
from support.recorder import RecordingProxy  # noqa: E402
from support.swtpm import SoftwareTPM, available as swtpm_available, ek_ca_bundle  # noqa: E402
from support.vreader import enroll_commands  # noqa: E402
from support.world import AUDIENCE, PASSWORDS, World  # noqa: E402

pytestmark = pytest.mark.skipif(not swtpm_available(), reason="swtpm or tpm2-tools missing (make test-deps)")


@pytest.fixture(scope="module")
def tpm():
    with SoftwareTPM() as machine:
        yield machine


@pytest.fixture(scope="module")
def ek_ca(tmp_path_factory):
    return ek_ca_bundle(str(tmp_path_factory.mktemp("ekca") / "ek-ca.pem"))


def tpm_world(tmp_path, ca, machine, ek_ca, authd_args=()):
    w = World(tmp_path, ca)
    w.start_authenticator(args=("--tpm-ek-ca", ek_ca) + tuple(authd_args))
    w.write_conf(tpm_tcti=machine.tcti)
    return w


@pytest.fixture
def world(tmp_path, ca, tpm, ek_ca):
    w = tpm_world(tmp_path, ca, tpm, ek_ca)
    try:
        yield w
    finally:
        w.close()


def enroll_tpm(world, user="alice", identity="finger-A", *extra):
    done = world.cli("enroll", "--user", user, "--store", "tpm", *extra, feed=enroll_commands(identity))
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def public_key(jwk):
    def number(field):
        return int.from_bytes(base64.urlsafe_b64decode(jwk[field] + "=" * (-len(jwk[field]) % 4)), "big")
    return rsa.RSAPublicNumbers(number("e"), number("n")).public_key()


def recorded_login(world, user, finger, jwk):
    """A login through a recording proxy in front of the authenticator: it must succeed; the
    token that reached the server, verified with PyJWT against `jwk` (header, claims)."""
    with RecordingProxy(world.authd.url, world.ca) as proxy:
        world.write_conf(url=proxy.url + "/v1/login")
        login = world.login(user, scans=[finger])
    assert login.name == "PAM_SUCCESS", login
    [(_, body)] = proxy.requests
    claims = jwt.decode(body["jwt"], public_key(jwk), algorithms=["RS256"], audience=AUDIENCE)
    return jwt.get_unverified_header(body["jwt"]), claims


def test_enroll_with_the_tpm_store_registers_an_attested_key_and_logs_in_with_hwk(world):
    done = enroll_tpm(world)
    shown = json.loads(world.cli("key", "show", "--user", "alice", "--json").stdout)
    kid = shown["kid"]
    assert shown["store"] == "tpm" and shown["bits"] == 2048
    assert set(shown) == {"user", "kid", "bits", "store", "jwk"} and set(shown["jwk"]) == {"kty", "n", "e"}
    assert "created device key: kid %s (RSA-2048 in the TPM)" % kid in done.stdout.splitlines()
    assert "registered key %s at %s/v1/keys: active" % (kid, world.authd.url) in done.stdout.splitlines()

    _, _, key_path = world.paths("alice")
    pem = key_path.read_text()
    assert pem.startswith("-----BEGIN TSS2 PRIVATE KEY-----\n")
    assert "BEGIN PRIVATE KEY" not in pem and "BEGIN RSA PRIVATE KEY" not in pem
    st = os.stat(key_path)
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 0

    [key] = [k for k in server_keys(world) if k["kid"] == kid]
    assert key["kind"] == "attested-tpm" and key["status"] == "active"
    listed = world.authd.admin("keys", "list")
    assert any(kid in line and "attested-tpm" in line for line in listed.stdout.splitlines()), listed.stdout

    header, claims = recorded_login(world, "alice", "finger-A", shown["jwk"])
    assert claims["amr"] == ["fpt", "hwk"] and claims["sub"] == "alice" and header["kid"] == kid


def test_a_tpm_reached_without_a_resource_manager_takes_login_after_login(world):
    # swtpm is reached directly (no tpm2-abrmd, no /dev/tpmrm0): whatever a login leaves
    # loaded in it stays there. A TPM holds only a few transient objects, so a helper that
    # ended without flushing its key would fail from about the fourth login on.
    enroll_tpm(world)
    for n in range(8):
        login = world.login("alice", scans=["finger-A"])
        assert login.name == "PAM_SUCCESS", (n, login, world.log_lines()[-1])


def test_a_file_key_still_says_swk(world):
    done = world.cli("enroll", "--user", "bob", "--store", "file", feed=enroll_commands("finger-B"))
    assert done.returncode == 0, done.stderr
    shown = json.loads(world.cli("key", "show", "--user", "bob", "--json").stdout)
    assert shown["store"] == "file"
    [key] = [k for k in server_keys(world) if k["kid"] == shown["kid"]]
    assert key["kind"] == "software"
    _, claims = recorded_login(world, "bob", "finger-B", shown["jwk"])
    assert claims["amr"] == ["fpt", "swk"]


UNAVAILABLE = "Fingerprint login unavailable"


def falls_to_the_password(world, reason):
    """The module cannot use the key: with the password stack behind it the password logs
    in; on its own the module answers PAM_AUTHINFO_UNAVAIL; the log line says why."""
    login = world.login("alice", password=PASSWORDS["alice"])
    assert login.name == "PAM_SUCCESS" and login.prompts == ["Password: "], login
    assert login.errors == [UNAVAILABLE], login
    alone = world.login("alice", service=world.service("fa-only", fallback=False))
    assert alone.name == "PAM_AUTHINFO_UNAVAIL" and alone.errors == [UNAVAILABLE], alone
    line = world.log_lines()[-1]
    assert reason in line, line
    return line


def test_the_key_file_on_another_machines_tpm_cannot_sign(world):
    enroll_tpm(world)
    own = world.settings["tpm_tcti"]
    with SoftwareTPM() as other:
        world.write_conf(tpm_tcti=other.tcti)
        line = falls_to_the_password(world, "TPM key unusable (foreign-key)")
        status = run(world, "status", "--user", "alice")
    assert "BEGIN" not in line
    mark, text = status_lines(status.stdout)["key"]
    assert mark == "FAIL" and "does not hold this key" in text, status.stdout
    assert "fix: fingerauth key rotate --store tpm --user alice" in status.stdout, status.stdout
    # Back on its own TPM the same file signs again.
    world.write_conf(tpm_tcti=own)
    assert world.login("alice", scans=["finger-A"]).name == "PAM_SUCCESS"


def test_cleared_tpm_falls_to_the_password_until_the_key_is_rotated(tmp_path, ca, ek_ca):
    with SoftwareTPM() as machine:
        w = tpm_world(tmp_path, ca, machine, ek_ca)
        try:
            enroll_tpm(w)
            old = w.kid("alice")
            assert w.login("alice", scans=["finger-A"]).name == "PAM_SUCCESS"
            machine.clear()
            falls_to_the_password(w, "TPM key unusable (foreign-key)")
            status = run(w, "status", "--user", "alice")
            assert status.returncode == 1
            mark, text = status_lines(status.stdout)["key"]
            assert mark == "FAIL" and "(kid %s): the TPM at %s does not hold this key" % (old, machine.tcti) in text, text
            assert "fix: fingerauth key rotate --store tpm --user alice" in status.stdout

            rotated = run(w, "key", "rotate", "--user", "alice", "--store", "tpm")
            assert rotated.returncode == 0, rotated.stdout + rotated.stderr
            new = w.kid("alice")
            assert new != old
            assert "revoked old key %s at the authenticator" % old in rotated.stdout.splitlines()
            kinds = {k["kid"]: (k["kind"], k["status"]) for k in server_keys(w)}
            assert kinds[new] == ("attested-tpm", "active") and kinds[old][1] == "revoked", kinds
            assert w.login("alice", scans=["finger-A"]).name == "PAM_SUCCESS"
        finally:
            w.close()


def test_tpm_store_without_a_tpm_is_refused_and_auto_takes_a_file(world):
    world.write_conf(tpm_tcti="swtpm:host=127.0.0.1,port=1")
    refused = run(world, "key", "create", "--user", "carol", "--store", "tpm")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.startswith("fingerauth: cannot create a TPM key at swtpm:host=127.0.0.1,port=1: "), refused.stderr
    _, _, key_path = world.paths("carol")
    assert not key_path.exists()
    auto = run(world, "key", "create", "--user", "carol", "--store", "auto")
    assert auto.returncode == 0, auto.stderr
    assert auto.stdout.splitlines()[0].endswith("(RSA-3072)")
    assert json.loads(run(world, "key", "show", "--user", "carol", "--json").stdout)["store"] == "file"
    assert run(world, "key", "create", "--user", "carol", "--store", "tpm", "--bits", "3072", "--force").returncode == 2


def test_auto_takes_a_tpm_that_answers_with_an_ek_certificate_and_the_default_is_a_file(world):
    assert run(world, "key", "create", "--user", "carol").returncode == 0
    assert json.loads(run(world, "key", "show", "--user", "carol", "--json").stdout)["store"] == "file"
    world.write_conf(key_store="auto")
    done = run(world, "key", "create", "--user", "carol", "--force")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].endswith("(RSA-2048 in the TPM)"), done.stdout
    assert json.loads(run(world, "key", "show", "--user", "carol", "--json").stdout)["store"] == "tpm"


def test_a_tpm_key_is_refused_by_an_authenticator_that_does_not_check_attestation(tmp_path, ca, tpm):
    w = World(tmp_path, ca)
    try:
        w.start_authenticator()
        w.write_conf(tpm_tcti=tpm.tcti)
        done = w.cli("enroll", "--user", "alice", "--store", "tpm", feed=enroll_commands("finger-A"))
        assert done.returncode == 1
        assert ("fingerauth: enrolled, but the key is not registered: the authenticator does not check TPM attestation "
                "(its admin starts fingerauthd with --tpm-ek-ca)") in done.stderr, done.stderr
        assert server_keys(w) == []
    finally:
        w.close()


def test_require_hardware_keys_takes_the_tpm_key_and_refuses_a_file_key(tmp_path, ca, tpm, ek_ca):
    w = tpm_world(tmp_path, ca, tpm, ek_ca, authd_args=("--require-hardware-keys", "yes"))
    try:
        enroll_tpm(w)
        assert w.login("alice", scans=["finger-A"]).name == "PAM_SUCCESS"
        done = w.cli("enroll", "--user", "bob", "--store", "file", feed=enroll_commands("finger-B"))
        assert done.returncode == 1
        assert ("the authenticator accepts only attested TPM keys (require-hardware-keys); "
                "make one: fingerauth key rotate --store tpm --user bob") in done.stderr, done.stderr
    finally:
        w.close()


def test_tpm_in_lockout_or_gone_falls_to_the_password_before_the_finger(tmp_path, ca, ek_ca):
    with SoftwareTPM() as machine:
        w = tpm_world(tmp_path, ca, machine, ek_ca)
        try:
            enroll_tpm(w)
            # One wrong password on a DA-protected NV index, with maxTries 1: lockout.
            machine.tools("tpm2_dictionarylockout", "--setup-parameters", "--max-tries=1",
                          "--recovery-time=600", "--lockout-recovery-time=600")
            machine.tools("tpm2_nvdefine", "0x1500016", "-C", "o", "-s", "32", "-a", "authread|authwrite", "-p", "right")
            wrong = machine.tools("tpm2_nvread", "0x1500016", "-C", "0x1500016", "-P", "wrong", "-s", "1", check=False)
            assert wrong.returncode != 0
            falls_to_the_password(w, "TPM key unusable (lockout)")
            mark, text = status_lines(run(w, "status", "--user", "alice").stdout)["key"]
            assert mark == "FAIL" and "is in dictionary-attack lockout" in text, text
            machine.tools("tpm2_dictionarylockout", "--clear-lockout")
            assert w.login("alice", scans=["finger-A"]).name == "PAM_SUCCESS"

            machine.stop()
            falls_to_the_password(w, "TPM key unusable (unreachable)")
            status = run(w, "status", "--user", "alice")
            mark, text = status_lines(status.stdout)["key"]
            assert mark == "FAIL" and "no TPM answers at %s" % machine.tcti in text, text
            assert "fix: check tpm_tcti in the configuration" in status.stdout
        finally:
            w.close()


def test_the_callers_tss_log_variables_do_not_reach_the_tpm_code(world, tmp_path):
    """tpm2-tss reads TSS2_LOG and TSS2_LOGFILE from the environment; a caller of a setuid
    host could point them at a file of its choice. The helper runs with an empty
    environment and sets its own: the caller's file is never created."""
    enroll_tpm(world)
    target = tmp_path / "caller-chosen.log"
    login = world.login("alice", scans=["finger-A"],
                        env={"TSS2_LOG": "all+trace", "TSS2_LOGFILE": str(target)})
    assert login.name == "PAM_SUCCESS", login
    assert not target.exists()


def test_key_ek_prints_the_ek_the_tpm_tools_name_and_the_authenticator_pins(world, tpm, tmp_path):
    """`fingerauth key ek` (issue 32): the SHA-256 of the EK's public key (DER
    SubjectPublicKeyInfo), the same as `sha256sum` of `tpm2_readpublic -f der` of the EK the
    TPM makes from its template, and what the authenticator pins for the host when its
    first key is attested; the admin provisions it as printed."""
    done = world.cli("key", "ek")
    assert done.returncode == 0, done.stderr
    ek = done.stdout.strip()
    assert len(ek) == 64 and all(c in "0123456789abcdef" for c in ek), done.stdout
    context, der = str(tmp_path / "ek.ctx"), str(tmp_path / "ek.der")
    tpm.tools("tpm2_createek", "-c", context, "-G", "rsa", "-u", str(tmp_path / "ek.pub"))
    tpm.tools("tpm2_readpublic", "-c", context, "-f", "der", "-o", der)
    tpm.tools("tpm2_flushcontext", "-t")  # swtpm has no resource manager: free its three object slots
    with open(der, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == ek
    shown = json.loads(world.cli("key", "ek", "--json").stdout)
    assert shown["ek"] == ek and shown["host"] == "testhost" and shown["certificate_subject"], shown

    enroll_tpm(world)
    hosts = {h["host"]: h for h in json.loads(world.authd.admin("hosts", "list", "--json").stdout)}
    assert (hosts["testhost"]["ek"]["sha256"], hosts["testhost"]["ek"]["source"]) == (ek, "tofu")
    assert [k["ek"] for k in server_keys(world)] == [ek]
    provisioned = world.authd.admin("hosts", "add-ek", "testhost", ek)
    assert provisioned.returncode == 0 and provisioned.stdout == "EK of testhost: tofu %s -> admin %s\n" % (ek, ek)
    assert world.login("alice", scans=["finger-A"]).name == "PAM_SUCCESS"

    # Without a TPM at tpm_tcti it says so.
    world.write_conf(tpm_tcti="swtpm:host=127.0.0.1,port=9")
    missing = world.cli("key", "ek")
    assert missing.returncode == 1 and "cannot read the EK certificate of the TPM at swtpm:host=127.0.0.1,port=9" in missing.stderr


def test_enrolling_with_another_machines_tpm_is_refused_and_says_what_to_do(world, tmp_path):
    """Issue 32: the host's first attestation pinned its TPM's EK; a TPM of another machine
    (root took the token there) cannot register a key for the host, and `fingerauth` says
    why and what the admin checks."""
    enroll_tpm(world)
    with SoftwareTPM() as other:
        world.write_conf(tpm_tcti=other.tcti)
        done = world.cli("enroll", "--user", "bob", "--store", "tpm", feed=enroll_commands("finger-B"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the authenticator has another TPM's endorsement key pinned for testhost" in done.stderr, done.stderr
    assert "fingerauthd hosts add-ek testhost HASH" in done.stderr
    assert [k["user"] for k in server_keys(world)] == ["alice"]
    rows = [r for r in world.authd.audit_rows() if r["reason"] == "ek_mismatch"]
    assert [(r["event"], r["user"], r["host"]) for r in rows] == [("attest_challenge", "bob", "testhost")], rows


def test_a_tpm_key_logs_in_offline_within_a_grant_for_hardware_keys_and_its_record_verifies(world):
    """Offline grants (issue 36) with a TPM key: the policy grants to hardware keys only; with
    the authenticator stopped the TPM signs the offline record after the finger, and the
    authenticator verifies it with the registered key at the next contact."""
    from test_offline_grants import OFFLINE_TEXT, Offline
    offline = Offline(world)
    enroll_tpm(world)
    offline.rule(action="require-hardware-key")
    offline.online()
    assert offline.grant_file.exists()
    offline.restart(stop_only=True)
    login = offline.offline()
    assert login.name == "PAM_SUCCESS", login
    assert OFFLINE_TEXT.match(login.infos[-1]), login.infos
    offline.restart()
    offline.online()
    [row] = [r for r in world.authd.audit_rows() if r["event"] == "offline_login"]
    assert (row["user"], row["kid"], row["outcome"]) == ("alice", world.kid("alice"), "accept")
