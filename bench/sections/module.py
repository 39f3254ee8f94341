"""Section 2 of `make bench`: the module's own cost in the host — instructions (callgrind)
and CPU (getrusage) per login against pam_permit, with the stand-in helper; its stripped
size and dlopen+dlclose against pam_fprintd.so; and each beside the last recorded run of the
thick module."""

import os
import re
import statistics
import subprocess
from pathlib import Path

from bench.common import log
from bench.pam import FAKE_LOGIN, LOGINS, pamtest

SECURITY = "/usr/lib/x86_64-linux-gnu/security"
# Section 2's figures of the last recorded run (docs/benchmark-history.md, quiet machine, caecb52), when
# the module itself loaded the key, signed and spoke TLS: printed beside this run's.
THICK_MODULE = {"size_kib": 6212.0, "load_ms": 12.10, "cpu_ms": 9.038, "instructions_m": 54.65,
                "machine": "2 cores, AMD EPYC at 2445 MHz"}


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


def run(bench):
    world, tmp, results = bench.world, bench.tmp, bench.results
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
    results.add(2, "instructions per login in the host (vs pam_permit)", module_ir / 1e6, ir[permit] / 1e6, "M", 2)
    results.add(2, "CPU per login in the host, rusage (vs pam_permit)", module_cpu, cpu[permit], "ms", 3, at_most=1.0)
    ours_path = str(world.build / "pam_fingerauth.so")
    peer_path = os.path.join(SECURITY, "pam_fprintd.so")
    size_kib = os.path.getsize(ours_path) / 1024.0
    results.add(2, "module size, stripped (vs pam_fprintd.so)", size_kib, os.path.getsize(peer_path) / 1024.0, "KiB", 0)
    source = Path(tmp) / "loadtime.c"
    source.write_text(LOADTIME_C)
    binary = str(Path(tmp) / "loadtime")
    subprocess.run(["gcc", "-O2", "-o", binary, str(source), "-ldl"], check=True)
    ours_load, peer_load = load_time_ms(binary, ours_path), load_time_ms(binary, peer_path)
    log("dlopen+dlclose in a fresh process, median of 40: ours %.2f ms, pam_fprintd.so %.2f ms" % (ours_load, peer_load))
    results.add(2, "module dlopen+dlclose (vs pam_fprintd.so)", ours_load, peer_load, "ms", 2)
    thick = THICK_MODULE
    log("the last recorded run (docs/benchmark-history.md, the module that loaded the key, signed and spoke TLS itself; "
        "measured on %s, so compare across machines with care): %.2f M instructions, %.3f ms CPU per login, "
        "%.0f KiB stripped, dlopen+dlclose %.2f ms"
        % (thick["machine"], thick["instructions_m"], thick["cpu_ms"], thick["size_kib"], thick["load_ms"]))
    recorded = "(vs recorded: thick module, benchmark history)"
    results.add(2, "instructions per login in the host %s" % recorded, module_ir / 1e6, thick["instructions_m"], "M", 2)
    results.add(2, "CPU per login in the host, rusage %s" % recorded, module_cpu, thick["cpu_ms"], "ms", 3)
    results.add(2, "module size, stripped %s" % recorded, size_kib, thick["size_kib"], "KiB", 0)
    results.add(2, "module dlopen+dlclose %s" % recorded, ours_load, thick["load_ms"], "ms", 2)
    return module_ir, module_cpu

