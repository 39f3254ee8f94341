# `make bench`: FingerAuth's figures, each against a baseline measured in the same run,
# printed as one table and written to build/bench-results.json. bench/run.py is the driver;
# each section is a module of bench/sections/: 1 login latency through real libpam (the finger
# already on the reader, and touch-to-login), 1b where the helper's time goes, 2 the module's
# own cost, 3 fall-over, 4 authenticator throughput against a Python peer, 5 steadiness, 6 one
# and two fingerauthd on one durable PostgreSQL (a private cluster, always removed), 7 a flood
# of refused requests beside valid logins, 8 a login with a TPM key on swtpm, 9 the admin
# console on a million audit rows, 10 remote approval (touch to PAM_SUCCESS, idle watches, two
# fingerauthd on PostgreSQL). BENCH_ONLY=2,3 runs those sections only (1b runs with 1).
# BENCHMARKS.md has the current run, docs/benchmark-method.md how each figure is measured and
# the other settings, docs/benchmark-history.md the earlier runs. Root only: it adds a user
# (fabench) and runs fprintd on a system bus for the pam_unix and pam_fprintd baselines, and
# removes both. Not a test stage. Uses the binaries in $(BUILD); builds first unless NOBUILD=1.
# PyPI tools (uvicorn, PyJWT, cryptography for the peer verifier) go into a venv, $(BENCH_VENV).
BENCH_PACKAGES := fprintd libpam-fprintd dbus polkitd wrk valgrind python3-venv postgresql openssl linux-perf strace gcc
BENCH_VENV ?= build/bench-venv
BENCH_PIP := 'uvicorn[standard]==0.54.0' 'PyJWT==2.15.1' 'cryptography==50.0.2'

.PHONY: bench bench-deps

bench-deps:
	@scripts/install-deps.sh $(TEST_PACKAGES) $(BENCH_PACKAGES)
	@test -x $(BENCH_VENV)/bin/python || $(PY) -m venv $(BENCH_VENV)
	@$(BENCH_VENV)/bin/python -c 'import uvicorn, uvloop, httptools, jwt, cryptography' 2>/dev/null || \
	  $(BENCH_VENV)/bin/pip install -q $(BENCH_PIP)

bench: $(if $(NOBUILD),,build) bench-deps
	@test "$$(id -u)" -eq 0 || { echo "make bench: run as root (it adds a user and runs fprintd on a system bus)"; exit 1; }
	FINGERAUTH_BUILD=$(abspath $(BUILD)) BENCH_VENV=$(abspath $(BENCH_VENV)) $(PY) bench/run.py
