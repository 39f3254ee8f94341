# `make e2e`: real sudo and sshd logins with real test users, and the Debian package
# installed and removed (Tests/e2e). Run by `make test` last. Root only. Uses the
# binaries in $(BUILD) (FINGERAUTH_BUILD); builds them first unless NOBUILD=1.
# Everything it makes lives in one temporary folder, removed when all passed; test
# users, the sudoers drop-in and /etc/pam.d/fa-e2e-* are always removed, and
# Tests/e2e/leftovers.py checks that afterwards, whatever the tests did.

TEST_STAGES += e2e
# mk/*.mk are read in name order, so a later file (fuzz.mk, lint.mk) would append its
# stage after e2e; TEST_STAGES_LAST lets the Makefile's test loop run e2e at the end.
TEST_STAGES_LAST += e2e
# lintian: test_package.py checks the package against Debian's policy.
E2E_PACKAGES := sudo openssh-server openssh-client sshpass i3lock xvfb xdotool locales tmux lintian

.PHONY: e2e e2e-deps

e2e-deps:
	@scripts/install-deps.sh $(TEST_PACKAGES) $(E2E_PACKAGES)

e2e: $(if $(NOBUILD),,build) e2e-deps
	@test "$$(id -u)" -eq 0 || { echo "make e2e: run as root (it adds test users, a sudoers drop-in, PAM files)"; exit 1; }
	@$(MAKE) --no-print-directory deb NOBUILD=1 BUILD=$(BUILD)
	@tmp=$$(mktemp -d /tmp/fingerauth-e2e.XXXXXX) && chmod 0755 $$tmp && \
	  FINGERAUTH_BUILD=$(abspath $(BUILD)) FINGERAUTH_DEB=$(abspath $(DEB_FILE)) \
	    $(PY) -m pytest -v -p no:cacheprovider --basetemp=$$tmp/pytest Tests/e2e; status=$$?; \
	  $(PY) Tests/e2e/leftovers.py || status=1; \
	  if [ $$status -eq 0 ]; then rm -rf $$tmp; else echo "make e2e: FAILED; logs kept in $$tmp"; fi; \
	  exit $$status
