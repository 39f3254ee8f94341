"""`make bench`: FingerAuth's five figures and the authenticator on PostgreSQL (section 6), each against a baseline measured in this same
run, printed as one table (figure, ours, baseline, ratio). See BENCHMARKS.md.

    FINGERAUTH_BUILD=<dir with the built binaries> BENCH_VENV=<venv with uvicorn, PyJWT>
        /usr/bin/python3 bench/run.py

Built on the integration tests' World (Tests/integration/support): nss_wrapper users, a
test CA, libfprint's virtual reader, a real fingerauthd over TLS on loopback, enrollment
through the real CLI. The pam_unix and pam_fprintd baselines need a real user
(`fabench`, made here with a yescrypt hash, always removed) and fprintd on a system bus
with polkitd (started here by hand, always stopped). Nothing is left on the machine.
"""

import concurrent.futures
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import hashlib
import base64
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "Tests" / "integration"))
sys.path.insert(0, str(REPO))

from support.authd import Authd  # noqa: E402
from support.fakeauth import FakeAuthenticator, SilentServer, answer, closed_port_url  # noqa: E402
from support.tls import make_ca  # noqa: E402
from support.vreader import VirtualReader, enroll_commands  # noqa: E402
from support.postgres import Postgres  # noqa: E402
from support.world import HOST_ID, AUDIENCE, PASSWORDS, World  # noqa: E402

from bench import system  # noqa: E402

SECURITY = "/usr/lib/x86_64-linux-gnu/security"
LOGINS = int(os.environ.get("BENCH_LOGINS", "200"))
FALLOVER_REPEAT = int(os.environ.get("BENCH_FALLOVER", "30"))
TOKENS_PER_LEVEL = int(os.environ.get("BENCH_TOKENS", "6000"))
LEVEL_SECONDS = int(os.environ.get("BENCH_LEVEL_SECONDS", "20"))
STEADY_REQUESTS = int(os.environ.get("BENCH_REQUESTS", "1000000"))
MODULE_CYCLES = int(os.environ.get("BENCH_CYCLES", "10000"))
CLIENT_LEVELS = (1, 8, 64)
PG_TOKENS = int(os.environ.get("BENCH_PG_TOKENS", str(TOKENS_PER_LEVEL)))
PG_CLIENT_LEVELS = (8, 64)
ONLY = set(os.environ.get("BENCH_ONLY", "1,2,3,4,5,6").split(","))  # a subset, for development
FAKE_MATCH = "echo 'READY fake reader'\necho 'MATCH right-index-finger'"
IDENTITY = "finger-A"

rows = []  # (section, figure, ours, baseline, ratio text)
notes = []
started_pids = []


def log(text):
    print("  " + text, flush=True)


def add(section, figure, ours, baseline, unit, digits=1, ratio=None):
    fmt = "%%.%df %%s" % digits
    if ratio is None:
        ratio = (ours / baseline) if baseline else float("nan")
    rows.append((section, figure, (fmt % (ours, unit)).strip(), (fmt % (baseline, unit)).strip(),
                 "n/a" if ratio != ratio else "%.2fx" % ratio))


