"""Section 4 of `make bench`: authenticator throughput — fingerauthd against the Python peer
(bench/peer/verifier.py under uvicorn) on the same pre-signed tokens, wrk on kept
connections at 1, 8 and 64 clients: verified logins/s, p50/p99, server CPU per login, each
side's durability and fsync/fdatasync per 1,000 logins (bench/durability.py), against the
machine's RSA limit (`openssl speed rsa2048`); then a new connection per login
(bench/sections/newconn.py)."""

import os
import shutil
import sqlite3
import time
from pathlib import Path

from bench import durability
from bench.common import HERE, BenchKey, log, proc_cpu_seconds, register_keys, sign_tokens, wrk, write_token_files
from bench.peer_process import PEER_WORKERS, Peer
from bench.sections import newconn

# 20,000 tokens a level: a run of several seconds on both sides, so that its p99 is the
# steady state and not the start (64 TLS handshakes at once take the first ~100 ms).
TOKENS_PER_LEVEL = int(os.environ.get("BENCH_TOKENS", "20000"))
LEVEL_SECONDS = int(os.environ.get("BENCH_LEVEL_SECONDS", "30"))
CLIENT_LEVELS = (1, 8, 64)
# fsync/fdatasync counts: a separate short run per level, not used for any other figure
SYNC_TOKENS = int(os.environ.get("BENCH_SYNC_TOKENS", "2000"))
SYNC_LEVELS = tuple(int(v) for v in os.environ.get("BENCH_SYNC_LEVELS", "8,64").split(",") if v)
# issue 13's targets for section 4 (fingerauthd against the Python peer, same run, same tokens);
# the server CPU ones are issue 34's
THROUGHPUT_TARGETS = {("rate", 8): {"at_least_ratio": 5.0}, ("rate", 64): {"at_least_ratio": 5.0},
                      ("p99", 64): {"at_most_ratio": 0.5}, ("p50", 1): {"at_most_ratio": 1.0},
                      ("cpu", 8): {"at_most_ratio": 0.2}, ("cpu", 64): {"at_most_ratio": 0.2}}


