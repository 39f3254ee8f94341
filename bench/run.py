"""`make bench`: FingerAuth's figures — login latency with the finger already there and
touch-to-login (finger put on the reader after the prompt), the module's own cost, fall-over,
authenticator throughput with each side's durability, fsyncs and CPU against the machine's
RSA limit (section 4, bench/durability.py), steadiness, the authenticator on a durable
PostgreSQL (section 6), a flood of refused requests beside valid logins (section 7,
bench/flood.py), a login with a TPM key on swtpm beside a file key (section 8, bench/tpm.py), and the admin
console on a million audit rows (section 9, bench/console.py) — each against a baseline measured in this same run, printed as one table
(figure, ours, baseline, ratio, the issue's target where it set one). See BENCHMARKS.md.

    FINGERAUTH_BUILD=<dir with the built binaries> BENCH_VENV=<venv with uvicorn, PyJWT>
        /usr/bin/python3 bench/run.py

Built on the integration tests' World (Tests/integration/support): nss_wrapper users, a
test CA, libfprint's virtual reader, a real fingerauthd over TLS on loopback, enrollment
through the real CLI. The pam_unix and pam_fprintd baselines need a real user
(`fabench`, made here with a yescrypt hash, always removed) and fprintd on a system bus
with polkitd (started here by hand, always stopped). Nothing is left on the machine.
"""

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "Tests" / "integration"))
sys.path.insert(0, str(REPO))

from support.authd import Authd  # noqa: E402
from support.fakeauth import FakeAuthenticator, SilentServer, answer, closed_port_url  # noqa: E402
from support.tls import make_ca  # noqa: E402
from support.vreader import VirtualReader, enroll_commands  # noqa: E402
from support.world import HOST_ID, AUDIENCE, PASSWORDS, World  # noqa: E402

from bench import console, durability, flood, newconn, system, tpm  # noqa: E402
from bench.common import (BenchKey, add, b64url, details, failed_checks, free_port, log,  # noqa: E402
                          notes, pct, proc_cpu_seconds, register_keys, rows, sign_tokens, started_pids, wrk,
                          write_token_files)

SECURITY = "/usr/lib/x86_64-linux-gnu/security"
LOGINS = int(os.environ.get("BENCH_LOGINS", "200"))
FALLOVER_REPEAT = int(os.environ.get("BENCH_FALLOVER", "30"))
# 20,000 tokens a level: a run of several seconds on both sides, so that its p99 is the
# steady state and not the start (64 TLS handshakes at once take the first ~100 ms).
TOKENS_PER_LEVEL = int(os.environ.get("BENCH_TOKENS", "20000"))
LEVEL_SECONDS = int(os.environ.get("BENCH_LEVEL_SECONDS", "30"))
STEADY_REQUESTS = int(os.environ.get("BENCH_REQUESTS", "1000000"))
MODULE_CYCLES = int(os.environ.get("BENCH_CYCLES", "10000"))
CLIENT_LEVELS = (1, 8, 64)
PEER_WORKERS = 2  # uvicorn worker processes: one per core
# fsync/fdatasync counts: a separate short run per level, not used for any other figure
SYNC_TOKENS = int(os.environ.get("BENCH_SYNC_TOKENS", "2000"))
SYNC_LEVELS = tuple(int(v) for v in os.environ.get("BENCH_SYNC_LEVELS", "8,64").split(",") if v)
# issue 13's targets for section 4 (fingerauthd against the Python peer, same run, same tokens);
# the server CPU ones are issue 34's
THROUGHPUT_TARGETS = {("rate", 8): {"at_least_ratio": 5.0}, ("rate", 64): {"at_least_ratio": 5.0},
                      ("p99", 64): {"at_most_ratio": 0.5}, ("p50", 1): {"at_most_ratio": 1.0},
                      ("cpu", 8): {"at_most_ratio": 0.2}, ("cpu", 64): {"at_most_ratio": 0.2}}
PG_TOKENS = int(os.environ.get("BENCH_PG_TOKENS", str(TOKENS_PER_LEVEL)))
PG_CLIENT_LEVELS = (8, 64)
ONLY = set(os.environ.get("BENCH_ONLY", "1,2,3,4,5,6,7,8,9").split(","))  # a subset, for development
HELPER_RUNS = int(os.environ.get("BENCH_HELPER_RUNS", "40"))  # section 1b: the helper run directly
SETTLE_S = int(os.environ.get("BENCH_SETTLE_MS", "50")) / 1000.0  # touch-to-login: prompt -> finger
# A stand-in login helper (root 0755 shell script): reads the module's request on stdin and
# answers at once for the module's own jti, as the real helper does after a match. The
# module believes only `ACCEPTED <its jti> <kid>` followed by exit 0.
FAKE_LOGIN = """while IFS= read -r line; do case "$line" in jti=*) jti="${line#jti=}" ;; esac; done
echo 'READY fake reader'
echo 'MATCH right-index-finger'
echo "ACCEPTED $jti fake-kid"
"""
IDENTITY = "finger-A"
PROMPT_OURS = "Place your finger on the fingerprint reader"
PROMPT_FPRINTD = re.compile(r"^(Swipe|Place|Touch|Scan) your .*finger")
# Section 2's figures of the last recorded run (docs/benchmark-history.md, quiet machine, caecb52), when
# the module itself loaded the key, signed and spoke TLS: printed beside this run's.
THICK_MODULE = {"size_kib": 6212.0, "load_ms": 12.10, "cpu_ms": 9.038, "instructions_m": 54.65,
                "machine": "2 cores, AMD EPYC at 2445 MHz"}

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

