"""`make bench`: FingerAuth's figures, each against a baseline measured in this same run,
printed as one table (figure, ours, baseline, ratio, the issue's target where it set one)
and written to build/bench-results.json. See BENCHMARKS.md.

    FINGERAUTH_BUILD=<dir with the built binaries> BENCH_VENV=<venv with uvicorn, PyJWT>
        /usr/bin/python3 bench/run.py

One module a section, in bench/sections/, run in this order:

    1   login.py         login latency through real libpam; touch-to-login
    1b  helper_split.py  where our login's time goes (run with 1)
    2   module.py        the module's own cost in the host
    3   fallover.py      fall-over to the password
    4   throughput.py    the authenticator against a Python peer; newconn.py, a new
                         connection per login
    5   steadiness.py    fingerauthd's and the host's memory over a long run
    6   postgres.py      one and two fingerauthd on a durable PostgreSQL
    7   flood.py         a flood of refused requests beside valid logins
    8   tpm.py           a login with a TPM key on swtpm
    9   console.py       the admin console on a million audit rows
    10  approval.py      remote approval: touch to PAM_SUCCESS, idle watches, PostgreSQL

BENCH_ONLY=2,3 runs those sections only. Built on the integration tests' World
(Tests/integration/support): nss_wrapper users, a test CA, libfprint's virtual reader, a
real fingerauthd over TLS on loopback, enrollment through the real CLI. Nothing is left on
the machine: every process started is checked for at the end (bench/system.py).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import system  # noqa: E402  (importing bench puts Tests/integration on the path)
from bench.common import Bench  # noqa: E402
from bench.pam import IDENTITY  # noqa: E402
from bench.results import Results  # noqa: E402
from bench.sections import (approval, console, fallover, flood, login, module, postgres, steadiness,  # noqa: E402
                            throughput, tpm)
from support.tls import make_ca  # noqa: E402
from support.world import World  # noqa: E402

ONLY = set(os.environ.get("BENCH_ONLY", "1,2,3,4,5,6,7,8,9,10").split(","))  # a subset, for development


def machine():
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    swift_bin = shutil.which("swift") or "/opt/swift/usr/bin/swift"
    try:
        swift = subprocess.run([swift_bin, "--version"], capture_output=True, text=True).stdout.splitlines()
    except OSError:
        swift = []
    return {"nproc": os.cpu_count(), "cpu": model, "kernel": os.uname().release,
            "swift": swift[0] if swift else "?", "load": os.getloadavg()}


def run_sections(bench):
    """The sections in order; what one hands the next is passed here, in the open. Returns
    section 1b's split (None when section 1 did not run)."""
    split = None
    if "1" in ONLY:
        ours50, split = login.run(bench)
    else:
        ours50 = login.baseline_only(bench)
    if "2" in ONLY:
        module.run(bench)
    if "3" in ONLY:
        fallover.run(bench, ours50)
    sqlite_results = throughput.run(bench) if "4" in ONLY else {}
    if split and ("fingerauthd", 1) in sqlite_results:
        login.touch_against_round_trip(bench.results, split["touch"], sqlite_results[("fingerauthd", 1)])
    if "5" in ONLY:
        steadiness.run(bench)
    if "6" in ONLY:
        postgres.run(bench, sqlite_results)
    if "7" in ONLY:
        flood.run(bench)
    if "8" in ONLY:
        tpm.run(bench)
    if "9" in ONLY:
        console.run(bench)
    if "10" in ONLY:
        approval.run(bench, split)
    return split


def main():
    began = time.monotonic()
    venv = os.environ.get("BENCH_VENV", str(REPO / "build" / "bench-venv"))
    info = machine()
    print("machine: %(nproc)s cores, %(cpu)s, kernel %(kernel)s, %(swift)s; load average at start %(load)s" % info)
    tmp = Path(tempfile.mkdtemp(prefix="fingerauth-bench."))
    os.chmod(tmp, 0o755)
    results, started = Results(), []
    world = split = None
    failed = False
    try:
        ca = make_ca(tmp / "ca")
        (tmp / "world").mkdir()
        world = World(tmp / "world", ca)
        world.start_authenticator()
        started.append(world.authd.pid)
        world.enroll("alice", IDENTITY)
        split = run_sections(Bench(world, ca, tmp, venv, results, started))
    except BaseException:
        failed = True
        raise
    finally:
        if world is not None:
            world.close()
        problems = system.leftovers([p for p in started if p])
        for problem in problems:
            print("LEFTOVER: " + problem)
        if failed or problems:
            print("bench: kept %s for inspection" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    results.print_table(time.monotonic() - began)
    out = Path(os.environ.get("BENCH_RESULTS", REPO / "build" / "bench-results.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": info, "rows": results.rows, "details": results.details,
                               "notes": results.notes, "failed_checks": results.failed_checks,
                               "split": split, "seconds": time.monotonic() - began}, indent=1))
    return 1 if problems or results.failed_checks else 0


if __name__ == "__main__":
    sys.exit(main())
