"""Remote approval as its three parties speak it to a real fingerauthd: the server that
asks (its host key), the workstation that watches and the person who decides (the user's
device key). Tokens are made here with PyJWT, exactly as the wire format says."""

import base64
import json
import os
import time

from test_authenticator import DeviceKey, claims

HOST_PROOF_TYP = "fingerauth-host-proof+jwt"
REQUEST_TYP = "fingerauth-approval-request+jwt"
HOST_CALL_TYP = "fingerauth-host+jwt"
WATCH_TYP = "fingerauth-watch+jwt"
DECISION_TYP = "fingerauth-approval+jwt"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def nonce():
    return b64url(os.urandom(18))


class Parties:
    """The servers (host keys), workstations (device keys) and their tokens, against one
    `Authd`. Every token made is remembered, so that a test can check none reached a log."""

    def __init__(self, authd):
        self.authd = authd
        self.tokens = {}
        self.secrets = []

    def token_for(self, host):
        if host not in self.tokens:
            self.tokens[host] = self.authd.create_token(host)
            self.secrets.append(self.tokens[host])
        return self.tokens[host]

    def _sign(self, key, document, typ, kid=None):
        signed = key.sign(document, kid=kid, headers={"typ": typ})
        self.secrets.append(signed)
        return signed

    # -- registration ------------------------------------------------------------------

    def host_key(self, host):
        """A host key registered for `host` at POST /v1/hosts/keys."""
        key = DeviceKey()
        proof = self._sign(key, claims(sub=host, iss=host, aud=self.authd.audience, service=None, amr=None),
                           HOST_PROOF_TYP)
        answer = self.authd.post_json("/v1/hosts/keys", {"host": host, "jwk": key.jwk, "proof": proof},
                                      token=self.token_for(host))
        assert answer.status == 201, (answer.status, answer.body)
        key.host = host
        return key

    def device_key(self, user, workstation):
        """A device key of `user` registered on `workstation` at POST /v1/keys."""
        key = DeviceKey()
        proof = self._sign(key, claims(sub=user, iss=workstation, aud=self.authd.audience),
                           "fingerauth-proof+jwt")
        answer = self.authd.post_json("/v1/keys", {"user": user, "host": workstation, "jwk": key.jwk,
                                                   "proof": proof}, token=self.token_for(workstation))
        assert answer.status == 201, (answer.status, answer.body)
        key.user = user
        key.host = workstation
        return key

    # -- the server that asks ----------------------------------------------------------

    def request_token(self, key, user, service="sudo", rhost="10.0.0.5", tty="pts/3", session=None, ttl=30,
                      typ=REQUEST_TYP, iss=None, **changes):
        document = claims(sub=user, iss=iss or key.host, aud=self.authd.audience, ttl=ttl, service=service,
                          amr=None, rhost=rhost, tty=tty, nonce=session or nonce(), **changes)
        return self._sign(key, document, typ), document

    def request(self, key, user, source=None, **fields):
        """POST /v1/approvals; the answer, with `.claims` the request's claims."""
        token, document = self.request_token(key, user, **fields)
        answer = self.authd.post_json("/v1/approvals", {"jwt": token}, source=source)
        answer.claims = document
        return answer

    def host_call(self, key, approval, ttl=30):
        return self._sign(key, claims(sub=key.host, iss=key.host, aud=self.authd.audience, ttl=ttl, service=None,
                                      amr=None, approval=approval), HOST_CALL_TYP)

    def state(self, key, approval, wait=0, timeout=10):
        path = "/v1/approvals/%s%s" % (approval, "?wait=%d" % wait if wait else "")
        return self.authd.request("GET", path, headers={"Authorization": "Bearer " + self.host_call(key, approval)},
                                  timeout=timeout)

    def withdraw(self, key, approval):
        return self.authd.request("DELETE", "/v1/approvals/" + approval,
                                  headers={"Authorization": "Bearer " + self.host_call(key, approval)})

    # -- the workstation ---------------------------------------------------------------

    def watch_token(self, key, ttl=120, now=None):
        return self._sign(key, claims(sub=key.user, iss=key.host, aud=self.authd.audience, ttl=ttl, now=now,
                                      service=None, amr=None), WATCH_TYP)

    def watch(self, key, have="-", wait=0, token=None, timeout=10):
        path = "/v1/approvals/watch?have=%s%s" % (have, "&wait=%d" % wait if wait else "")
        token = token or self.watch_token(key)
        return self.authd.request("GET", path, headers={"Authorization": "Bearer " + token}, timeout=timeout)

    def decision_token(self, key, shown, decision="approve", now=None, ttl=30, **changes):
        """A decision on `shown` (an approval as the watch delivered it)."""
        document = claims(sub=key.user, iss=key.host, aud=self.authd.audience, ttl=ttl, now=now, service=None,
                          amr=None, approval=shown["id"], nonce=shown["nonce"], host=shown["host"],
                          rhost=shown["rhost"], code=shown["code"], decision=decision)
        document["service"] = shown["service"]
        if shown.get("caller"):
            document["caller"] = shown["caller"]
        for name, value in changes.items():
            if value is None:
                document.pop(name, None)
            else:
                document[name] = value
        return self._sign(key, document, DECISION_TYP)

    def decide(self, key, shown, approval=None, token=None, **fields):
        token = token or self.decision_token(key, shown, **fields)
        return self.authd.post_json("/v1/approvals/%s/decision" % (approval or shown["id"]), {"jwt": token})

    def shown(self, key):
        """The one approval the workstation's watch shows now."""
        answer = self.watch(key)
        assert answer.status == 200, (answer.status, answer.body)
        approvals = answer.json()["approvals"]
        assert len(approvals) == 1, approvals
        return approvals[0]


def approving_workstation(world, workstation, args=()):
    """Starts `world`'s authenticator (`args`: extra `serve` flags) with a policy that allows
    remote approval, and makes the world the workstation `workstation` (its token and
    `host_id`); the caller enrolls its users."""
    world.start_authenticator(args=args)
    allowed = world.authd.admin("policy", "add", "--stage", "approve", "--users", "*", "--hosts", "*",
                                "--action", "allow")
    assert allowed.returncode == 0, allowed.stderr
    world.token_path.write_text(world.authd.create_token(workstation) + "\n")
    world.write_conf(host_id=workstation)


def rows(authd, event=None, approval=None):
    """Audit rows (dicts), of `event` and/or `approval` when given."""
    found = authd.audit_rows()
    if event is not None:
        found = [r for r in found if r["event"] == event]
    if approval is not None:
        found = [r for r in found if r["approval"] == approval]
    return found


def wait_until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    return predicate()


def decoded(token):
    """The claims of a compact JWT, unverified (for assertions only)."""
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
