"""Section 6 of `make bench`: the authenticator on a durable PostgreSQL (a private cluster,
always removed; bench/durability.py), one and two fingerauthd on one database, section 4's
wrk and tokens, against one fingerauthd on SQLite at the same level."""

import os
import shutil
import threading
from pathlib import Path

from support.authd import Authd
from support.world import AUDIENCE, HOST_ID

from bench import durability
from bench.common import HERE, BenchKey, log, proc_cpu_seconds, register_keys, sign_tokens, wrk, write_token_files
from bench.sections.throughput import LEVEL_SECONDS, TOKENS_PER_LEVEL

PG_TOKENS = int(os.environ.get("BENCH_PG_TOKENS", str(TOKENS_PER_LEVEL)))
PG_CLIENT_LEVELS = (8, 64)


def wrk_split(bench, users, targets, clients, tag):
    """Section 4's wrk run against every (name, authd) of `targets` at once: one wrk process
    each, `clients` split evenly, each with its own disjoint set of fresh tokens. Returns the
    combined figures: verified answers added, over the longest of the runs; p50/p99 the worst
    of the processes' (wrk's histograms cannot be merged)."""
    tmp = bench.tmp
    each = clients // len(targets)
    tokens = sign_tokens(users, PG_TOKENS)
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
                         dirs[i], bench.started)
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


def run(bench, sqlite_results):
    """`sqlite_results`: section 4's figures ({} when it did not run: then one fingerauthd on
    SQLite is measured here as the baseline)."""
    world, tmp, results = bench.world, bench.tmp, bench.results
    print("== 6. the authenticator on PostgreSQL: one and two fingerauthd on one database (wrk, %d tokens a run)"
          % PG_TOKENS, flush=True)
    users = {"pgbench%d" % i: BenchKey() for i in range(4)}
    register_keys(world.authd, world.token_path.read_text().strip(), users)
    runs = {}
    with durability.durable_postgres() as pg:
        log("PostgreSQL %s" % " ".join("%s=%s" % item for item in pg.settings.items()))
        results.details.append("section 6 durability: PostgreSQL %s (SHOW, this run's cluster)"
                               % " ".join("%s=%s" % item for item in pg.settings.items()))
        url = pg.create_database("bench")
        a = Authd(Path(tmp) / "pg-a", audience=AUDIENCE, tls=world.ca, db=url)
        b = Authd(Path(tmp) / "pg-b", audience=AUDIENCE, tls=world.ca, db=url)
        try:
            a.start()
            bench.started.append(a.pid)
            b.start()
            bench.started.append(b.pid)
            register_keys(a, a.create_token(HOST_ID), users)
            said = [durability.authd_durability(authd) or "not reported" for authd in (a, b)]
            log("the two fingerauthd on PostgreSQL say they commit with: %s" % " / ".join(said))
            results.details.append("section 6 durability as the two fingerauthd report it (start-up line): %s"
                                   % " / ".join(said))
            for clients in PG_CLIENT_LEVELS:
                setups = [("postgresql x1", [a]), ("postgresql x2", [a, b])]
                if ("fingerauthd", clients) not in sqlite_results:
                    setups.insert(0, ("sqlite x1", [world.authd]))
                for name, targets in setups:
                    r = wrk_split(bench, users, targets, clients, name.replace(" ", ""))
                    runs[(name, clients)] = r
                    log("%-13s %2d clients: %6.0f verified/s (per instance %s), p50 %6.2f ms p99 %7.2f ms, %d refused, "
                        "%d sent in %.1f s; server CPU %.1f s (%.2f ms per login), wrk %.1f s"
                        % (name, clients, r["rate"], "/".join("%.0f" % v for v in r["per"]), r["p50_us"] / 1000,
                           r["p99_us"] / 1000, r["bad"], r["requests"], r["seconds"], r["server"],
                           r["server"] * 1000 / max(1, r["ok"]), r["cpu"]))
                    if not r["finished"]:
                        results.notes.append("%s at %d clients: the tokens lasted the whole %d s"
                                             % (name, clients, LEVEL_SECONDS))
                    if r["bad"] or r["ok"] < r["tokens"] * 0.5:
                        results.notes.append("%s at %d clients: %d refused, %d of %d tokens verified" %
                                             (name, clients, r["bad"], r["ok"], r["tokens"]))
        finally:
            a.stop()
            b.stop()
        for authd in (a, b):
            if authd.returncode not in (0, None):
                results.notes.append("fingerauthd on PostgreSQL exited %s" % authd.returncode)
    for clients in PG_CLIENT_LEVELS:
        base = sqlite_results.get(("fingerauthd", clients)) or runs[("sqlite x1", clients)]
        for name, label in (("postgresql x1", "1 fingerauthd on PostgreSQL"),
                            ("postgresql x2", "2 fingerauthd on one PostgreSQL")):
            r = runs[(name, clients)]
            results.add(6, "%s: logins/s, %d clients (vs SQLite x1)" % (label, clients), r["rate"], base["rate"],
                        "/s", 0)
            results.add(6, "%s: p50, %d clients (vs SQLite x1)" % (label, clients), r["p50_us"] / 1000,
                        base["p50_us"] / 1000, "ms", 2)
            results.add(6, "%s: p99, %d clients (vs SQLite x1)" % (label, clients), r["p99_us"] / 1000,
                        base["p99_us"] / 1000, "ms", 2)
    return runs
