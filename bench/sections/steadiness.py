"""Section 5 of `make bench`: steadiness — fingerauthd's RSS before and after a million
`GET /healthz`, and the host's RSS over 10,000 logins in one process (the stand-in helper)
against pam_permit."""

import os
import re
import time

from bench.common import HERE, log, wrk
from bench.pam import FAKE_LOGIN, pamtest

STEADY_REQUESTS = int(os.environ.get("BENCH_REQUESTS", "1000000"))
MODULE_CYCLES = int(os.environ.get("BENCH_CYCLES", "10000"))


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def run(bench):
    world, tmp, results = bench.world, bench.tmp, bench.results
    print("== 5. steadiness", flush=True)
    pid = world.authd.pid
    before = rss_kb(pid)
    r = wrk(world.authd.url, HERE / "wrk" / "count.lua", [str(STEADY_REQUESTS), "2", "/healthz", str(tmp)], 16, 400,
            tmp, tmp, bench.started)
    after = rss_kb(pid)
    log("fingerauthd: %d GET /healthz answered 200 (keep-alive, 16 connections) in %.1f s (%.0f/s); "
        "RSS %d kB before, %d kB after" % (r["ok"], r["seconds"], r["ok"] / r["seconds"],
                                          before, after))
    if r["ok"] < STEADY_REQUESTS:
        results.notes.append("steadiness: only %d of %d requests answered 200" % (r["ok"], STEADY_REQUESTS))
    results.add(5, "fingerauthd RSS after %dk GET /healthz (vs before)" % (r["ok"] // 1000), after / 1024.0,
                before / 1024.0, "MiB", 1)
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
    results.add(5, "host RSS after %dk logins in 1 process (vs pam_permit)" % (MODULE_CYCLES // 1000),
                ours[MODULE_CYCLES] / 1024.0, base[MODULE_CYCLES] / 1024.0, "MiB", 1)
    results.add(5, "host RSS growth %dk->%dk logins (vs pam_permit)" % (first // 1000, MODULE_CYCLES // 1000),
                (ours[MODULE_CYCLES] - ours[first]) / 1024.0, (base[MODULE_CYCLES] - base[first]) / 1024.0, "MiB", 2,
                ratio=float("nan"))
    return before, after, ours, base
