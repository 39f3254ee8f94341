# FingerAuth — build, test, demo. `make demo` and `make test` install what is missing.
SHELL := /bin/bash
BUILD := build
PY := /usr/bin/python3
SWIFT_BUILD := swift build -c release --disable-local-rpath

# Build: libraries and tools. Test: real libpam harness, pam_wrapper's pam_matrix,
# nss_wrapper, PyJWT/cryptography as the independent JWT implementation; systemd for
# systemd-analyze and systemd-socket-activate (the agent's units and LISTEN_FDS, checked
# without systemd running); fprintd with polkitd, dbus-daemon, dbus-monitor, gdbus and
# PyGObject for the fprintd backend on a private system bus.
BUILD_PACKAGES := gcc make pkg-config libpam0g-dev libfprint-2-dev libglib2.0-dev \
  libmicrohttpd-dev libgnutls28-dev libsqlite3-dev libssl-dev openssl libpq-dev gettext libtss2-dev
TEST_PACKAGES := libpam-wrapper libnss-wrapper python3-pytest python3-pytest-xdist python3-jwt python3-cryptography valgrind postgresql \
  faketime strace sqlite3 systemd swtpm swtpm-tools tpm2-tools python3-tpm2-pytss chromium chromium-driver python3-selenium \
  fprintd polkitd dbus-daemon dbus-bin libglib2.0-bin python3-gi python3-dbus

# `make unit` alone: a PostgreSQL server for the registry's tests on both stores.
UNIT_PACKAGES := postgresql
PRODUCTS := fingerauth-login fingerauth fingerauthd fingerauth-agent fingerauth-watcher
# `make demo` needs only these beside the build: pam_wrapper's pam_matrix for the password,
# nss_wrapper for its user, openssl for its test CA.
DEMO_PACKAGES := libpam-wrapper libnss-wrapper openssl

# A bare `make` builds: without this, the first target of an included mk/*.mk would be the goal.
.DEFAULT_GOAL := all

# Stages of `make test`, in order. Files in mk/ add their own stages (lint, fuzz smoke,
# end-to-end) and targets (install, deb, bench); each owns one concern.
TEST_STAGES := unit integration
include $(sort $(wildcard mk/*.mk))

.PHONY: all deps test-deps unit-deps demo-deps build unit integration test demo clean

all: build

deps:
	@scripts/install-deps.sh $(BUILD_PACKAGES)
	@command -v swift >/dev/null || { echo "the Swift toolchain is not on PATH (see README)"; exit 1; }

test-deps: deps
	@scripts/install-deps.sh $(TEST_PACKAGES)

unit-deps: deps
	@scripts/install-deps.sh $(UNIT_PACKAGES)

demo-deps: deps
	@scripts/install-deps.sh $(DEMO_PACKAGES)

# One release build of everything (products and tests); every later stage reuses it.
build: deps
	$(SWIFT_BUILD) --build-tests 2>&1 | grep -v "prohibited flag(s): -pthread" ; test $${PIPESTATUS[0]} -eq 0
	@mkdir -p $(BUILD)
	@bin=$$($(SWIFT_BUILD) --show-bin-path) && \
	  for p in $(PRODUCTS); do strip -o $(BUILD)/$$p $$bin/$$p; done
	@chmod 0755 $(PRODUCTS:%=$(BUILD)/%)
	@# The module in Embedded Swift: no Swift runtime, NEEDED libpam and libc only (mk/module.mk).
	@$(MAKE) --no-print-directory module
	gcc -O2 -Wall -Wextra -o $(BUILD)/fa-pamtest Tests/harness/fa-pamtest.c -lpam
	@# The module's texts in German, French and Spanish (po/*.po), as gettext catalogs.
	@for po in po/*.po; do lang=$$(basename $$po .po); mkdir -p $(BUILD)/locale/$$lang/LC_MESSAGES && \
	  msgfmt --check -o $(BUILD)/locale/$$lang/LC_MESSAGES/fingerauth.mo $$po || exit 1; done
	@echo "built: $$(cd $(BUILD) && ls | tr '\n' ' ')"

# The registry's XCTests run on SQLite and on a PostgreSQL server started for the run.
unit: build unit-deps
	$(PY) Tests/with_postgres.py swift test -c release --disable-local-rpath --skip-build --disable-swift-testing

# Two files at a time (pytest-xdist, a file stays on one worker: its module fixtures are
# shared by its tests only); each test has its own ports, folders and names. The slowest
# tests are listed, so that a wait that crept in shows.
integration: build test-deps
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --durations=25 Tests/integration

test: test-deps build
	@for stage in $(filter-out $(TEST_STAGES_LAST),$(TEST_STAGES)) $(TEST_STAGES_LAST); do \
	  echo "== make $$stage"; $(MAKE) --no-print-directory $$stage || exit 1; done

demo: demo-deps build
	$(PY) scripts/demo.py

clean:
	rm -rf $(BUILD) .build