def pct(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


# -- the virtual reader, answering at once -------------------------------------------------

class Feeder:
    """Waits for every new virtual-reader socket and sends `commands` at once, until stopped.
    Polls every 0.5 ms, so the finger is 'on the reader' as soon as the device listens."""

    def __init__(self, path, commands):
        self.reader = VirtualReader(path)
        self.commands = list(commands)
        self.stop_event = threading.Event()
        self.fed = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop_event.is_set():
            inode = self.reader._inode()
            if inode is None or inode == self.reader.last_inode:
                time.sleep(0.0005)
                continue
            self.reader.last_inode = inode
            for command in self.commands:
                deadline = time.monotonic() + 2
                while not self.stop_event.is_set():
                    try:
                        self.reader.send(command, timeout=2)
                        break
                    except (ConnectionRefusedError, FileNotFoundError):
                        if time.monotonic() > deadline:
                            break
                        time.sleep(0.0005)
                    except OSError:
                        break
            self.fed += 1

    def stop(self):
        self.stop_event.set()
        self.thread.join(5)


# -- fa-pamtest --------------------------------------------------------------------------

def pamtest(world, service, user, repeat, env=None, extra=(), timeout=900):
    cmd = [str(world.build / "fa-pamtest"), "--timing", "--confdir", str(world.confdir), "--service", service,
           "--user", user, "--repeat", str(repeat), *extra]
    done = subprocess.run(cmd, env=env or world.env, capture_output=True, text=True, timeout=timeout)
    results = [(m.group(1), int(m.group(2))) for m in re.finditer(r"^RESULT \d+ (\S+) (\d+)$", done.stdout, re.M)]
    if len(results) != (1 if "--quiet" in extra else repeat):
        raise RuntimeError("fa-pamtest %s: %d results of %d\n%s\n%s" % (service, len(results), repeat,
                                                                        done.stdout[-1500:], done.stderr[-1500:]))
    return results, done.stdout


def success_times(name, results):
    bad = [r for r in results if r[0] != "PAM_SUCCESS"]
    if bad:
        raise RuntimeError("%s: %d of %d logins did not succeed (%s)" % (name, len(bad), len(results), bad[0][0]))
    return [us / 1000.0 for _, us in results]


def write_service(world, name, line):
    (world.confdir / name).write_text(line + "\n")
    return name


def plain_env():
    return {k: v for k, v in os.environ.items() if not k.startswith(("FP_", "LD_PRELOAD", "NSS_WRAPPER"))}


# -- 1. login latency ------------------------------------------------------------------------

def login_latency(world, bench_user, password, fprintd_socket):
    print("== 1. login latency through real libpam (%d logins each)" % LOGINS, flush=True)
    times = {}
    ours_service = world.service("fa-only", fallback=False)
    permit = write_service(world, "permit", "auth required pam_permit.so")
    unix = write_service(world, "unix", "auth required pam_unix.so")
    fprint = write_service(world, "fprintd", "auth required pam_fprintd.so max-tries=1 timeout=10")

    feeder = Feeder(world.reader.path, ["SCAN " + IDENTITY])
    try:
        pamtest(world, ours_service, "alice", 5)  # warm-up: page cache, authd
        times["ours"] = success_times("ours", pamtest(world, ours_service, "alice", LOGINS)[0])
    finally:
        feeder.stop()
    times["permit"] = success_times("pam_permit", pamtest(world, permit, "alice", LOGINS)[0])
    times["unix"] = success_times("pam_unix", pamtest(world, unix, bench_user, LOGINS, env=plain_env(),
                                                      extra=("--password", password))[0])
    feeder = Feeder(fprintd_socket, ["SLEEP 0", "SCAN finger-F"])
    try:
        pamtest(world, fprint, bench_user, 3, env=plain_env())
        times["fprintd"] = success_times("pam_fprintd", pamtest(world, fprint, bench_user, LOGINS, env=plain_env())[0])
    finally:
        feeder.stop()

    for key in times:
        log("%-8s p50 %7.2f ms  p99 %7.2f ms" % (key, statistics.median(times[key]), pct(times[key], 0.99)))
    ours50, ours99 = statistics.median(times["ours"]), pct(times["ours"], 0.99)
    for key, label in (("fprintd", "pam_fprintd (local only)"), ("unix", "pam_unix yescrypt"),
                       ("permit", "pam_permit")):
        add(1, "login p50 (vs %s)" % label, ours50, statistics.median(times[key]), "ms", 2)
        add(1, "login p99 (vs %s)" % label, ours99, pct(times[key], 0.99), "ms", 2)
    split = login_split(world, ours50)
    return ours50, times, split


def login_split(world, ours50):
    """Splits our login from separate runs (no timestamps in the module's log, Sources/
    unchanged): the module with a stand-in helper that matches at once; the real helper
    alone; `fingerauth test`'s per-step times for signing and the authenticator."""
    print("== 1b. where our login's time goes", flush=True)
    service = "fa-only"
    real_helper = world.settings["scan_helper"]
    world.fake_helper(FAKE_MATCH)
    try:
        fake = statistics.median(success_times("fake helper", pamtest(world, service, "alice", LOGINS)[0]))
    finally:
        world.write_conf(login_helper=real_helper)
    # the real helper alone, timed around the process
    feeder = Feeder(world.reader.path, ["SCAN " + IDENTITY])
    scans = []
    try:
        cmd = [real_helper, "--user", "alice", "--state-dir", str(world.state), "--virtual-reader", world.reader.path,
               "--timeout", "5"]
        for _ in range(40):
            began = time.monotonic()
            done = subprocess.run(cmd, env=world.env, capture_output=True, text=True, timeout=30)
            scans.append((time.monotonic() - began) * 1000)
            if "MATCH" not in done.stdout:
                raise RuntimeError("scan helper: %s %s" % (done.stdout, done.stderr))
        # fingerauth test: per-step ms, real helper, real authenticator
        sign, http = [], []
        for _ in range(20):
            done = world.cli("test", "--user", "alice")
            s = re.search(r"^ok\s+sign\b.*\((\d+) ms\)$", done.stdout, re.M)
            h = re.search(r"^ok\s+authenticator\b.*\((\d+) ms\)$", done.stdout, re.M)
            if not (s and h):
                raise RuntimeError("fingerauth test: %s %s" % (done.stdout[-800:], done.stderr[-800:]))
            sign.append(int(s.group(1)))
            http.append(int(h.group(1)))
    finally:
        feeder.stop()
    scan_alone = statistics.median(scans)
    sign_ms, http_ms = statistics.median(sign), statistics.median(http)
    scan_ms = ours50 - fake
    rest = fake - sign_ms - http_ms
    split = {"total": ours50, "scan": scan_ms, "scan_alone": scan_alone, "sign": sign_ms, "http": http_ms,
             "rest": rest, "fake": fake}
    log("login with the real helper p50 %.2f ms; with a stand-in helper that matches at once %.2f ms" % (ours50, fake))
    log("scan helper  %.2f ms (difference; the helper alone, timed around its process: %.2f ms)" % (scan_ms, scan_alone))
    log("signing      %.1f ms (fingerauth test, whole ms)" % sign_ms)
    log("HTTP         %.1f ms (fingerauth test: new TLS connection, POST, answer; whole ms)" % http_ms)
    log("rest         %.2f ms (PAM, config, key load, spawn of the stand-in, JSON)" % rest)
    return split


# -- 2. module cost -------------------------------------------------------------------------

def callgrind_total(world, service, repeat, outdir):
    out = Path(outdir) / ("cg.%s.%d" % (service, repeat))
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=%s" % out,
           str(world.build / "fa-pamtest"), "--confdir", str(world.confdir), "--service", service,
           "--user", "alice", "--repeat", str(repeat)]
    done = subprocess.run(cmd, env=world.env, capture_output=True, text=True, timeout=600)
    if done.stdout.count("PAM_SUCCESS") != repeat:
        raise RuntimeError("callgrind run failed: %s %s" % (done.stdout[-500:], done.stderr[-1500:]))
    text = out.read_text()
    match = re.search(r"^(?:summary|totals):\s*(\d+)", text, re.M)
    out.unlink()
    return int(match.group(1))