def run(bench):
    """Returns {(side, clients): figures}; ("fingerauthd", n) is section 6's baseline."""
    world, tmp, results = bench.world, bench.tmp, bench.results
    print("== 4. authenticator throughput: wrk, keep-alive, unique pre-signed tokens", flush=True)
    users = {"bench%d" % i: BenchKey() for i in range(4)}
    register_keys(world.authd, world.token_path.read_text().strip(), users)
    # the peer's registry: the same keys, read from fingerauthd's own table
    source = sqlite3.connect(world.authd.db, timeout=10)
    key_rows = source.execute("SELECT kid, user, host, jwk FROM keys WHERE user LIKE 'bench%'").fetchall()
    source.close()
    if len(key_rows) != len(users):
        raise RuntimeError("fingerauthd's keys table: %d rows for %d bench users" % (len(key_rows), len(users)))
    from bench.peer.verifier import init_db  # PyJWT at import: only when this section runs
    peer_db = Path(tmp) / "peer.db"
    init_db(str(peer_db), key_rows)
    # the machine's limit, measured now, before any wrk run: one core's RSA-2048 verifications
    rsa = durability.openssl_rsa2048()
    log("openssl speed -seconds %d rsa2048 (one core, this run): %.0f sign/s, %.0f verify/s (%.1f us per verify)"
        % (rsa["seconds"], rsa["sign"], rsa["verify"], 1e6 / rsa["verify"]))
    peer = Peer(bench.venv, world.ca, peer_db, tmp, bench.started)
    ours_durability = durability.authd_durability(world.authd)
    log("durability: fingerauthd %s; Python peer %s"
        % ("%s (its start-up log line)" % ours_durability if ours_durability else
           "not reported (no \"sqlite … synchronous=\" line in its log yet)", " / ".join(peer.durability)))
    runs = {}
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
                r = wrk(url, HERE / "wrk" / "login.lua", [str(directory)], clients, LEVEL_SECONDS, directory, tmp,
                        bench.started)
                cpu1 = proc_cpu_seconds(pids)
                r["server_user"], r["server_sys"] = cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]
                r["rate"] = r["ok"] / r["seconds"]
                r["cpu_ms"] = (r["server_user"] + r["server_sys"]) * 1000 / max(1, r["ok"])
                if not r["finished"]:
                    results.notes.append("%s at %d clients: the tokens lasted the whole %d s"
                                         % (name, clients, LEVEL_SECONDS))
                runs[(name, clients)] = r
                log("%-11s %2d clients: %6.0f verified/s, p50 %6.2f ms p99 %7.2f ms, %d refused, %d sent in %.1f s; "
                    "CPU: server %.1f s user + %.1f s sys (%.2f ms per login), wrk %.1f s"
                    % (name, clients, r["rate"], r["p50_us"] / 1000, r["p99_us"] / 1000, r["bad"], r["requests"],
                       r["seconds"], r["server_user"], r["server_sys"], r["cpu_ms"], r["cpu"]))
                if r["bad"] or r["ok"] < len(tokens) * 0.5:
                    results.notes.append("%s at %d clients: %d refused, %d of %d tokens verified" %
                                         (name, clients, r["bad"], r["ok"], len(tokens)))
            shutil.rmtree(directory)
        syncs = sync_counts(bench, peer, users)
    finally:
        peer.stop()
    for clients in CLIENT_LEVELS:
        ours, peer_r = runs[("fingerauthd", clients)], runs[("peer", clients)]
        results.add(4, "verified logins/s, %d clients (vs Python peer)" % clients, ours["rate"], peer_r["rate"], "/s",
                    0, **THROUGHPUT_TARGETS.get(("rate", clients), {}))
        results.add(4, "p50, %d clients (vs Python peer)" % clients, ours["p50_us"] / 1000, peer_r["p50_us"] / 1000,
                    "ms", 2, **THROUGHPUT_TARGETS.get(("p50", clients), {}))
        results.add(4, "p99, %d clients (vs Python peer)" % clients, ours["p99_us"] / 1000, peer_r["p99_us"] / 1000,
                    "ms", 2, **THROUGHPUT_TARGETS.get(("p99", clients), {}))
    for clients in CLIENT_LEVELS:
        ours, peer_r = runs[("fingerauthd", clients)], runs[("peer", clients)]
        results.add(4, "server CPU per verified login, %d clients (vs Python peer)" % clients, ours["cpu_ms"],
                    peer_r["cpu_ms"], "ms", 3, **THROUGHPUT_TARGETS.get(("cpu", clients), {}))
    for clients in SYNC_LEVELS:
        results.add(4, "fsync+fdatasync per 1,000 verified logins, %d clients (vs Python peer)" % clients,
                    syncs[("fingerauthd", clients)]["per_1000"], syncs[("peer", clients)]["per_1000"], "", 0)
    # how far from the machine's limit: logins per second of server CPU against what one core
    # verifies per second (a login costs at least one RSA-2048 verification)
    top = max(CLIENT_LEVELS)
    ours, peer_r = runs[("fingerauthd", top)], runs[("peer", top)]
    results.add(4, "verified logins per server CPU-second, %d clients (vs openssl rsa2048 verify/s, 1 core)" % top,
                1000.0 / ours["cpu_ms"], rsa["verify"], "/s", 0)
    results.add(4, "Python peer: verified logins per server CPU-second, %d clients (vs openssl verify/s, 1 core)"
                % top, 1000.0 / peer_r["cpu_ms"], rsa["verify"], "/s", 0)
    results.add(4, "verified logins/s, %d clients (vs openssl rsa2048 verify/s x %d cores)" % (top, os.cpu_count()),
                ours["rate"], rsa["verify"] * os.cpu_count(), "/s", 0)
    results.details.append("section 4 keep-alive runs: the test CA's server certificate (%s), fingerauthd with "
                           "--connection-rate 0" % certificate_key(world.ca.server_cert))
    results.details.append("section 4 durability: fingerauthd %s; Python peer %s (%d workers, each connection read "
                           "back)" % ("%s (its start-up log line)" % ours_durability if ours_durability else
                                      "not reported by fingerauthd (no \"sqlite … synchronous=\" start-up line)",
                                      " / ".join(peer.durability), PEER_WORKERS))
    results.details.append("section 4 machine limit: openssl speed -seconds %d rsa2048, this run, one core: %.0f "
                           "verify/s (%.1f us each), %.0f sign/s"
                           % (rsa["seconds"], rsa["verify"], 1e6 / rsa["verify"], rsa["sign"]))
    for clients in SYNC_LEVELS:
        results.details.append("section 4 syncs, %d clients, a separate run of %d tokens (%s): %s"
                               % (clients, SYNC_TOKENS, syncs[("fingerauthd", clients)]["tool"], "; ".join(
                                   "%s %d fsync + %d fdatasync for %d logins committed" %
                                   (name, syncs[(name, clients)]["fsync"], syncs[(name, clients)]["fdatasync"],
                                    syncs[(name, clients)]["ok"]) for name in ("fingerauthd", "peer"))))
    newconn.run(bench, users, key_rows)
    return runs


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
    connection = sqlite3.connect(db, timeout=10)
    try:
        columns = {row[1] for row in connection.execute("PRAGMA table_info(audit)")}
        column, value = ("outcome", "accept") if "outcome" in columns else ("result", "ok")
        return connection.execute("SELECT count(*) FROM audit WHERE event = 'login' AND %s = ?" % column,
                                  (value,)).fetchone()[0]
    finally:
        connection.close()


