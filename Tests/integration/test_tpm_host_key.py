"""The host's own key in the TPM (issue 47, part 1): `fingerauth host register --store tpm`
makes this host's key inside swtpm and registers it with its attestation, challenged for
the host itself (no user); the real fingerauthd checks it against swtpm's CA, pins the
TPM's EK for the host on first use, and records the key as `attested-tpm`. The helper then
signs remote-approval requests inside the TPM: a `remote = approve` login through real
libpam is approved by alice's workstation. Another TPM's key for the same host is refused."""

import json
import os
import sys
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.approvals import Parties, rows, wait_until  # noqa: E402
from support.swtpm import SoftwareTPM, available as swtpm_available  # noqa: E402
from support.world import HOST_ID  # noqa: E402
from test_tpm_keys import ek_ca, tpm, world  # noqa: E402,F401  (fixtures)

pytestmark = pytest.mark.skipif(not swtpm_available(), reason="swtpm or tpm2-tools missing (make test-deps)")


def host_keys(world):
    listed = world.authd.admin("hosts", "keys", "--json")
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


def test_a_tpm_host_key_is_attested_pinned_and_signs_the_approval_requests(world):
    allowed = world.authd.admin("policy", "add", "--stage", "approve", "--users", "*", "--hosts", "*",
                                "--action", "allow")
    assert allowed.returncode == 0, allowed.stderr
    done = world.cli("host", "register", "--store", "tpm")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(RSA-2048 in the TPM)" in done.stdout, done.stdout
    [key] = host_keys(world)
    assert (key["host"], key["status"], key["kind"]) == (HOST_ID, "active", "attested-tpm")
    assert len(key["ek"]) == 64, key
    pinned = [r for r in world.authd.audit_rows() if r["event"] == "ek_pin"]
    assert [(r["host"], r["kid"]) for r in pinned] == [(HOST_ID, key["kid"])]
    [registered] = [r for r in world.authd.audit_rows() if r["event"] == "host_key_register"]
    assert (registered["outcome"], registered["kid"]) == ("accept", key["kid"])

    world.write_conf(remote="approve", approve_timeout="5")
    parties = Parties(world.authd)
    alice = parties.device_key("alice", "ws-alice")
    seen = []

    def workstation():
        shown = wait_until(lambda: parties.watch(alice, wait=2).json()["approvals"], timeout=10)
        seen.extend(shown)
        if shown:
            parties.decide(alice, shown[0])
    thread = threading.Thread(target=workstation)
    thread.start()
    login = world.login("alice", password="", rhost="10.0.0.5")
    thread.join(15)
    assert login.name == "PAM_SUCCESS", login
    [requested] = rows(world.authd, "approval_requested", seen[0]["id"])
    assert requested["kid"] == key["kid"], "the request was signed by the TPM host key"


def test_a_host_key_of_another_tpm_is_refused_for_the_pinned_host(world, tmp_path):
    done = world.cli("host", "register", "--store", "tpm")
    assert done.returncode == 0, done.stdout + done.stderr
    os.unlink(world.state / "host" / "host.key")
    with SoftwareTPM() as other:
        world.write_conf(tpm_tcti=other.tcti)
        again = world.cli("host", "register", "--store", "tpm")
    assert again.returncode == 1, again.stdout + again.stderr
    assert "another TPM's endorsement key pinned for %s" % HOST_ID in again.stderr, again.stderr
    assert [k["kind"] for k in host_keys(world)] == ["attested-tpm"], "the first key stays the host's"


def test_a_host_challenge_naming_a_user_too_is_refused(world):
    token = world.token_path.read_text().strip()
    answer = world.authd.post_json("/v1/keys/challenge", {"purpose": "host", "user": "alice", "host": HOST_ID,
                                                          "ek_certificate": "AA", "ak_public": "AA"},
                                   token=token)
    assert (answer.status, answer.json()["error"]) == (400, "invalid_request"), answer.body
