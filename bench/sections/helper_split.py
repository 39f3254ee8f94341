"""Section 1b of `make bench`: where our login's time goes, from what can be seen outside
Sources/: the module with a stand-in helper (the module, libpam, spawning a shell script);
the real helper run by hand, its output lines timed (READY, MATCH, ACCEPTED, exit); the
helper's reader-only mode (READY after the prints and the reader, no key, no network); and
what the helper's shared libraries cost a fresh process before main."""

import os
import statistics
import subprocess
import time
from pathlib import Path

from support.vreader import VirtualReader
from support.world import HOST_ID

from bench.common import b64url, log
from bench.pam import FAKE_LOGIN, IDENTITY, LOGINS, SETTLE_S, now_us, pamtest, send_timed, success_times

HELPER_RUNS = int(os.environ.get("BENCH_HELPER_RUNS", "40"))  # the helper run directly


def helper_request(world, jti):
    """The request the module writes to the helper for alice (LoginJob.text): this World's
    settings, the defaults for max_tries and ttl."""
    s = world.settings
    lines = ["user=alice", "service=fa-only", "jti=" + jti, "issuer=" + HOST_ID, "url=" + s["url"],
             "audience=" + s["audience"], "cafile=" + s["cafile"], "timeout=" + s["timeout"], "max_tries=3",
             "ttl=30", "state_dir=" + s["state_dir"], "virtual_reader=" + s["virtual_reader"], "allow_http=no"]
    return "\n".join(lines) + "\n"


def helper_alone(bench, argv, request=None):
    """Runs the helper once by hand as the module would (request already in the pipe, output
    read line by line): at READY waits SETTLE_S, then puts the finger on the reader. Returns
    {line word: ms since spawn}, "SCAN" and "exit" included, and "cpu" (ms, wait4)."""
    world = bench.world
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
    bench.started.append(proc.pid)
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


def run(bench, ours50, touch50):
    """Section 1b, after section 1's logins: `ours50` its finger-at-once p50, `touch50` its
    touch-to-login p50 (ms). Returns the split (build/bench-results.json's "split")."""
    world = bench.world
    print("== 1b. where our login's time goes", flush=True)
    service = "fa-only"
    real_helper = world.settings["login_helper"]
    world.fake_helper(FAKE_LOGIN)
    try:
        fake = statistics.median(success_times("stand-in helper", pamtest(world, service, "alice", LOGINS)[0]))
    finally:
        world.write_conf(login_helper=real_helper)
    runs = max(3, HELPER_RUNS)
    login_runs = [helper_alone(bench, [real_helper, "--login"], helper_request(world, b64url(os.urandom(16))))
                  for _ in range(runs)]
    reader_runs = [helper_alone(bench, [real_helper, "--user", "alice", "--state-dir", world.settings["state_dir"],
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