def cpu_per_login(world, service, repeat):
    _, stdout = pamtest(world, service, "alice", repeat, extra=("--cpu", "--quiet"))
    user, sys_ = map(int, re.search(r"^CPU (\d+) (\d+)$", stdout, re.M).groups())
    return (user + sys_) / 1000.0


LOADTIME_C = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>
int main(int argc, char **argv) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    dlclose(h);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
    return 0;
}
"""


def load_time_ms(binary, path, runs=40):
    samples = []
    for _ in range(runs):
        done = subprocess.run([binary, path], capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise RuntimeError("dlopen %s: %s" % (path, done.stderr))
        samples.append(int(done.stdout) / 1e6)
    return statistics.median(samples)


def mhz():
    try:
        values = [float(line.split(":")[1]) for line in open("/proc/cpuinfo") if line.startswith("cpu MHz")]
        return statistics.mean(values)
    except (OSError, ValueError, statistics.StatisticsError):
        return 0.0


def module_cost(world, tmp):
    print("== 2. the module's own cost", flush=True)
    world.fake_helper(FAKE_MATCH)  # the helper is a separate process anyway; callgrind does not follow it
    permit = "permit"
    try:
        ir = {}
        for service in ("fa-only", permit):
            ir[service] = (callgrind_total(world, service, 12, tmp) - callgrind_total(world, service, 2, tmp)) / 10.0
        module_ir = ir["fa-only"] - ir[permit]
        cpu = {service: (cpu_per_login(world, service, LOGINS) - cpu_per_login(world, service, 10)) / (LOGINS - 10)
               for service in ("fa-only", permit)}
    finally:
        world.write_conf(login_helper=str(world.build / "fingerauth-login"))
    module_cpu = cpu["fa-only"] - cpu[permit]
    clock = mhz()
    log("callgrind: %.2f M instructions per login in fa-pamtest with the module, %.2f M with pam_permit: module %.2f M"
        % (ir["fa-only"] / 1e6, ir[permit] / 1e6, module_ir / 1e6))
    log("getrusage (own process, children excluded): %.2f ms CPU per login with the module, %.3f ms with pam_permit"
        % (cpu["fa-only"], cpu[permit]))
    if clock and module_cpu > 0:
        log("%.2f M instructions in %.2f ms of CPU: %.2f instructions per cycle at the reported %.0f MHz"
            % (module_ir / 1e6, module_cpu, module_ir / (module_cpu * 1e-3) / (clock * 1e6), clock))
    add(2, "instructions per login in the host (vs pam_permit)", module_ir / 1e6, ir[permit] / 1e6, "M", 2)
    add(2, "CPU per login in the host, rusage (vs pam_permit)", module_cpu, cpu[permit], "ms", 3)
    ours_path = str(world.build / "pam_fingerauth.so")
    peer_path = os.path.join(SECURITY, "pam_fprintd.so")
    add(2, "module size, stripped (vs pam_fprintd.so)", os.path.getsize(ours_path) / 1024.0, os.path.getsize(peer_path) / 1024.0,
        "KiB", 0)
    source = Path(tmp) / "loadtime.c"
    source.write_text(LOADTIME_C)
    binary = str(Path(tmp) / "loadtime")
    subprocess.run(["gcc", "-O2", "-o", binary, str(source), "-ldl"], check=True)
    ours_load, peer_load = load_time_ms(binary, ours_path), load_time_ms(binary, peer_path)
    log("dlopen+dlclose in a fresh process, median of 40: ours %.2f ms, pam_fprintd.so %.2f ms" % (ours_load, peer_load))
    add(2, "module dlopen+dlclose (vs pam_fprintd.so)", ours_load, peer_load, "ms", 2)
    return module_ir, module_cpu


# -- 3. fall-over -----------------------------------------------------------------------------

def prompt_times(world, service, repeat):
    _, stdout = pamtest(world, service, "alice", repeat,
                        extra=("--prompt-timing", "--password", PASSWORDS["alice"]), timeout=300)
    values = [int(v) / 1000.0 for v in re.findall(r"^PROMPT_AT (\d+)$", stdout, re.M)]
    if len(values) != repeat or stdout.count("RESULT 0 PAM_SUCCESS") != repeat:
        raise RuntimeError("fall-over run: %s" % stdout[-1500:])
    return values


def fallover(world, ours50):
    print("== 3. fall-over: time from pam_authenticate to the password prompt", flush=True)
    service = world.service("fa-fall")  # the module sufficient, then the password (pam_matrix)
    url = world.settings["url"]
    results = {}
    feeder = Feeder(world.reader.path, ["SCAN " + IDENTITY])
    try:
        world.write_conf(url=closed_port_url() + "/v1/login")
        results["refused"] = prompt_times(world, service, FALLOVER_REPEAT)
        with FakeAuthenticator(world.ca.server_cert, world.ca.server_key, answer(500, {"error": "boom"})) as fake:
            world.write_conf(url=fake.url + "/v1/login")
            results["500"] = prompt_times(world, service, FALLOVER_REPEAT)
        with SilentServer() as silent:
            world.write_conf(url=silent.url + "/v1/login")
            results["silent"] = prompt_times(world, service, 2)
    finally:
        world.write_conf(url=url)
        feeder.stop()
    for key, label in (("refused", "refused (closed port)"), ("500", "answering 500"),
                       ("silent", "silent (never answers)")):
        median = statistics.median(results[key])
        log("%-24s p50 %8.1f ms  max %8.1f ms (%d runs)" % (label, median, max(results[key]), len(results[key])))
        add(3, "to password prompt, %s (vs our login)" % label, median, ours50, "ms", 1)
    return {k: statistics.median(v) for k, v in results.items()}


# -- 4. throughput ------------------------------------------------------------------------------

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


def wrk(url, script, args, clients, seconds, done_dir, tmp):
    """Runs wrk with one of bench/wrk/*.lua; each wrk thread creates done_dir/done-N when it
    finished its share, then wrk is ended with SIGINT (it would otherwise sleep out -d).
    Returns the script's WRKJSON figures plus wrk's own CPU seconds ("cpu") and "seconds":
    first request to last counted answer (wrk's whole run if a share did not finish)."""
    threads = max(1, min(2, clients))
    done_dir = Path(done_dir)
    for old in done_dir.glob("done-*"):
        old.unlink()
    cmd = ["wrk", "-t", str(threads), "-c", str(clients), "-d", "%ds" % seconds, "--timeout", "10s",
           "-s", str(script), url, "--", *args]
    out = open(Path(tmp) / "wrk.out", "w+")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    started_pids.append(proc.pid)
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


class Peer:
    """The Python peer verifier under uvicorn, in its own session (stopped as a group)."""

    def __init__(self, venv, ca, db, tmp):
        self.port = free_port()
        env = plain_env()
        env.update({"PEER_DB": str(db), "PEER_AUDIENCE": AUDIENCE, "PYTHONPATH": str(REPO)})
        self.log = open(Path(tmp) / "peer.log", "ab")
        self.proc = subprocess.Popen(
            [str(Path(venv) / "bin" / "python"), "-m", "uvicorn", "bench.peer.verifier:app", "--host", "127.0.0.1",
             "--port", str(self.port), "--workers", "2", "--loop", "uvloop", "--http", "httptools",
             "--ssl-certfile", ca.server_cert, "--ssl-keyfile", ca.server_key, "--no-access-log",
             "--log-level", "warning", "--timeout-keep-alive", "30"],
            env=env, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, start_new_session=True)
        started_pids.append(self.proc.pid)
        self.url = "https://127.0.0.1:%d" % self.port
        context = ca.ssl_context()
        deadline = time.monotonic() + 30
        while True:
            try:
                import http.client
                c = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=2, context=context)
                c.request("GET", "/healthz")
                if c.getresponse().status == 200:
                    c.close()
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("the peer verifier did not start; see peer.log")
            time.sleep(0.1)

    def pids(self):
        return [self.proc.pid] + system._children_of(self.proc.pid)

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        self.log.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def throughput(world, venv, tmp):
    import jwt
    print("== 4. authenticator throughput: wrk, keep-alive, unique pre-signed tokens", flush=True)
    token = world.token_path.read_text().strip()
    users = {"bench%d" % i: BenchKey() for i in range(4)}
    for name, key in users.items():
        proof = jwt.encode(claims(name), key.private, algorithm="RS256", headers={"kid": key.kid})
        reply = world.authd.post_json("/v1/keys", {"user": name, "host": HOST_ID, "jwk": key.jwk, "proof": proof},
                                      token=token)
        if reply.status != 201:
            raise RuntimeError("registering %s: %r" % (name, reply))
    # the peer's registry: the same keys, read from fingerauthd's own table
    import sqlite3
    source = sqlite3.connect(world.authd.db, timeout=10)
    key_rows = source.execute("SELECT kid, user, host, jwk FROM keys WHERE user LIKE 'bench%'").fetchall()
    source.close()
    if len(key_rows) != len(users):
        raise RuntimeError("fingerauthd's keys table: %d rows for %d bench users" % (len(key_rows), len(users)))
    from bench.peer.verifier import init_db
    peer_db = Path(tmp) / "peer.db"
    init_db(str(peer_db), key_rows)
    peer = Peer(venv, world.ca, peer_db, tmp)
    results = {}
    try:
        for clients in CLIENT_LEVELS:
            began = time.monotonic()
            tokens = sign_tokens(users, TOKENS_PER_LEVEL)
            directory = Path(tmp) / ("tokens-%d" % clients)
            write_token_files(tokens, clients, directory)
            log("%d clients: %d tokens signed in %.1f s" % (clients, len(tokens), time.monotonic() - began))
            for name, url, pids in (("fingerauthd", world.authd.url, [world.authd.pid]),
                                    ("peer", peer.url, peer.pids())):
                cpu0 = proc_cpu_seconds(pids)
                r = wrk(url, HERE / "wrk" / "login.lua", [str(directory)], clients, LEVEL_SECONDS, directory, tmp)
                cpu1 = proc_cpu_seconds(pids)
                r["server_user"], r["server_sys"] = cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]
                r["rate"] = r["ok"] / r["seconds"]
                if not r["finished"]:
                    notes.append("%s at %d clients: the tokens lasted the whole %d s" % (name, clients, LEVEL_SECONDS))
                results[(name, clients)] = r
                log("%-11s %2d clients: %6.0f verified/s, p50 %6.2f ms p99 %7.2f ms, %d refused, %d sent in %.1f s; "
                    "CPU: server %.1f s user + %.1f s sys (%.2f ms per login), wrk %.1f s"
                    % (name, clients, r["rate"], r["p50_us"] / 1000, r["p99_us"] / 1000, r["bad"], r["requests"],
                       r["seconds"], r["server_user"], r["server_sys"],
                       (r["server_user"] + r["server_sys"]) * 1000 / max(1, r["ok"]), r["cpu"]))
                if r["bad"] or r["ok"] < len(tokens) * 0.5:
                    notes.append("%s at %d clients: %d refused, %d of %d tokens verified" %
                                 (name, clients, r["bad"], r["ok"], len(tokens)))
            shutil.rmtree(directory)
    finally:
        peer.stop()
    for clients in CLIENT_LEVELS:
        ours, peer_r = results[("fingerauthd", clients)], results[("peer", clients)]
        add(4, "verified logins/s, %d clients (vs Python peer)" % clients, ours["rate"], peer_r["rate"], "/s", 0)
        add(4, "p50, %d clients (vs Python peer)" % clients, ours["p50_us"] / 1000, peer_r["p50_us"] / 1000, "ms", 2)
        add(4, "p99, %d clients (vs Python peer)" % clients, ours["p99_us"] / 1000, peer_r["p99_us"] / 1000, "ms", 2)
    return results


# -- 5. steadiness --------------------------------------------------------------------------------

def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def steadiness(world, tmp):
    print("== 5. steadiness", flush=True)
    pid = world.authd.pid
    before = rss_kb(pid)
    r = wrk(world.authd.url, HERE / "wrk" / "count.lua", [str(STEADY_REQUESTS), "2", "/healthz", str(tmp)], 16, 400,
            tmp, tmp)
    after = rss_kb(pid)
    log("fingerauthd: %d GET /healthz answered 200 (keep-alive, 16 connections) in %.1f s (%.0f/s); "
        "RSS %d kB before, %d kB after" % (r["ok"], r["seconds"], r["ok"] / r["seconds"],
                                          before, after))
    if r["ok"] < STEADY_REQUESTS:
        notes.append("steadiness: only %d of %d requests answered 200" % (r["ok"], STEADY_REQUESTS))
    add(5, "fingerauthd RSS after %dk GET /healthz (vs before)" % (r["ok"] // 1000), after / 1024.0, before / 1024.0,
        "MiB", 1)
    world.fake_helper(FAKE_MATCH)
    world.write_conf(debug_file=None)
    rss = {}
    try:
        for service in ("fa-only", "permit"):
            began = time.monotonic()
            _, stdout = pamtest(world, service, "alice", MODULE_CYCLES,
                                extra=("--rss-every", str(MODULE_CYCLES // 10), "--quiet"), timeout=900)
            rss[service] = {int(c): int(kb) for c, kb in re.findall(r"^RSS (\d+) (\d+)$", stdout, re.M)}
            log("%s: %d logins in one process in %.0f s, RSS kB at each tenth: %s" % (
                service, MODULE_CYCLES, time.monotonic() - began, " ".join(str(v) for _, v in sorted(rss[service].items()))))
    finally:
        world.write_conf(login_helper=str(world.build / "fingerauth-login"), debug_file=str(world.module_log))
    ours, base = rss["fa-only"], rss["permit"]
    first = min(ours)
    add(5, "host RSS after %dk logins in 1 process (vs pam_permit)" % (MODULE_CYCLES // 1000), ours[MODULE_CYCLES] / 1024.0,
        base[MODULE_CYCLES] / 1024.0, "MiB", 1)
    add(5, "host RSS growth %dk->%dk logins (vs pam_permit)" % (first // 1000, MODULE_CYCLES // 1000),
        (ours[MODULE_CYCLES] - ours[first]) / 1024.0, (base[MODULE_CYCLES] - base[first]) / 1024.0, "MiB", 2,
        ratio=float("nan"))
    return before, after, ours, base


# -- 6. the authenticator on PostgreSQL -------------------------------------------------------------

def register_keys(authd, token, users):
    import jwt
    for name, key in users.items():
        proof = jwt.encode(claims(name), key.private, algorithm="RS256", headers={"kid": key.kid})
        reply = authd.post_json("/v1/keys", {"user": name, "host": HOST_ID, "jwk": key.jwk, "proof": proof},
                                token=token)
        if reply.status != 201:
            raise RuntimeError("registering %s: %r" % (name, reply))


def wrk_split(targets, clients, tmp, tag):
    """Section 4's wrk run against every (name, authd) of `targets` at once: one wrk process
    each, `clients` split evenly, each with its own disjoint set of fresh tokens. Returns the
    combined figures: verified answers added, over the longest of the runs; p50/p99 the worst
    of the processes' (wrk's histograms cannot be merged)."""
    each = clients // len(targets)
    tokens = sign_tokens(BENCH_USERS, PG_TOKENS)
    dirs = []
    for i, _ in enumerate(targets):
        directory = Path(tmp) / ("%s-%d-%d" % (tag, clients, i))
        write_token_files(tokens[i::len(targets)], each, directory)
        dirs.append(directory)
    pids = [authd.pid for authd in targets]
    cpu0 = proc_cpu_seconds(pids)
    out = [None] * len(targets)
    errors = []

    def one(i):
        try:
            out[i] = wrk(targets[i].url, HERE / "wrk" / "login.lua", [str(dirs[i])], each, LEVEL_SECONDS, dirs[i],
                         dirs[i])
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(targets))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    cpu1 = proc_cpu_seconds(pids)
    for directory in dirs:
        shutil.rmtree(directory)
    r = {"ok": sum(x["ok"] for x in out), "bad": sum(x["bad"] for x in out),
         "requests": sum(x["requests"] for x in out), "seconds": max(x["seconds"] for x in out),
         "p50_us": max(x["p50_us"] for x in out), "p99_us": max(x["p99_us"] for x in out),
         "finished": all(x["finished"] for x in out), "cpu": sum(x["cpu"] for x in out),
         "server": (cpu1[0] - cpu0[0]) + (cpu1[1] - cpu0[1]), "tokens": len(tokens),
         "per": [x["ok"] / x["seconds"] for x in out]}
    r["rate"] = r["ok"] / r["seconds"]
    return r


BENCH_USERS = {}


def on_postgres(world, tmp, sqlite_results):
    print("== 6. the authenticator on PostgreSQL: one and two fingerauthd on one database (wrk, %d tokens a run)"
          % PG_TOKENS, flush=True)
    if not BENCH_USERS:
        BENCH_USERS.update({"pgbench%d" % i: BenchKey() for i in range(4)})
    register_keys(world.authd, world.token_path.read_text().strip(), BENCH_USERS)
    results = {}
    with Postgres() as pg:
        url = pg.create_database("bench")
        a = Authd(Path(tmp) / "pg-a", audience=AUDIENCE, tls=world.ca, db=url)
        b = Authd(Path(tmp) / "pg-b", audience=AUDIENCE, tls=world.ca, db=url)
        try:
            a.start()
            started_pids.append(a.pid)
            b.start()
            started_pids.append(b.pid)
            register_keys(a, a.create_token(HOST_ID), BENCH_USERS)
            for clients in PG_CLIENT_LEVELS:
                runs = [("postgresql x1", [a]), ("postgresql x2", [a, b])]
                if ("fingerauthd", clients) not in sqlite_results:
                    runs.insert(0, ("sqlite x1", [world.authd]))
                for name, targets in runs:
                    r = wrk_split(targets, clients, tmp, name.replace(" ", ""))
                    results[(name, clients)] = r
                    log("%-13s %2d clients: %6.0f verified/s (per instance %s), p50 %6.2f ms p99 %7.2f ms, %d refused, "
                        "%d sent in %.1f s; server CPU %.1f s (%.2f ms per login), wrk %.1f s"
                        % (name, clients, r["rate"], "/".join("%.0f" % v for v in r["per"]), r["p50_us"] / 1000,
                           r["p99_us"] / 1000, r["bad"], r["requests"], r["seconds"], r["server"],
                           r["server"] * 1000 / max(1, r["ok"]), r["cpu"]))
                    if not r["finished"]:
                        notes.append("%s at %d clients: the tokens lasted the whole %d s" % (name, clients, LEVEL_SECONDS))
                    if r["bad"] or r["ok"] < r["tokens"] * 0.5:
                        notes.append("%s at %d clients: %d refused, %d of %d tokens verified" %
                                     (name, clients, r["bad"], r["ok"], r["tokens"]))
        finally:
            a.stop()
            b.stop()
        for authd in (a, b):
            if authd.returncode not in (0, None):
                notes.append("fingerauthd on PostgreSQL exited %s" % authd.returncode)
    for clients in PG_CLIENT_LEVELS:
        base = sqlite_results.get(("fingerauthd", clients)) or results[("sqlite x1", clients)]
        for name, label in (("postgresql x1", "1 fingerauthd on PostgreSQL"),
                            ("postgresql x2", "2 fingerauthd on one PostgreSQL")):
            r = results[(name, clients)]
            add(6, "%s: logins/s, %d clients (vs SQLite x1)" % (label, clients), r["rate"], base["rate"], "/s", 0)
            add(6, "%s: p50, %d clients (vs SQLite x1)" % (label, clients), r["p50_us"] / 1000, base["p50_us"] / 1000,
                "ms", 2)
            add(6, "%s: p99, %d clients (vs SQLite x1)" % (label, clients), r["p99_us"] / 1000, base["p99_us"] / 1000,
                "ms", 2)
    return results


# -- main -------------------------------------------------------------------------------------

def machine():
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    swift_bin = shutil.which("swift") or "/opt/swift/usr/bin/swift"
    try:
        swift = subprocess.run([swift_bin, "--version"], capture_output=True, text=True).stdout.splitlines()
    except OSError:
        swift = []
    return {"nproc": os.cpu_count(), "cpu": model, "kernel": os.uname().release,
            "swift": swift[0] if swift else "?", "load": os.getloadavg()}


def print_table(elapsed):
    print()
    print("FingerAuth benchmark — each figure against its baseline, measured in this run (%.0f s; load average "
          "at the end %.2f %.2f %.2f)" % ((elapsed,) + os.getloadavg()))
    headers = ("#", "figure", "ours", "baseline", "ratio")
    widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(5)]
    line = "| " + " | ".join("%-*s" % (widths[i], headers[i]) for i in range(5)) + " |"
    print(line)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join("%-*s" % (widths[i], str(r[i])) for i in range(5)) + " |")
    for note in notes:
        print("note: " + note)


def main():
    began = time.monotonic()
    venv = os.environ.get("BENCH_VENV", str(REPO / "build" / "bench-venv"))
    info = machine()
    print("machine: %(nproc)s cores, %(cpu)s, kernel %(kernel)s, %(swift)s; load average at start %(load)s" % info)
    tmp = Path(tempfile.mkdtemp(prefix="fingerauth-bench."))
    os.chmod(tmp, 0o755)
    world = bench_user = fprintd = None
    failed = False
    try:
        ca = make_ca(tmp / "ca")
        (tmp / "world").mkdir()
        world = World(tmp / "world", ca)
        world.start_authenticator()
        started_pids.append(world.authd.pid)
        world.enroll("alice", IDENTITY)
        split = None
        if "1" in ONLY:
            password = b64url(os.urandom(12))
            bench_user = system.BenchUser(password)
            fprint_dir = tmp / "fprint"
            fprint_dir.mkdir(mode=0o700)
            fprint_socket = fprint_dir / "virtual.sock"
            fprintd = system.Fprintd(fprint_socket, str(tmp))
            started_pids.extend(p.pid for _, p in fprintd.procs)
            started_pids.append(fprintd.bus_pid)
            enroll_feed = VirtualReader(fprint_socket).feed(enroll_commands("finger-F"), timeout=30)
            fprintd.enroll(bench_user.name, enroll_feed)
            ours50, _, split = login_latency(world, bench_user.name, password, fprint_socket)
            fprintd.close()
            bench_user.close()
        else:
            write_service(world, "permit", "auth required pam_permit.so")
            feeder = Feeder(world.reader.path, ["SCAN " + IDENTITY])
            try:
                ours50 = statistics.median(success_times("ours", pamtest(world, world.service("fa-only", fallback=False),
                                                                          "alice", 20)[0]))
            finally:
                feeder.stop()
        if "2" in ONLY:
            module_cost(world, tmp)
        if "3" in ONLY:
            fallover(world, ours50)
        sqlite_results = {}
        if "4" in ONLY:
            sqlite_results = throughput(world, venv, tmp)
        if "5" in ONLY:
            steadiness(world, tmp)
        if "6" in ONLY:
            on_postgres(world, tmp, sqlite_results)
    except BaseException:
        failed = True
        raise
    finally:
        if fprintd is not None:
            fprintd.close()
        if bench_user is not None:
            bench_user.close()
        if world is not None:
            world.close()
        problems = system.leftovers([p for p in started_pids if p])
        for problem in problems:
            print("LEFTOVER: " + problem)
        if failed or problems:
            print("bench: kept %s for inspection" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print_table(time.monotonic() - began)
    results = Path(os.environ.get("BENCH_RESULTS", REPO / "build" / "bench-results.json"))
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps({"machine": info, "rows": rows, "notes": notes, "split": split,
                                   "seconds": time.monotonic() - began}, indent=1))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
