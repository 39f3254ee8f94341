"""Section 8 of `make bench`: a login whose device key is in the TPM (swtpm) beside the same
login with a file key, through real libpam, the virtual reader with the finger already
there, and a real fingerauthd that checked the TPM key's attestation. swtpm answers in
microseconds where a real TPM takes tens to hundreds of milliseconds per RSA-2048
signature: the figure is swtpm's, and says what the TPM path costs in software."""

import statistics

from support.swtpm import SoftwareTPM, available as swtpm_available, ek_ca_bundle
from support.vreader import enroll_commands
from support.world import World

from bench.common import log, pct
from bench.pam import LOGINS, Feeder, pamtest, success_times

IDENTITY = "finger-T"


def run(bench):
    tmp, ca, results, logins = bench.tmp, bench.ca, bench.results, LOGINS
    print("== 8. login with a TPM key on swtpm (%d logins each)" % logins, flush=True)
    if not swtpm_available():
        results.details.append("section 8: skipped, swtpm is not installed")
        return
    (tmp / "tpm-world").mkdir()
    with SoftwareTPM() as machine:
        world = World(tmp / "tpm-world", ca)
        try:
            world.start_authenticator(args=("--tpm-ek-ca", ek_ca_bundle(str(tmp / "ek-ca.pem"))))
            bench.started.append(world.authd.pid)
            world.write_conf(tpm_tcti=machine.tcti)
            for user, store in (("alice", "tpm"), ("bob", "file")):
                done = world.cli("enroll", "--user", user, "--store", store, feed=enroll_commands(IDENTITY))
                if done.returncode != 0:
                    raise RuntimeError("section 8: enroll --store %s: %s" % (store, done.stderr))
            service = world.service("fa-only", fallback=False)
            times = {}
            feeder = Feeder(world.reader.path, ["SCAN " + IDENTITY])
            try:
                for user, store in (("alice", "tpm"), ("bob", "file")):
                    pamtest(world, service, user, 5)  # warm-up
                    times[store] = success_times(store + " key", pamtest(world, service, user, logins)[0])
            finally:
                feeder.stop()
        finally:
            world.close()
    for store in ("tpm", "file"):
        log("%-4s key p50 %7.2f ms  p99 %7.2f ms" % (store, statistics.median(times[store]), pct(times[store], 0.99)))
    results.add(8, "login p50, TPM key on swtpm (vs file key)", statistics.median(times["tpm"]),
                statistics.median(times["file"]), "ms", 2)
    results.add(8, "login p99, TPM key on swtpm (vs file key)", pct(times["tpm"], 0.99), pct(times["file"], 0.99),
                "ms", 2)
    results.details.append("section 8: the TPM key is RSA-2048 (what every TPM 2.0 has), the file key RSA-3072 (the "
                           "default); per login the helper remakes the ECC P-256 storage primary, loads the key, and "
                           "signs after the match. A real TPM is much slower than swtpm (tens to hundreds of ms per "
                           "RSA-2048 signature)")
