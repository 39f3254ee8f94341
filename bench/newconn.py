"""Section 4, new connections: every login on a new TCP connection with a full TLS handshake,
as the login helper makes it (a new process per login, no session kept).

wrk sends `Connection: close` (bench/wrk/login.lua's "close"); both servers answer and close,
and wrk connects again for the next request. wrk would resume the previous connection's
session where the server issues tickets; bench/handshakes.c, preloaded into wrk, drops it
before each handshake and counts the handshakes and resumptions. Each run checks against
the requests wrk counted that every one had its own connection (also the kernel's count of
accepted TCP connections, PassiveOpens in /proc/net/snmp, the whole machine's) and that none
resumed. wrk's latency starts once the connection is up, without the handshake, so no
latency is reported here. The "resumption offered" runs use bench/tlsload.c, whose loops
each offer the session of their previous connection and time from connect to answer.

Each certificate key type gets a CA, a fingerauthd (its own database, the bench users' keys
registered through POST /v1/keys) and a Python peer serving the same certificate; both sides
get the same pre-signed tokens."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from support.authd import Authd
from support.tls import make_ca
from support.world import AUDIENCE, HOST_ID

from bench.common import (add, details, failed_checks, log, notes, proc_cpu_seconds, register_keys, sign_tokens,
                          started_pids, wrk, write_token_files)

HERE = Path(__file__).resolve().parent
LEVELS = (8, 64)
RESUMED_CLIENTS = 64
KEY_TYPES = (("ec", "ECDSA P-256"), ("rsa:2048", "RSA-2048"))
TOKENS = int(os.environ.get("BENCH_NEWCONN_TOKENS", "10000"))
SECONDS = int(os.environ.get("BENCH_LEVEL_SECONDS", "30"))
# issue 34's targets, fingerauthd against the Python peer on the same tokens and certificate
RATE_TARGET = {"at_least_ratio": 3.0}
CPU_TARGET = {"at_most_ratio": 0.5}
# fingerauthd's limits per client address (new connections a second, default 20; open
# connections, default 64, which closed ones still count for a moment) would refuse wrk's
# one loopback address; in production each login comes from a host of its own.
AUTHD_ARGS = ("--connection-rate", "0", "--max-connections-per-address", "256")


def build_handshake_counter(tmp):
    library = Path(tmp) / "handshakes.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(library), str(HERE / "handshakes.c"), "-ldl", "-lssl"],
                   check=True)
    return library


def build_tlsload(tmp):
    binary = Path(tmp) / "tlsload"
    subprocess.run(["cc", "-O2", "-o", str(binary), str(HERE / "tlsload.c"), "-lssl", "-lcrypto", "-lpthread"],
                   check=True)
    return binary


def passive_opens():
    """TCP connections accepted on this machine so far (the kernel's Tcp PassiveOpens)."""
    with open("/proc/net/snmp") as f:
        names, values = [line.split() for line in f if line.startswith("Tcp:")][:2]
    return int(values[names.index("PassiveOpens")])


def one_run(name, url, pids, directory, clients, tmp, counter):
    out = Path(tmp) / "handshakes.txt"
    if out.exists():
        out.unlink()
    env = dict(os.environ, LD_PRELOAD=str(counter), FA_HANDSHAKES_OUT=str(out), FA_NO_RESUME="1")
    opens0, cpu0 = passive_opens(), proc_cpu_seconds(pids)
    r = wrk(url, HERE / "wrk" / "login.lua", [str(directory), "close"], clients, SECONDS, directory, tmp, env=env)
    cpu1, opens1 = proc_cpu_seconds(pids), passive_opens()
    fields = out.read_text().split() if out.exists() else []
    if len(fields) != 4:
        raise RuntimeError("wrk with the handshake counter wrote no count (%s)" % out)
    r["handshakes"], r["resumed"] = int(fields[1]), int(fields[3])
    r["accepted"] = opens1 - opens0
    r["server_cpu"] = (cpu1[0] - cpu0[0]) + (cpu1[1] - cpu0[1])
    r["rate"] = r["ok"] / r["seconds"]
    r["cpu_ms"] = r["server_cpu"] * 1000 / max(1, r["ok"])
    # a connection per request: as many handshakes and accepts as answers (a few more: the
    # connections open when wrk stopped), none resumed
    for what in ("handshakes", "accepted"):
        if r[what] < r["requests"]:
            failed_checks.append("new connections, %s at %d clients: %d %s for %d requests (connections reused?)"
                                 % (name, clients, r[what], what, r["requests"]))
    if r["resumed"]:
        failed_checks.append("new connections, %s at %d clients: %d of %d handshakes resumed a session"
                             % (name, clients, r["resumed"], r["handshakes"]))
    log("%-11s %2d clients, new connections: %6.0f verified/s, %d refused, %d requests in %.1f s, %d handshakes "
        "(%d resumed), %d TCP accepts; server CPU %.1f s (%.2f ms per login), wrk %.1f s"
        % (name, clients, r["rate"], r["bad"], r["requests"], r["seconds"], r["handshakes"], r["resumed"],
           r["accepted"], r["server_cpu"], r["cpu_ms"], r["cpu"]))
    if not r["finished"]:
        notes.append("new connections, %s at %d clients: the tokens lasted the whole %d s" % (name, clients, SECONDS))
    if r["bad"] or r["connect_errors"] or r["read_errors"] or r["ok"] < r["requests"] * 0.5:
        notes.append("new connections, %s at %d clients: %d refused, %d verified of %d requests, socket errors "
                     "connect %d read %d write %d" % (name, clients, r["bad"], r["ok"], r["requests"],
                                                       r["connect_errors"], r["read_errors"], r["write_errors"]))
    return r


def resumed_run(name, port, ca, pids, token_file, clients, tlsload):
    """bench/tlsload.c with resumption at `clients` loops; the same figures as one_run."""
    opens0, cpu0 = passive_opens(), proc_cpu_seconds(pids)
    done = subprocess.run([str(tlsload), str(port), ca.ca_cert, str(token_file), str(clients), str(SECONDS)],
                          capture_output=True, text=True, timeout=SECONDS + 120)
    cpu1, opens1 = proc_cpu_seconds(pids), passive_opens()
    match = re.search(r"^TLSLOAD (.*)$", done.stdout, re.M)
    if done.returncode != 0 or not match:
        raise RuntimeError("tlsload: %s %s" % (done.stdout[-800:], done.stderr[-800:]))
    r = json.loads(match.group(1))
    r["accepted"] = opens1 - opens0
    r["seconds"] = r["elapsed_us"] / 1e6
    r["server_cpu"] = (cpu1[0] - cpu0[0]) + (cpu1[1] - cpu0[1])
    r["rate"] = r["ok"] / r["seconds"] if r["seconds"] else 0.0
    r["cpu_ms"] = r["server_cpu"] * 1000 / max(1, r["ok"])
    log("%-11s %2d clients, new connections, resumption offered: %6.0f verified/s, %d refused, %d failed, "
        "%d handshakes (%d resumed), %d TCP accepts, p50 %.2f ms p99 %.2f ms (connect to answer); server CPU %.1f s "
        "(%.2f ms per login)" % (name, clients, r["rate"], r["bad"], r["failed"], r["handshakes"], r["resumed"],
                                 r["accepted"], r["p50_us"] / 1000, r["p99_us"] / 1000, r["server_cpu"], r["cpu_ms"]))
    if r["bad"] or r["failed"] or r["ok"] < r["tokens"] * 0.5:
        notes.append("new connections, resumption offered, %s at %d clients: %d refused, %d failed, %d of %d tokens "
                     "verified" % (name, clients, r["bad"], r["failed"], r["ok"], r["tokens"]))
    return r


def new_connections(users, key_rows, peer_class, venv, tmp):
    """Runs the new-connection mode for each key type and level; adds its rows. `users`:
    the bench's {name: BenchKey}; `key_rows`: their rows for the peer's registry;
    `peer_class`: bench/run.py's Peer."""
    from bench.peer.verifier import init_db
    print("== 4. authenticator throughput: wrk, a new connection and TLS handshake per request", flush=True)
    counter = build_handshake_counter(tmp)
    tlsload = build_tlsload(tmp)
    results = {}
    for key, label in KEY_TYPES:
        place = Path(tmp) / ("newconn-" + key.replace(":", ""))
        place.mkdir()
        ca = make_ca(place / "ca", server_key=key, ca_key=key)
        authd = Authd(place / "authd", audience=AUDIENCE, tls=ca, args=AUTHD_ARGS)
        peer = None
        try:
            authd.start()
            started_pids.append(authd.pid)
            register_keys(authd, authd.create_token(HOST_ID), users)
            init_db(str(place / "peer.db"), key_rows)
            peer = peer_class(venv, ca, place / "peer.db", place)
            for clients in LEVELS:
                directory = place / ("tokens-%d" % clients)
                write_token_files(sign_tokens(users, TOKENS), clients, directory)
                for name, url, pids in (("fingerauthd", authd.url, [authd.pid]), ("peer", peer.url, peer.pids())):
                    log("%s certificate:" % label)
                    results[(key, name, clients)] = one_run(name, url, pids, directory, clients, place, counter)
                shutil.rmtree(directory)
            refusals = [line for line in authd.log_text().splitlines() if "refusing" in line]
            if refusals:
                notes.append("new connections, fingerauthd with the %s certificate logged %d refusal(s): %s"
                             % (label, len(refusals), refusals[0][:200]))
            token_file = place / "tokens-resumed.txt"
            token_file.write_text("\n".join(sign_tokens(users, TOKENS)) + "\n")
            for name, port, pids in (("fingerauthd", authd.port, [authd.pid]), ("peer", peer.port, peer.pids())):
                log("%s certificate:" % label)
                results[(key, name, "resumed")] = resumed_run(name, port, ca, pids, token_file, RESUMED_CLIENTS,
                                                              tlsload)
        finally:
            if peer is not None:
                peer.stop()
            authd.stop()
    for key, label in KEY_TYPES:
        for clients in LEVELS:
            ours, theirs = results[(key, "fingerauthd", clients)], results[(key, "peer", clients)]
            add(4, "new connection per login, %s: verified logins/s, %d clients (vs Python peer)" % (label, clients),
                ours["rate"], theirs["rate"], "/s", 0, **RATE_TARGET)
            add(4, "new connection per login, %s: server CPU per verified login, %d clients (vs Python peer)"
                % (label, clients), ours["cpu_ms"], theirs["cpu_ms"], "ms", 3, **CPU_TARGET)
        ours, theirs = results[(key, "fingerauthd", "resumed")], results[(key, "peer", "resumed")]
        add(4, "new connection per login, session resumption offered, %s: verified logins/s, %d clients (vs Python "
            "peer)" % (label, RESUMED_CLIENTS), ours["rate"], theirs["rate"], "/s", 0)
        add(4, "new connection per login, session resumption offered, %s: server CPU per verified login, %d clients "
            "(vs Python peer)" % (label, RESUMED_CLIENTS), ours["cpu_ms"], theirs["cpu_ms"], "ms", 3)
    details.append("section 4 new connections: wrk with `Connection: close`, every request a new TCP connection and a "
                   "full TLS handshake, none resumed; %d tokens per level, the same for both sides; "
                   "fingerauthd with --connection-rate 0 and --max-connections-per-address 256 (its per-address "
                   "limits, off or above the clients: all of wrk's come from one address); wrk's latency leaves the handshake out, so none is shown"
                   % TOKENS)
    for key, label in KEY_TYPES:
        details.append("section 4 new connections, %s: %s" % (label, "; ".join(
            "%s %d clients %d requests, %d handshakes (%d resumed), %d TCP accepts" %
            (name, clients, r["requests"], r["handshakes"], r["resumed"], r["accepted"])
            for clients in LEVELS for name in ("fingerauthd", "peer") for r in [results[(key, name, clients)]])))
        details.append("section 4 new connections with resumption offered, %s (bench/tlsload.c, %d loops, each offering "
                       "its previous connection's session): %s" % (label, RESUMED_CLIENTS, "; ".join(
                           "%s %d of %d handshakes resumed, %d verified, %d TCP accepts, p50 %.2f ms p99 %.2f ms from "
                           "connect to answer" % (name, r["resumed"], r["handshakes"], r["ok"], r["accepted"],
                                                  r["p50_us"] / 1000, r["p99_us"] / 1000)
                           for name in ("fingerauthd", "peer") for r in [results[(key, name, "resumed")]])))
    return results
