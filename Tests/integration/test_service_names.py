"""One rule for a PAM service name (`ServiceName`): 1 to 64 bytes of printable ASCII without
spaces, the rule fingerauthd applies to the `service` claim. The module maps whatever PAM
names into it; the real `fingerauth-login` refuses a request whose service breaks it (it
took spaces and non-ASCII bytes the authenticator then refused); the agent refuses them
in LOGIN."""

import base64
import os
import subprocess

import pytest

from support.world import HOST_ID

RULE = "1 to 64 printable ASCII characters without spaces"


def request(world, service, client_service=None):
    s = world.settings
    jti = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
    lines = ["user=alice", "service=" + service, "jti=" + jti, "issuer=" + HOST_ID, "url=" + s["url"],
             "audience=" + s["audience"], "cafile=" + s["cafile"], "state_dir=" + s["state_dir"],
             "virtual_reader=" + s["virtual_reader"], "timeout=5"]
    if client_service is not None:
        lines.insert(2, "client_service=" + client_service)
    return "\n".join(lines) + "\n"


def run_helper(world, text):
    return subprocess.run([str(world.build / "fingerauth-login"), "--login"], input=text.encode(),
                          capture_output=True, timeout=30, env={})


@pytest.mark.parametrize("service", ["su do", "caf\u00e9", "x" * 65])
@pytest.mark.parametrize("field", ["service", "client_service"])
def test_the_helper_refuses_a_service_the_authenticator_would_refuse(world, service, field):
    world.enroll("alice", "finger-A")
    text = request(world, service) if field == "service" else request(world, "sudo", client_service=service)
    done = run_helper(world, text)
    out = done.stdout.decode()
    assert done.returncode == 2, out
    line = 2 if field == "service" else 3
    assert out.splitlines() == ["FAIL usage request line %d: %s: not a service name (%s)" % (line, field, RULE)], out
    assert [r for r in world.authd.audit_rows() if r.get("event") == "login"] == []


def test_a_pam_service_outside_the_rule_logs_in_under_its_mapped_name(world):
    """PAM names the service (the host's word, here a pam.d file `fa-café`): the module does
    not refuse it but maps it, and the authenticator records the name it accepted."""
    world.enroll("alice", "finger-A")
    login = world.login("alice", scans=["finger-A"], service=world.service("fa-caf\u00e9", fallback=False))
    assert login.name == "PAM_SUCCESS", login
    row = [r for r in world.authd.audit_rows() if r.get("event") == "login"][-1]
    assert (row["outcome"], row["service"]) == ("accept", "fa-caf_"), row