# Loaded into fa-pamtest with LD_PRELOAD for touch-to-login: wraps libpam's pam_authenticate
# and prints, before fa-pamtest's own RESULT line, when it began and when it returned, in
# CLOCK_MONOTONIC microseconds (the clock of Python's time.monotonic on Linux).
PAMTIME_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>
typedef int (*authenticate_fn)(void *, int);
static long long now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
int pam_authenticate(void *pamh, int flags) {
    static authenticate_fn real;
    if (real == NULL) real = (authenticate_fn)dlsym(RTLD_NEXT, "pam_authenticate");
    long long began = now_us();
    int rc = real(pamh, flags);
    long long ended = now_us();
    printf("PAMTIME %lld %lld\n", began, ended);
    fflush(stdout);
    return rc;
}
"""


def build_pamtime(tmp):
    source = Path(tmp) / "pamtime.c"
    source.write_text(PAMTIME_C)
    library = Path(tmp) / "pamtime.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(library), str(source), "-ldl"], check=True)
    os.chmod(library, 0o755)
    return library


def now_us():
    return time.monotonic_ns() // 1000


def send_timed(reader, command, timeout=2.0):
    """Sends one command to the virtual reader; returns the CLOCK_MONOTONIC microsecond just
    before the connection that delivered it was opened."""
    deadline = time.monotonic() + timeout
    while True:
        at = now_us()
        try:
            reader.send(command, timeout=timeout)
            return at
        except (ConnectionRefusedError, FileNotFoundError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.0005)


def touch_logins(world, service, user, count, reader_path, prompt, scan, pamtime, env, before=()):
    """`count` logins in one fa-pamtest process (--repeat), the finger put on the reader only
    when the login asks for it: at each prompt (`prompt` matches the INFO text) wait for the
    reader's socket, sleep SETTLE_S so the helper or fprintd sits idle waiting, send `before`,
    then `scan`, timed. pam_authenticate's return comes from the PAMTIME shim. Returns
    ([(touch_to_login_ms, prompt_to_touch_ms)] for the logins, all successful, or it raises;
    the prompt's text)."""
    env = dict(env)
    env["LD_PRELOAD"] = ":".join(p for p in (str(pamtime), env.get("LD_PRELOAD")) if p)
    cmd = [str(world.build / "fa-pamtest"), "--timing", "--confdir", str(world.confdir), "--service", service,
           "--user", user, "--repeat", str(count)]
    reader = VirtualReader(reader_path)
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    started_pids.append(proc.pid)
    out, tail = [], []
    touched = prompted = times = seen = None
    try:
        for line in proc.stdout:
            tail = (tail + [line])[-30:]
            kind, _, text = line.rstrip("\n").partition(" ")
            if kind == "INFO" and (prompt.search(text) if hasattr(prompt, "search") else text == prompt):
                prompted, seen = now_us(), text
                if touched is not None:
                    raise RuntimeError("touch-to-login %s: a second finger prompt in one login" % service)
                reader.wait_for_new_socket(5)
                time.sleep(SETTLE_S)
                for command in before:
                    send_timed(reader, command)
                touched = send_timed(reader, scan)
            elif kind == "PAMTIME":
                times = [int(v) for v in text.split()]
            elif kind == "RESULT":
                name = text.split()[1]
                if name != "PAM_SUCCESS" or touched is None or times is None:
                    raise RuntimeError("touch-to-login %s: login %d: %s (touched: %s)\n%s"
                                       % (service, len(out) + 1, name, touched is not None, "".join(tail)))
                out.append(((times[1] - touched) / 1000.0, (touched - prompted) / 1000.0))
                touched = prompted = times = None
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if len(out) != count:
        raise RuntimeError("touch-to-login %s: %d logins of %d\n%s" % (service, len(out), count, "".join(tail)))
    return out, seen


def login_latency(world, bench_user, password, fprintd_socket, tmp):
    print("== 1. login latency through real libpam (%d logins each)" % LOGINS, flush=True)
    times = {}
    ours_service = world.service("fa-only", fallback=False)
    permit = write_service(world, "permit", "auth required pam_permit.so")
    unix = write_service(world, "unix", "auth required pam_unix.so")
    fprint = write_service(world, "fprintd", "auth required pam_fprintd.so max-tries=1 timeout=10")
    pamtime = build_pamtime(tmp)

    # the finger already on the reader: the feeder sends SCAN as soon as the reader listens
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

    # touch-to-login: the finger put on the reader only after the prompt
    touch, prompts = {}, {}
    touch["ours"], prompts["ours"] = touch_logins(world, ours_service, "alice", LOGINS, world.reader.path, PROMPT_OURS,
                                                  "SCAN " + IDENTITY, pamtime, world.env)
    touch["fprintd"], prompts["fprintd"] = touch_logins(world, fprint, bench_user, LOGINS, fprintd_socket, PROMPT_FPRINTD,
                                                        "SCAN finger-F", pamtime, plain_env(), before=("SLEEP 0",))

    for key in times:
        log("%-8s p50 %7.2f ms  p99 %7.2f ms" % (key, statistics.median(times[key]), pct(times[key], 0.99)))
    ours50, ours99 = statistics.median(times["ours"]), pct(times["ours"], 0.99)
    touch_ms = {key: [t for t, _ in values] for key, values in touch.items()}
    for key in ("ours", "fprintd"):
        waits = [w for _, w in touch[key]]
        log("touch-to-login %-8s p50 %7.2f ms  p99 %7.2f ms  min %6.2f ms  (%d logins; prompt \"%s\", then the "
            "finger %.1f ms later, p50)" % (key, statistics.median(touch_ms[key]), pct(touch_ms[key], 0.99),
                                             min(touch_ms[key]), len(touch_ms[key]), prompts[key],
                                             statistics.median(waits)))
    add(1, "touch-to-login p50 (vs pam_fprintd)", statistics.median(touch_ms["ours"]),
        statistics.median(touch_ms["fprintd"]), "ms", 2, at_most_ratio=1.0)
    add(1, "touch-to-login p99 (vs pam_fprintd)", pct(touch_ms["ours"], 0.99), pct(touch_ms["fprintd"], 0.99), "ms", 2)
    for key, label, target in (("fprintd", "pam_fprintd (local only)", 1.0), ("unix", "pam_unix yescrypt", 0.5),
                               ("permit", "pam_permit", None)):
        add(1, "login p50, finger at once (vs %s)" % label, ours50, statistics.median(times[key]), "ms", 2,
            at_most_ratio=target)
        add(1, "login p99, finger at once (vs %s)" % label, ours99, pct(times[key], 0.99), "ms", 2)
    split = login_split(world, ours50, statistics.median(touch_ms["ours"]))
    split["touch"] = {key: {"p50": statistics.median(v), "p99": pct(v, 0.99), "n": len(v)} for key, v in touch_ms.items()}
    return ours50, times, split


def helper_request(world, jti):
    """The request the module writes to the helper for alice (LoginJob.text): this World's
    settings, the defaults for max_tries and ttl."""
    s = world.settings
    lines = ["user=alice", "service=fa-only", "jti=" + jti, "issuer=" + HOST_ID, "url=" + s["url"],
             "audience=" + s["audience"], "cafile=" + s["cafile"], "timeout=" + s["timeout"], "max_tries=3",
             "ttl=30", "state_dir=" + s["state_dir"], "virtual_reader=" + s["virtual_reader"], "allow_http=no"]
    return "\n".join(lines) + "\n"


def helper_alone(world, argv, request=None):
    """Runs the helper once by hand as the module would (request already in the pipe, output
    read line by line): at READY waits SETTLE_S, then puts the finger on the reader. Returns
    {line word: ms since spawn}, "SCAN" and "exit" included, and "cpu" (ms, wait4)."""
    reader = VirtualReader(world.reader.path)
    reader.last_inode = reader._inode()
    read_end, write_end = os.pipe()
    if request is not None:
        os.write(write_end, request.encode("ascii"))
    os.close(write_end)
    began = now_us()
    proc = subprocess.Popen(argv, stdin=read_end, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={},
                            start_new_session=True)
    os.close(read_end)
    started_pids.append(proc.pid)
    at, lines = {}, []
    try:
        for raw in proc.stdout:
            t = now_us()
            line = raw.decode("ascii", "replace").strip()
            lines.append(line)
            word = line.split(" ", 1)[0]
            at.setdefault(word, (t - began) / 1000.0)
            if word == "READY":
                reader.wait_for_new_socket(5)
                time.sleep(SETTLE_S)
                at["SCAN"] = (send_timed(reader, "SCAN " + IDENTITY) - began) / 1000.0
        _, status, usage = os.wait4(proc.pid, 0)
        at["exit"] = (now_us() - began) / 1000.0
        proc.returncode = os.waitstatus_to_exitcode(status)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    at["cpu"] = (usage.ru_utime + usage.ru_stime) * 1000
    expected = "ACCEPTED" if request is not None else "MATCH"
    if proc.returncode != 0 or expected not in at:
        raise RuntimeError("%s: exit %s, %s" % (argv[0], proc.returncode, lines))
    return at


# The helper's libraries, by what needs them (pkg-config names; libstdc++ and libm beside).
LIBRARY_SETS = [
    ("none (an empty C program)", []),
    ("the reader: libfprint-2", ["libfprint-2"]),
    ("+ libcrypto (key, signature)", ["libfprint-2", "libcrypto"]),
    ("+ tss2 (TPM keys)", ["libfprint-2", "libcrypto", "tss2-esys", "tss2-mu", "tss2-rc", "tss2-tctildr"]),
    ("+ libssl (the authenticator)", ["libfprint-2", "libcrypto", "libssl"]),
    ("all the helper links", ["libfprint-2", "libcrypto", "libssl", "tss2-esys", "tss2-mu", "tss2-rc", "tss2-tctildr"]),
]


def library_load(world, tmp, runs=80):
    """What the helper's shared libraries cost a fresh process before main: an empty C
    program linked (--no-as-needed) against each set, run with an empty environment as the
    module runs the helper, median wall time from spawn to exit; beside it the helper itself
    ending at once on a usage error (its libraries, their constructors, main, exit). The
    programs take turns, run after run, so that a slow spell of the machine hits them all."""
    source = Path(tmp) / "empty.c"
    source.write_text("int main(void) { return 0; }\n")
    programs = []
    for index, (label, packages) in enumerate(LIBRARY_SETS):
        binary = Path(tmp) / ("empty%d" % index)
        flags = subprocess.run(["pkg-config", "--libs", *packages], capture_output=True, text=True,
                               check=True).stdout.split() if packages else []
        extra = ["-lstdc++", "-lm"] if packages else []
        subprocess.run(["gcc", "-O2", "-o", str(binary), str(source), "-Wl,--no-as-needed", *flags, *extra],
                       check=True, capture_output=True)
        programs.append((label, [str(binary)]))
    helper = world.settings["login_helper"]
    programs.append(("fingerauth-login, a usage error at once", [helper, "--no-such-option"]))
    samples = {label: [] for label, _ in programs}
    for _ in range(runs):
        for label, argv in programs:
            began = time.perf_counter()
            subprocess.run(argv, env={}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
            samples[label].append((time.perf_counter() - began) * 1000)
    rows = []
    for label, argv in programs:
        count = len(subprocess.run(["ldd", argv[0]], capture_output=True, text=True).stdout.splitlines())
        rows.append((label, count, statistics.median(samples[label])))
    log("spawn -> exit of a process with the helper's libraries (empty environment, %d runs each, in turn, "
        "medians):" % runs)
    for label, count, ms in rows:
        log("  %-42s %2d objects  %6.2f ms" % (label, count, ms))
    return {label: {"objects": count, "ms": ms} for label, count, ms in rows}


def login_split(world, ours50, touch50):
    """Where our login's time goes, from what can be seen outside Sources/: the module with a
    stand-in helper (the module, libpam, spawning a shell script); the real helper run by
    hand, its output lines timed (READY, MATCH, ACCEPTED, exit); the helper's reader-only
    mode (READY after the prints and the reader, no key, no network)."""
    print("== 1b. where our login's time goes", flush=True)
    service = "fa-only"
    real_helper = world.settings["login_helper"]
    world.fake_helper(FAKE_LOGIN)
    try:
        fake = statistics.median(success_times("stand-in helper", pamtest(world, service, "alice", LOGINS)[0]))
    finally:
        world.write_conf(login_helper=real_helper)
    runs = max(3, HELPER_RUNS)
    login_runs = [helper_alone(world, [real_helper, "--login"], helper_request(world, b64url(os.urandom(16))))
                  for _ in range(runs)]
    reader_runs = [helper_alone(world, [real_helper, "--user", "alice", "--state-dir", world.settings["state_dir"],
                                        "--virtual-reader", world.reader.path, "--timeout", world.settings["timeout"]])
                   for _ in range(runs)]

    def med(runs_, a, b=None):
        return statistics.median([r[a] - (r[b] if b else 0) for r in runs_])

    split = {
        "login_p50": ours50, "stand_in_p50": fake, "helper_extra": ours50 - fake,
        "ready": med(login_runs, "READY"), "ready_reader_only": med(reader_runs, "READY"),
        "scan_to_match": med(login_runs, "MATCH", "SCAN"), "match_to_accepted": med(login_runs, "ACCEPTED", "MATCH"),
        "accepted_to_exit": med(login_runs, "exit", "ACCEPTED"), "scan_to_exit": med(login_runs, "exit", "SCAN"),
        "helper_cpu": med(login_runs, "cpu"),
        "reader_only_scan_to_match": med(reader_runs, "MATCH", "SCAN"),
        "reader_only_match_to_exit": med(reader_runs, "exit", "MATCH"), "reader_only_cpu": med(reader_runs, "cpu"),
        "touch_p50": touch50, "runs": runs,
    }
    s = split
    log("login, finger at once: p50 %.2f ms with the real helper; %.2f ms with a stand-in helper (a shell script "
        "answering READY, MATCH, ACCEPTED <jti> at once): module + libpam + spawn; the real helper adds %.2f ms"
        % (ours50, fake, ours50 - fake))
    log("the real helper run by hand (fingerauth-login --login, request on stdin; %d runs, medians, ms since spawn "
        "from Python):" % runs)
    log("  READY            at %6.2f ms  request read, prints and device key loaded; reader opened, in parallel "
        "TLS warm-up GET and the token signed" % s["ready"])
    log("  (reader-only     at %6.2f ms  fingerauth-login --user ... --virtual-reader: prints loaded and the reader "
        "opened, no key, no network)" % s["ready_reader_only"])
    log("  SCAN -> MATCH       %6.2f ms  libfprint's verify, reader closed (reader-only mode: %.2f ms)"
        % (s["scan_to_match"], s["reader_only_scan_to_match"]))
    log("  MATCH -> ACCEPTED   %6.2f ms  POST on the warm connection, fingerauthd's verification and answer"
        % s["match_to_accepted"])
    log("  ACCEPTED -> exit    %6.2f ms  the helper's exit, which the module waits for (reader-only mode, "
        "MATCH -> exit: %.2f ms)" % (s["accepted_to_exit"], s["reader_only_match_to_exit"]))
    log("  CPU per run         %6.2f ms  user+sys of the helper (wait4); reader-only mode %.2f ms"
        % (s["helper_cpu"], s["reader_only_cpu"]))
    log("touch-to-login p50 %.2f ms = the helper's SCAN -> exit %.2f ms (run by hand) + %.2f ms (the module reading "
        "the lines and reaping the helper, libpam, noise)" % (touch50, s["scan_to_exit"], touch50 - s["scan_to_exit"]))
    split["library_load"] = library_load(world, world.tmp)
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
    # the stand-in helper: the helper is a separate process anyway (callgrind does not follow
    # it, getrusage(RUSAGE_SELF) does not count it), and it needs no finger
    real_helper = world.settings["login_helper"]
    world.fake_helper(FAKE_LOGIN)
    permit = "permit"
    try:
        ir = {}
        for service in ("fa-only", permit):
            ir[service] = (callgrind_total(world, service, 12, tmp) - callgrind_total(world, service, 2, tmp)) / 10.0
        module_ir = ir["fa-only"] - ir[permit]
        cpu = {service: (cpu_per_login(world, service, LOGINS) - cpu_per_login(world, service, 10)) / (LOGINS - 10)
               for service in ("fa-only", permit)}
    finally:
        world.write_conf(login_helper=real_helper)
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
    add(2, "CPU per login in the host, rusage (vs pam_permit)", module_cpu, cpu[permit], "ms", 3, at_most=1.0)
    ours_path = str(world.build / "pam_fingerauth.so")
    peer_path = os.path.join(SECURITY, "pam_fprintd.so")
    size_kib = os.path.getsize(ours_path) / 1024.0
    add(2, "module size, stripped (vs pam_fprintd.so)", size_kib, os.path.getsize(peer_path) / 1024.0, "KiB", 0)
    source = Path(tmp) / "loadtime.c"
    source.write_text(LOADTIME_C)
    binary = str(Path(tmp) / "loadtime")
    subprocess.run(["gcc", "-O2", "-o", binary, str(source), "-ldl"], check=True)
    ours_load, peer_load = load_time_ms(binary, ours_path), load_time_ms(binary, peer_path)
    log("dlopen+dlclose in a fresh process, median of 40: ours %.2f ms, pam_fprintd.so %.2f ms" % (ours_load, peer_load))
    add(2, "module dlopen+dlclose (vs pam_fprintd.so)", ours_load, peer_load, "ms", 2)
    thick = THICK_MODULE
    log("the last recorded run (docs/benchmark-history.md, the module that loaded the key, signed and spoke TLS itself; "
        "measured on %s, so compare across machines with care): %.2f M instructions, %.3f ms CPU per login, "
        "%.0f KiB stripped, dlopen+dlclose %.2f ms"
        % (thick["machine"], thick["instructions_m"], thick["cpu_ms"], thick["size_kib"], thick["load_ms"]))
    recorded = "(vs recorded: thick module, benchmark history)"
    add(2, "instructions per login in the host %s" % recorded, module_ir / 1e6, thick["instructions_m"], "M", 2)
    add(2, "CPU per login in the host, rusage %s" % recorded, module_cpu, thick["cpu_ms"], "ms", 3)
    add(2, "module size, stripped %s" % recorded, size_kib, thick["size_kib"], "KiB", 0)
    add(2, "module dlopen+dlclose %s" % recorded, ours_load, thick["load_ms"], "ms", 2)
    return module_ir, module_cpu


# -- 3. fall-over -----------------------------------------------------------------------------

def prompt_times(world, service, repeat, fresh_attempts=False):
    """`repeat` logins that fall over to the password: the time of each password prompt, and
    how many logins asked for a finger ("Place your finger…") before that prompt.
    `fresh_attempts`: each login in a process of its own, after the user's failed-attempts
    record is removed, so that the limit (the reader skipped after five failures in a row)
    does not decide the row instead of the case measured."""
    if fresh_attempts:
        values, touched = [], 0
        for _ in range(repeat):
            for record in (world.tmp / "attempts").glob("*"):
                record.unlink()
            one, seen = prompt_times(world, service, 1)
            values += one
            touched += seen
        return values, touched
    _, stdout = pamtest(world, service, "alice", repeat,
                        extra=("--prompt-timing", "--password", PASSWORDS["alice"]), timeout=300)
    values, touched = [], 0
    for login in re.split(r"^RESULT .*\n", stdout, flags=re.M)[:repeat]:
        lines = login.splitlines()
        prompt = next((i for i, line in enumerate(lines) if line.startswith("PROMPT ")), None)
        at = re.search(r"^PROMPT_AT (\d+)$", login, re.M)
        if prompt is None or at is None:
            raise RuntimeError("fall-over run, a login without a password prompt: %s" % login[-800:])
        values.append(int(at.group(1)) / 1000.0)
        touched += any(line == "INFO " + PROMPT_OURS for line in lines[:prompt])
    if len(values) != repeat or stdout.count("RESULT 0 PAM_SUCCESS") != repeat:
        raise RuntimeError("fall-over run: %s" % stdout[-1500:])
    return values, touched


def fallover(world, ours50):
    print("== 3. fall-over: time from pam_authenticate to the password prompt", flush=True)
    service = world.service("fa-fall")  # the module sufficient, then the password (pam_matrix)
    url = world.settings["url"]
    results, touched = {}, {}
    feeder = Feeder(world.reader.path, ["SCAN " + IDENTITY])  # a finger there at once, should it be asked for
    try:
        world.write_conf(url=closed_port_url() + "/v1/login")
        results["refused"], touched["refused"] = prompt_times(world, service, FALLOVER_REPEAT, fresh_attempts=True)
        with FakeAuthenticator(world.ca.server_cert, world.ca.server_key, answer(500, {"error": "boom"})) as fake:
            world.write_conf(url=fake.url + "/v1/login")
            results["500"], touched["500"] = prompt_times(world, service, FALLOVER_REPEAT, fresh_attempts=True)
        with SilentServer() as silent:
            world.write_conf(url=silent.url + "/v1/login")
            results["silent"], touched["silent"] = prompt_times(world, service, 2, fresh_attempts=True)
    finally:
        world.write_conf(url=url)
        feeder.stop()
    # refused and silent: the helper cannot reach the authenticator while it opens the reader,
    # so it fails before READY and nobody is asked for a finger. A 500 is an answer: the
    # authenticator is reachable, the finger is asked for, the POST gets the 500.
    for key, label, target, no_touch in (("refused", "refused (closed port)", 30.0, True),
                                         ("500", "answering 500", None, False),
                                         ("silent", "silent (never answers)", None, True)):
        median = statistics.median(results[key])
        log("%-24s p50 %8.1f ms  max %8.1f ms (%d runs); a finger asked for before the password prompt in %d of them"
            % (label, median, max(results[key]), len(results[key]), touched[key]))
        add(3, "to password prompt, %s (vs our login)" % label, median, ours50, "ms", 1, at_most=target)
        if no_touch and touched[key]:
            failed_checks.append("fall-over %s: \"%s\" shown before the password prompt in %d of %d logins "
                                 "(expected: before any touch)" % (label, PROMPT_OURS, touched[key], len(results[key])))
    return {k: statistics.median(v) for k, v in results.items()}, touched


# -- 4. throughput ------------------------------------------------------------------------------

class Peer:
    """The Python peer verifier under uvicorn, in its own session (stopped as a group)."""

    def __init__(self, venv, ca, db, tmp):
        self.port = free_port()
        self.db = str(db)
        env = plain_env()
        env.update({"PEER_DB": str(db), "PEER_AUDIENCE": AUDIENCE, "PYTHONPATH": str(REPO)})
        self.log = open(Path(tmp) / "peer.log", "ab")
        self.proc = subprocess.Popen(
            [str(Path(venv) / "bin" / "python"), "-m", "uvicorn", "bench.peer.verifier:app", "--host", "127.0.0.1",
             "--port", str(self.port), "--workers", str(PEER_WORKERS), "--loop", "uvloop", "--http", "httptools",
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
        # each worker sets WAL + synchronous=FULL on its connection, reads it back and says so
        self.durability = durability.wait_for_peer_durability(self.log.name, PEER_WORKERS, self.proc)

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


def throughput(world, venv, tmp):
    print("== 4. authenticator throughput: wrk, keep-alive, unique pre-signed tokens", flush=True)
    users = {"bench%d" % i: BenchKey() for i in range(4)}
    register_keys(world.authd, world.token_path.read_text().strip(), users)
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
    # the machine's limit, measured now, before any wrk run: one core's RSA-2048 verifications
    rsa = durability.openssl_rsa2048()
    log("openssl speed -seconds %d rsa2048 (one core, this run): %.0f sign/s, %.0f verify/s (%.1f us per verify)"
        % (rsa["seconds"], rsa["sign"], rsa["verify"], 1e6 / rsa["verify"]))
    peer = Peer(venv, world.ca, peer_db, tmp)
    ours_durability = durability.authd_durability(world.authd)
    log("durability: fingerauthd %s; Python peer %s"
        % ("%s (its start-up log line)" % ours_durability if ours_durability else
           "not reported (no \"sqlite … synchronous=\" line in its log yet)", " / ".join(peer.durability)))
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
                r["cpu_ms"] = (r["server_user"] + r["server_sys"]) * 1000 / max(1, r["ok"])
                if not r["finished"]:
                    notes.append("%s at %d clients: the tokens lasted the whole %d s" % (name, clients, LEVEL_SECONDS))
                results[(name, clients)] = r
                log("%-11s %2d clients: %6.0f verified/s, p50 %6.2f ms p99 %7.2f ms, %d refused, %d sent in %.1f s; "
                    "CPU: server %.1f s user + %.1f s sys (%.2f ms per login), wrk %.1f s"
                    % (name, clients, r["rate"], r["p50_us"] / 1000, r["p99_us"] / 1000, r["bad"], r["requests"],
                       r["seconds"], r["server_user"], r["server_sys"], r["cpu_ms"], r["cpu"]))
                if r["bad"] or r["ok"] < len(tokens) * 0.5:
                    notes.append("%s at %d clients: %d refused, %d of %d tokens verified" %
                                 (name, clients, r["bad"], r["ok"], len(tokens)))
            shutil.rmtree(directory)
        syncs = sync_counts(world, peer, users, tmp)
    finally:
        peer.stop()
    for clients in CLIENT_LEVELS:
        ours, peer_r = results[("fingerauthd", clients)], results[("peer", clients)]
        add(4, "verified logins/s, %d clients (vs Python peer)" % clients, ours["rate"], peer_r["rate"], "/s", 0,
            **THROUGHPUT_TARGETS.get(("rate", clients), {}))
        add(4, "p50, %d clients (vs Python peer)" % clients, ours["p50_us"] / 1000, peer_r["p50_us"] / 1000, "ms", 2,
            **THROUGHPUT_TARGETS.get(("p50", clients), {}))
        add(4, "p99, %d clients (vs Python peer)" % clients, ours["p99_us"] / 1000, peer_r["p99_us"] / 1000, "ms", 2,
            **THROUGHPUT_TARGETS.get(("p99", clients), {}))
    for clients in CLIENT_LEVELS:
        ours, peer_r = results[("fingerauthd", clients)], results[("peer", clients)]
        add(4, "server CPU per verified login, %d clients (vs Python peer)" % clients, ours["cpu_ms"], peer_r["cpu_ms"],
            "ms", 3, **THROUGHPUT_TARGETS.get(("cpu", clients), {}))
    for clients in SYNC_LEVELS:
        add(4, "fsync+fdatasync per 1,000 verified logins, %d clients (vs Python peer)" % clients,
            syncs[("fingerauthd", clients)]["per_1000"], syncs[("peer", clients)]["per_1000"], "", 0)
    # how far from the machine's limit: logins per second of server CPU against what one core
    # verifies per second (a login costs at least one RSA-2048 verification)
    top = max(CLIENT_LEVELS)
    ours, peer_r = results[("fingerauthd", top)], results[("peer", top)]
    add(4, "verified logins per server CPU-second, %d clients (vs openssl rsa2048 verify/s, 1 core)" % top,
        1000.0 / ours["cpu_ms"], rsa["verify"], "/s", 0)
    add(4, "Python peer: verified logins per server CPU-second, %d clients (vs openssl verify/s, 1 core)" % top,
        1000.0 / peer_r["cpu_ms"], rsa["verify"], "/s", 0)
    add(4, "verified logins/s, %d clients (vs openssl rsa2048 verify/s x %d cores)" % (top, os.cpu_count()),
        ours["rate"], rsa["verify"] * os.cpu_count(), "/s", 0)
    details.append("section 4 keep-alive runs: the test CA's server certificate (%s), fingerauthd with "
                   "--connection-rate 0" % certificate_key(world.ca.server_cert))
    details.append("section 4 durability: fingerauthd %s; Python peer %s (%d workers, each connection read back)"
                   % ("%s (its start-up log line)" % ours_durability if ours_durability else
                      "not reported by fingerauthd (no \"sqlite … synchronous=\" start-up line)",
                      " / ".join(peer.durability), PEER_WORKERS))
    details.append("section 4 machine limit: openssl speed -seconds %d rsa2048, this run, one core: %.0f verify/s "
                   "(%.1f us each), %.0f sign/s" % (rsa["seconds"], rsa["verify"], 1e6 / rsa["verify"], rsa["sign"]))
    for clients in SYNC_LEVELS:
        details.append("section 4 syncs, %d clients, a separate run of %d tokens (%s): %s"
                       % (clients, SYNC_TOKENS, syncs[("fingerauthd", clients)]["tool"], "; ".join(
                           "%s %d fsync + %d fdatasync for %d logins committed" %
                           (name, syncs[(name, clients)]["fsync"], syncs[(name, clients)]["fdatasync"],
                            syncs[(name, clients)]["ok"]) for name in ("fingerauthd", "peer"))))
    newconn.new_connections(users, key_rows, Peer, venv, tmp)
    return results


def certificate_key(path):
    """"ECDSA P-256" or "RSA-2048": the key of the certificate at `path`."""
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec
    key = x509.load_pem_x509_certificate(Path(path).read_bytes()).public_key()
    if isinstance(key, ec.EllipticCurvePublicKey):
        return "ECDSA P-256" if key.curve.name == "secp256r1" else "ECDSA " + key.curve.name
    return "RSA-%d" % key.key_size


def accepted_logins(db):
    """Accepted logins in the audit table of an SQLite database: fingerauthd's (outcome
    'accept') or the peer's (result 'ok')."""
    import sqlite3
    connection = sqlite3.connect(db, timeout=10)
    try:
        columns = {row[1] for row in connection.execute("PRAGMA table_info(audit)")}
        column, value = ("outcome", "accept") if "outcome" in columns else ("result", "ok")
        return connection.execute("SELECT count(*) FROM audit WHERE event = 'login' AND %s = ?" % column,
                                  (value,)).fetchone()[0]
    finally:
        connection.close()


def sync_counts(world, peer, users, tmp):
    """fsync and fdatasync calls per 1,000 verified logins, each side, in a separate short run
    per level (SYNC_TOKENS fresh tokens, section 4's wrk and login.lua) with the calls of the
    server's processes counted in the kernel (bench/durability.py). Not used for any rate."""
    out = {}
    for clients in SYNC_LEVELS:
        tokens = sign_tokens(users, SYNC_TOKENS)
        directory = Path(tmp) / ("sync-%d" % clients)
        write_token_files(tokens, clients, directory)
        for name, url, pids, db in (("fingerauthd", world.authd.url, [world.authd.pid], world.authd.db),
                                    ("peer", peer.url, peer.pids(), peer.db)):
            before = accepted_logins(db)
            counter = durability.SyncCounter(pids, tmp, started_pids).start()
            try:
                r = wrk(url, HERE / "wrk" / "login.lua", [str(directory)], clients, LEVEL_SECONDS, directory, tmp)
                time.sleep(0.3)  # the answers wrk no longer waited for are committed too
            finally:
                counts = counter.stop()
            # the logins the server committed while counted (wrk stops counting answers once
            # its tokens are sent; the server still commits the ones in flight)
            counts["ok"] = accepted_logins(db) - before
            if counts["ok"] < r["ok"]:  # the audit table no longer says (a change of schema?): wrk's count
                notes.append("sync count run, %s at %d clients: %d accepted login rows in the audit table for %d "
                             "verified answers; divided by the answers" % (name, clients, counts["ok"], r["ok"]))
                counts["ok"] = r["ok"]
            counts["per_1000"] = (counts["fsync"] + counts["fdatasync"]) * 1000.0 / max(1, counts["ok"])
            out[(name, clients)] = counts
            log("%-11s %2d clients: %d fsync + %d fdatasync for %d logins committed (wrk counted %d verified, %d "
                "refused): %.0f per 1,000 logins (%s; run not timed)"
                % (name, clients, counts["fsync"], counts["fdatasync"], counts["ok"], r["ok"], r["bad"],
                   counts["per_1000"], counts["tool"]))
            if r["bad"] or r["ok"] < len(tokens) * 0.5:
                notes.append("sync count run, %s at %d clients: %d refused, %d of %d tokens verified"
                             % (name, clients, r["bad"], r["ok"], len(tokens)))
        shutil.rmtree(directory)
    return out


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
    real_helper = world.settings["login_helper"]
    world.fake_helper(FAKE_LOGIN)  # the host process is what is watched; no finger needed
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
        world.write_conf(login_helper=real_helper, debug_file=str(world.module_log))
    ours, base = rss["fa-only"], rss["permit"]
    first = min(ours)
    add(5, "host RSS after %dk logins in 1 process (vs pam_permit)" % (MODULE_CYCLES // 1000), ours[MODULE_CYCLES] / 1024.0,
        base[MODULE_CYCLES] / 1024.0, "MiB", 1)
    add(5, "host RSS growth %dk->%dk logins (vs pam_permit)" % (first // 1000, MODULE_CYCLES // 1000),
        (ours[MODULE_CYCLES] - ours[first]) / 1024.0, (base[MODULE_CYCLES] - base[first]) / 1024.0, "MiB", 2,
        ratio=float("nan"))
    return before, after, ours, base


# -- 6. the authenticator on PostgreSQL -------------------------------------------------------------

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
    with durability.durable_postgres() as pg:
        log("PostgreSQL %s" % " ".join("%s=%s" % item for item in pg.settings.items()))
        details.append("section 6 durability: PostgreSQL %s (SHOW, this run's cluster)"
                       % " ".join("%s=%s" % item for item in pg.settings.items()))
        url = pg.create_database("bench")
        a = Authd(Path(tmp) / "pg-a", audience=AUDIENCE, tls=world.ca, db=url)
        b = Authd(Path(tmp) / "pg-b", audience=AUDIENCE, tls=world.ca, db=url)
        try:
            a.start()
            started_pids.append(a.pid)
            b.start()
            started_pids.append(b.pid)
            register_keys(a, a.create_token(HOST_ID), BENCH_USERS)
            said = [durability.authd_durability(authd) or "not reported" for authd in (a, b)]
            log("the two fingerauthd on PostgreSQL say they commit with: %s" % " / ".join(said))
            details.append("section 6 durability as the two fingerauthd report it (start-up line): %s"
                           % " / ".join(said))
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


def touch_against_round_trip(touch, alone):
    """Issue 34's touch-to-login target: at most 2x pam_fprintd's plus the authenticator's
    measured round trip (section 4's p50 at 1 client on a kept connection, this run); the row
    goes right after section 1's touch-to-login rows."""
    round_trip = alone["p50_us"] / 1000
    limit = 2 * touch["fprintd"]["p50"] + round_trip
    log("touch-to-login target: 2 x %.2f ms (pam_fprintd) + %.2f ms (authenticator round trip) = %.2f ms"
        % (touch["fprintd"]["p50"], round_trip, limit))
    add(1, "touch-to-login p50 (vs 2x pam_fprintd + authenticator round trip)", touch["ours"]["p50"], limit, "ms", 2,
        at_most_ratio=1.0)
    row = rows.pop()
    after = max((i for i, r in enumerate(rows) if r[1].startswith("touch-to-login")), default=len(rows) - 1)
    rows.insert(after + 1, row)


def print_table(elapsed):
    print()
    print("FingerAuth benchmark — each figure against its baseline, measured in this run except where marked "
          "\"recorded\" (%.0f s; load average at the end %.2f %.2f %.2f); target: the issue's, where it set one"
          % ((elapsed,) + os.getloadavg()))
    headers = ("#", "figure", "ours", "baseline", "ratio", "target")
    widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(6)]
    line = "| " + " | ".join("%-*s" % (widths[i], headers[i]) for i in range(6)) + " |"
    print(line)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join("%-*s" % (widths[i], str(r[i])) for i in range(6)) + " |")
    for line in details:
        print(line)
    for note in notes:
        print("note: " + note)
    for check in failed_checks:
        print("CHECK FAILED: " + check)


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
            ours50, _, split = login_latency(world, bench_user.name, password, fprint_socket, tmp)
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
        if split and ("fingerauthd", 1) in sqlite_results:
            touch_against_round_trip(split["touch"], sqlite_results[("fingerauthd", 1)])
        if "5" in ONLY:
            steadiness(world, tmp)
        if "6" in ONLY:
            on_postgres(world, tmp, sqlite_results)
        if "7" in ONLY:
            flood.flood(world, tmp)
        if "8" in ONLY:
            tpm.tpm_keys(tmp, ca, LOGINS, pamtest, success_times, Feeder, started_pids)
        if "9" in ONLY:
            console.large_audit(tmp, ca, started_pids)
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
    results.write_text(json.dumps({"machine": info, "rows": rows, "details": details, "notes": notes,
                                   "failed_checks": failed_checks,
                                   "split": split, "seconds": time.monotonic() - began}, indent=1))
    return 1 if problems or failed_checks else 0


if __name__ == "__main__":
    sys.exit(main())
