"""Section 3 of `make bench`: fall-over, the time from pam_authenticate to the password
prompt when the authenticator refuses the connection, answers 500, or never answers;
against our successful login of section 1. For the refused and silent cases the run checks
that no finger was asked for before the password prompt."""

import os
import re
import statistics

from support.fakeauth import FakeAuthenticator, SilentServer, answer, closed_port_url
from support.world import PASSWORDS

from bench.common import log
from bench.pam import IDENTITY, PROMPT_OURS, Feeder, pamtest

FALLOVER_REPEAT = int(os.environ.get("BENCH_FALLOVER", "30"))


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


def run(bench, ours50):
    """`ours50`: our finger-at-once login's p50 (ms), the rows' baseline."""
    world = bench.world
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
        bench.results.add(3, "to password prompt, %s (vs our login)" % label, median, ours50, "ms", 1, at_most=target)
        if no_touch and touched[key]:
            bench.results.failed_checks.append(
                "fall-over %s: \"%s\" shown before the password prompt in %d of %d logins (expected: before any "
                "touch)" % (label, PROMPT_OURS, touched[key], len(results[key])))
    return {k: statistics.median(v) for k, v in results.items()}, touched

