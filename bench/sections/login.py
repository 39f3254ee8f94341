"""Section 1 of `make bench`: login latency through real libpam, ours against pam_fprintd,
pam_unix (yescrypt) and pam_permit, with the finger already on the reader and touch-to-login
(the finger put on after the prompt). pam_unix and pam_fprintd need a real user (`fabench`,
made here with a yescrypt hash, always removed) and fprintd on a system bus with polkitd
(started here by hand, always stopped): bench/system.py. Section 1b (bench/sections/
helper_split.py) runs after it."""

import os
import re
import statistics
import subprocess
import time
from pathlib import Path

from support.vreader import VirtualReader, enroll_commands

from bench import system
from bench.common import b64url, log, pct, plain_env
from bench.pam import (IDENTITY, LOGINS, PROMPT_OURS, SETTLE_S, Feeder, now_us, pamtest, send_timed, success_times,
                       write_service)
from bench.sections import helper_split

PROMPT_FPRINTD = re.compile(r"^(Swipe|Place|Touch|Scan) your .*finger")

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



def touch_logins(bench, service, user, count, reader_path, prompt, scan, pamtime, env, before=()):
    """`count` logins in one fa-pamtest process (--repeat), the finger put on the reader only
    when the login asks for it: at each prompt (`prompt` matches the INFO text) wait for the
    reader's socket, sleep SETTLE_S so the helper or fprintd sits idle waiting, send `before`,
    then `scan`, timed. pam_authenticate's return comes from the PAMTIME shim. Returns
    ([(touch_to_login_ms, prompt_to_touch_ms)] for the logins, all successful, or it raises;
    the prompt's text)."""
    world = bench.world
    env = dict(env)
    env["LD_PRELOAD"] = ":".join(p for p in (str(pamtime), env.get("LD_PRELOAD")) if p)
    cmd = [str(world.build / "fa-pamtest"), "--timing", "--confdir", str(world.confdir), "--service", service,
           "--user", user, "--repeat", str(count)]
    reader = VirtualReader(reader_path)
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    bench.started.append(proc.pid)
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


def login_latency(bench, bench_user, password, fprintd_socket):
    world, results = bench.world, bench.results
    print("== 1. login latency through real libpam (%d logins each)" % LOGINS, flush=True)
    times = {}
    ours_service = world.service("fa-only", fallback=False)
    permit = write_service(world, "permit", "auth required pam_permit.so")
    unix = write_service(world, "unix", "auth required pam_unix.so")
    fprint = write_service(world, "fprintd", "auth required pam_fprintd.so max-tries=1 timeout=10")
    pamtime = build_pamtime(bench.tmp)

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
    touch["ours"], prompts["ours"] = touch_logins(bench, ours_service, "alice", LOGINS, world.reader.path, PROMPT_OURS,
                                                  "SCAN " + IDENTITY, pamtime, world.env)
    touch["fprintd"], prompts["fprintd"] = touch_logins(bench, fprint, bench_user, LOGINS, fprintd_socket, PROMPT_FPRINTD,
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
    results.add(1, "touch-to-login p50 (vs pam_fprintd)", statistics.median(touch_ms["ours"]),
                statistics.median(touch_ms["fprintd"]), "ms", 2, at_most_ratio=1.0)
    results.add(1, "touch-to-login p99 (vs pam_fprintd)", pct(touch_ms["ours"], 0.99), pct(touch_ms["fprintd"], 0.99),
                "ms", 2)
    for key, label, target in (("fprintd", "pam_fprintd (local only)", 1.0), ("unix", "pam_unix yescrypt", 0.5),
                               ("permit", "pam_permit", None)):
        results.add(1, "login p50, finger at once (vs %s)" % label, ours50, statistics.median(times[key]), "ms", 2,
                    at_most_ratio=target)
        results.add(1, "login p99, finger at once (vs %s)" % label, ours99, pct(times[key], 0.99), "ms", 2)
    split = helper_split.run(bench, ours50, statistics.median(touch_ms["ours"]))
    split["touch"] = {key: {"p50": statistics.median(v), "p99": pct(v, 0.99), "n": len(v)} for key, v in touch_ms.items()}
    return ours50, times, split


def run(bench):
    """Section 1 and 1b: the bench user and fprintd set up, the logins, both undone.
    Returns (our finger-at-once p50 in ms, section 1b's split with the touch-to-login figures)."""
    bench_user = fprintd = None
    try:
        password = b64url(os.urandom(12))
        bench_user = system.BenchUser(password)
        fprint_dir = bench.tmp / "fprint"
        fprint_dir.mkdir(mode=0o700)
        fprint_socket = fprint_dir / "virtual.sock"
        fprintd = system.Fprintd(fprint_socket, str(bench.tmp))
        bench.started.extend(p.pid for _, p in fprintd.procs)
        bench.started.append(fprintd.bus_pid)
        enroll_feed = VirtualReader(fprint_socket).feed(enroll_commands("finger-F"), timeout=30)
        fprintd.enroll(bench_user.name, enroll_feed)
        ours50, _, split = login_latency(bench, bench_user.name, password, fprint_socket)
    finally:
        if fprintd is not None:
            fprintd.close()
        if bench_user is not None:
            bench_user.close()
    return ours50, split


def baseline_only(bench):
    """When section 1 is not run: our finger-at-once p50 over 20 logins (section 3's
    baseline), and the pam_permit service section 2 compares with."""
    world = bench.world
    write_service(world, "permit", "auth required pam_permit.so")
    feeder = Feeder(world.reader.path, ["SCAN " + IDENTITY])
    try:
        return statistics.median(success_times("ours", pamtest(world, world.service("fa-only", fallback=False),
                                                                "alice", 20)[0]))
    finally:
        feeder.stop()


def touch_against_round_trip(results, touch, alone):
    """Issue 34's touch-to-login target: at most 2x pam_fprintd's plus the authenticator's
    measured round trip (section 4's p50 at 1 client on a kept connection, this run); the row
    goes right after section 1's touch-to-login rows."""
    round_trip = alone["p50_us"] / 1000
    limit = 2 * touch["fprintd"]["p50"] + round_trip
    log("touch-to-login target: 2 x %.2f ms (pam_fprintd) + %.2f ms (authenticator round trip) = %.2f ms"
        % (touch["fprintd"]["p50"], round_trip, limit))
    results.add(1, "touch-to-login p50 (vs 2x pam_fprintd + authenticator round trip)", touch["ours"]["p50"], limit,
                "ms", 2, at_most_ratio=1.0)
    results.move_last_after("touch-to-login")
