"""What the sections of `make bench` share: the `Bench` each one is handed, the bench's
RSA-2048 users and their pre-signed tokens, the wrk runner, and small helpers."""

import base64
import concurrent.futures
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

from support.world import HOST_ID, AUDIENCE

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


class Bench:
    """What every section is handed: `world`, the integration tests' World every login runs
    in (alice enrolled, its fingerauthd started); `ca`, the test CA; `tmp`, the run's
    temporary folder; `venv`, the one with the Python peer's packages; `results`, where the
    rows go (bench/results.py); `started`, the pid of every process the bench starts, checked
    for leftovers at the end."""

    def __init__(self, world, ca, tmp, venv, results, started):
        self.world = world
        self.ca = ca
        self.tmp = tmp
        self.venv = venv
        self.results = results
        self.started = started


def log(text):
    print("  " + text, flush=True)


def plain_env():
    """The bench's environment without the World's reader, preload and nss_wrapper settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("FP_", "LD_PRELOAD", "NSS_WRAPPER"))}


def pct(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class BenchKey:
    def __init__(self):
        from cryptography.hazmat.primitives.asymmetric import rsa
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        n = self.private.public_key().public_numbers()
        as_bytes = lambda v: v.to_bytes((v.bit_length() + 7) // 8, "big")  # noqa: E731
        self.jwk = {"kty": "RSA", "n": b64url(as_bytes(n.n)), "e": b64url(as_bytes(n.e))}
        canonical = '{"e":"%s","kty":"RSA","n":"%s"}' % (self.jwk["e"], self.jwk["n"])
        self.kid = b64url(hashlib.sha256(canonical.encode("ascii")).digest())

    def pem(self):
        from cryptography.hazmat.primitives import serialization
        return self.private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption())


def claims(sub, ttl=300):
    now = int(time.time())
    return {"iss": HOST_ID, "sub": sub, "aud": AUDIENCE, "iat": now, "nbf": now, "exp": now + ttl,
            "jti": b64url(os.urandom(16)), "amr": ["fpt", "swk"], "service": "bench"}


def _sign_chunk(pem, kid, sub, count):
    import jwt
    from cryptography.hazmat.primitives import serialization
    key = serialization.load_pem_private_key(pem, password=None)
    return [jwt.encode(claims(sub), key, algorithm="RS256", headers={"kid": kid}) for _ in range(count)]


def sign_tokens(users, count):
    """`count` tokens, every jti new, spread over `users` ({name: BenchKey}); 2 processes."""
    names = sorted(users)
    jobs = []
    per = count // len(names)
    for name in names:
        for part in range(0, per, 500):
            jobs.append((users[name].pem(), users[name].kid, name, min(500, per - part)))
    with concurrent.futures.ProcessPoolExecutor(max_workers=2) as pool:
        chunks = list(pool.map(_sign_chunk, *zip(*jobs)))
    tokens = [t for chunk in chunks for t in chunk]
    # interleave users
    return tokens[::2] + tokens[1::2]


def proc_cpu_seconds(pids):
    """(user, system) CPU seconds of these processes so far."""
    user = system_ = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            user += int(fields[11])
            system_ += int(fields[12])
        except OSError:
            pass
    tick = os.sysconf("SC_CLK_TCK")
    return user / tick, system_ / tick


def wrk(url, script, args, clients, seconds, done_dir, tmp, started, env=None):
    """Runs wrk with one of bench/wrk/*.lua; each wrk thread creates done_dir/done-N when it
    finished its share, then wrk is ended with SIGINT (it would otherwise sleep out -d).
    Returns the script's WRKJSON figures plus wrk's own CPU seconds ("cpu") and "seconds":
    first request to last counted answer (wrk's whole run if a share did not finish). `env`:
    wrk's environment (default: the bench's); its pid goes to `started`."""
    threads = max(1, min(2, clients))
    done_dir = Path(done_dir)
    for old in done_dir.glob("done-*"):
        old.unlink()
    cmd = ["wrk", "-t", str(threads), "-c", str(clients), "-d", "%ds" % seconds, "--timeout", "10s",
           "-s", str(script), url, "--", *args]
    out = open(Path(tmp) / "wrk.out", "w+")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    started.append(proc.pid)
    try:
        finished = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if not finished and len(list(done_dir.glob("done-*"))) >= threads:
                finished = True
                os.kill(proc.pid, signal.SIGINT)
            time.sleep(0.02)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    proc.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    text = out.read()
    out.close()
    match = re.search(r"^WRKJSON (.*)$", text, re.M)
    if not match:
        raise RuntimeError("wrk: %s" % text[-1500:])
    result = json.loads(match.group(1))
    result["cpu"] = usage.ru_utime + usage.ru_stime
    result["finished"] = finished
    result["seconds"] = (result["elapsed_us"] if finished and result["elapsed_us"] > 0 else result["duration_us"]) / 1e6
    return result


def write_token_files(tokens, clients, directory):
    directory.mkdir(parents=True, exist_ok=True)
    threads = max(1, min(2, clients))
    for t in range(threads):
        (directory / ("tokens-%d.txt" % (t + 1))).write_text("\n".join(tokens[t::threads]) + "\n")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The registration proof's `typ`: explicit typing (RFC 8725 §3.11) as the fingerauthd of
# issue 13 requires; a fingerauthd from before it accepts only "JWT" (or none) and answers
# 401 bad_typ, and then the proof is sent again as a plain JWT.
PROOF_TYPES = ("fingerauth-proof+jwt", "JWT")


def register_keys(authd, token, users):
    """Registers each {name: BenchKey} through the real `POST /v1/keys` (201 expected)."""
    import jwt
    for name, key in users.items():
        for typ in PROOF_TYPES:
            proof = jwt.encode(claims(name), key.private, algorithm="RS256", headers={"kid": key.kid, "typ": typ})
            reply = authd.post_json("/v1/keys", {"user": name, "host": HOST_ID, "jwk": key.jwk, "proof": proof},
                                    token=token)
            if not (reply.status == 401 and b"bad_typ" in reply.body):
                break
        if reply.status != 201:
            raise RuntimeError("registering %s: %r" % (name, reply))