def sync_counts(bench, peer, users):
    """fsync and fdatasync calls per 1,000 verified logins, each side, in a separate short run
    per level (SYNC_TOKENS fresh tokens, section 4's wrk and login.lua) with the calls of the
    server's processes counted in the kernel (bench/durability.py). Not used for any rate."""
    world, tmp = bench.world, bench.tmp
    out = {}
    for clients in SYNC_LEVELS:
        tokens = sign_tokens(users, SYNC_TOKENS)
        directory = Path(tmp) / ("sync-%d" % clients)
        write_token_files(tokens, clients, directory)
        for name, url, pids, db in (("fingerauthd", world.authd.url, [world.authd.pid], world.authd.db),
                                    ("peer", peer.url, peer.pids(), peer.db)):
            before = accepted_logins(db)
            counter = durability.SyncCounter(pids, tmp, bench.started).start()
            try:
                r = wrk(url, HERE / "wrk" / "login.lua", [str(directory)], clients, LEVEL_SECONDS, directory, tmp,
                        bench.started)
                time.sleep(0.3)  # the answers wrk no longer waited for are committed too
            finally:
                counts = counter.stop()
            # the logins the server committed while counted (wrk stops counting answers once
            # its tokens are sent; the server still commits the ones in flight)
            counts["ok"] = accepted_logins(db) - before
            if counts["ok"] < r["ok"]:  # the audit table no longer says (a change of schema?): wrk's count
                bench.results.notes.append("sync count run, %s at %d clients: %d accepted login rows in the audit "
                                           "table for %d verified answers; divided by the answers"
                                           % (name, clients, counts["ok"], r["ok"]))
                counts["ok"] = r["ok"]
            counts["per_1000"] = (counts["fsync"] + counts["fdatasync"]) * 1000.0 / max(1, counts["ok"])
            out[(name, clients)] = counts
            log("%-11s %2d clients: %d fsync + %d fdatasync for %d logins committed (wrk counted %d verified, %d "
                "refused): %.0f per 1,000 logins (%s; run not timed)"
                % (name, clients, counts["fsync"], counts["fdatasync"], counts["ok"], r["ok"], r["bad"],
                   counts["per_1000"], counts["tool"]))
            if r["bad"] or r["ok"] < len(tokens) * 0.5:
                bench.results.notes.append("sync count run, %s at %d clients: %d refused, %d of %d tokens verified"
                                           % (name, clients, r["bad"], r["ok"], len(tokens)))
        shutil.rmtree(directory)
    return out
