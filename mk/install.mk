# `make install` / `make uninstall`: the built products, configuration, man pages,
# completion, systemd unit and pam-auth-update profile, into DESTDIR (empty: this machine).
# Installs from $(BUILD) as it is; `make install` builds first unless NOBUILD=1.
# Never enables the module: that is `pam-auth-update --enable fingerauth`, by an admin.

PREFIX ?= /usr
DESTDIR ?=
MULTIARCH := $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
PAMDIR ?= /lib/$(MULTIARCH)/security
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
LIBEXECDIR ?= $(PREFIX)/libexec/fingerauth
SYSCONFDIR ?= /etc
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
SYSTEMDUNITDIR ?= /lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
PAMCONFIGDIR ?= $(PREFIX)/share/pam-configs
LOCALEDIR ?= $(PREFIX)/share/locale
# The module's translations (po/*.po, built into $(BUILD)/locale by `make build`).
LOCALES := $(basename $(notdir $(wildcard po/*.po)))
STATEDIR ?= /var/lib/fingerauth

# root:root when we are root; a staged install as another user leaves ownership to
# dpkg-deb --root-owner-group.
INSTALL_OWNER := $(if $(filter 0,$(shell id -u)),-o root -g root,)
INSTALL := install $(INSTALL_OWNER)
CONF_SHIPPED := packaging/fingerauth.conf
CONF_TARGET := $(DESTDIR)$(SYSCONFDIR)/security/fingerauth.conf
# The authenticator's files (packaging/systemd/, a colleague's): installed when present.
AUTHD_CONF_SHIPPED := packaging/systemd/fingerauthd.conf
AUTHD_CONF_TARGET := $(DESTDIR)$(SYSCONFDIR)/fingerauthd.conf
# Man pages present in man/ (fingerauth.1 may arrive later): section from the suffix.
MAN_PAGES := $(sort $(wildcard man/*.1 man/*.5 man/*.8))
INSTALL_BUILD_DEP := $(if $(NOBUILD),,build)
# fingerauth-agent (screen lockers): installed, never enabled by install (see
# docs/howto/screen-lockers.md); uninstall stops it first.
AGENT_UNITS := fingerauth-agent.socket fingerauth-agent.service
# The offline sync (fingerauth sync) and its timer: installed, never enabled by install.
SYNC_UNITS := fingerauth-sync.service fingerauth-sync.timer
# The workstation's approval watcher (docs/howto/remote-approval.md): installed, never enabled by install.
WATCHER_UNITS := fingerauth-watcher.service

.PHONY: install uninstall install-check

# The binaries must be there and must not need the Swift toolchain at run time.
install-check:
	@for f in pam_fingerauth.so fingerauth-pam fingerauth-login fingerauth fingerauthd fingerauth-agent fingerauth-watcher; do \
	  test -f $(BUILD)/$$f || { echo "install: $(BUILD)/$$f is missing; run make first" >&2; exit 1; }; \
	  if readelf -d $(BUILD)/$$f | grep -E 'NEEDED.*libswift|NEEDED.*libFoundation|R(UN)?PATH'; then \
	    echo "install: $(BUILD)/$$f needs the Swift toolchain at run time" >&2; exit 1; fi; \
	done

install: $(INSTALL_BUILD_DEP) install-check
	$(INSTALL) -d -m 0755 $(DESTDIR)$(PAMDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) \
	  $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(SYSCONFDIR)/security $(DESTDIR)$(PAMCONFIGDIR)
	$(INSTALL) -m 0644 $(BUILD)/pam_fingerauth.so $(DESTDIR)$(PAMDIR)/pam_fingerauth.so
	$(INSTALL) -m 0755 $(BUILD)/fingerauth-pam $(DESTDIR)$(LIBEXECDIR)/fingerauth-pam
	$(INSTALL) -m 0755 $(BUILD)/fingerauth-login $(DESTDIR)$(LIBEXECDIR)/fingerauth-login
	$(INSTALL) -m 0755 $(BUILD)/fingerauth-agent $(DESTDIR)$(LIBEXECDIR)/fingerauth-agent
	$(INSTALL) -m 0755 $(BUILD)/fingerauth-watcher $(DESTDIR)$(LIBEXECDIR)/fingerauth-watcher
	$(INSTALL) -m 0755 $(BUILD)/fingerauth $(DESTDIR)$(BINDIR)/fingerauth
	$(INSTALL) -m 0755 $(BUILD)/fingerauthd $(DESTDIR)$(SBINDIR)/fingerauthd
	$(INSTALL) -d -m 0700 $(DESTDIR)$(STATEDIR)
	@if [ -e $(CONF_TARGET) ]; then \
	  echo "install: keeping the existing $(SYSCONFDIR)/security/fingerauth.conf"; \
	else \
	  echo "$(INSTALL) -m 0644 $(CONF_SHIPPED) $(CONF_TARGET)"; \
	  $(INSTALL) -m 0644 $(CONF_SHIPPED) $(CONF_TARGET); \
	fi
	$(INSTALL) -m 0644 packaging/pam-configs/fingerauth $(DESTDIR)$(PAMCONFIGDIR)/fingerauth
	@for lang in $(LOCALES); do \
	  $(INSTALL) -d -m 0755 $(DESTDIR)$(LOCALEDIR)/$$lang/LC_MESSAGES && \
	  $(INSTALL) -m 0644 $(BUILD)/locale/$$lang/LC_MESSAGES/fingerauth.mo $(DESTDIR)$(LOCALEDIR)/$$lang/LC_MESSAGES/fingerauth.mo && \
	  echo "translation -> $(LOCALEDIR)/$$lang/LC_MESSAGES/fingerauth.mo" || exit 1; done
	@for page in $(MAN_PAGES); do \
	  section=$${page##*.}; dir=$(DESTDIR)$(MANDIR)/man$$section; \
	  $(INSTALL) -d -m 0755 $$dir && \
	  gzip -9n < $$page > $$dir/$$(basename $$page).gz && chmod 0644 $$dir/$$(basename $$page).gz && \
	  echo "man page $$page -> $(MANDIR)/man$$section/$$(basename $$page).gz" || exit 1; \
	done
	@if [ -f completion/fingerauth.bash ]; then \
	  $(INSTALL) -d -m 0755 $(DESTDIR)$(BASHCOMPDIR) && \
	  $(INSTALL) -m 0644 completion/fingerauth.bash $(DESTDIR)$(BASHCOMPDIR)/fingerauth && \
	  echo "bash completion -> $(BASHCOMPDIR)/fingerauth"; \
	else echo "install: no completion/fingerauth.bash yet, skipped"; fi
	@if [ -f packaging/systemd/fingerauthd.service ]; then \
	  $(INSTALL) -d -m 0755 $(DESTDIR)$(SYSTEMDUNITDIR) && \
	  $(INSTALL) -m 0644 packaging/systemd/fingerauthd.service $(DESTDIR)$(SYSTEMDUNITDIR)/fingerauthd.service && \
	  echo "systemd unit -> $(SYSTEMDUNITDIR)/fingerauthd.service (not enabled)"; \
	else echo "install: no packaging/systemd/fingerauthd.service yet, skipped"; fi
	$(INSTALL) -d -m 0755 $(DESTDIR)$(SYSTEMDUNITDIR)
	@for unit in $(AGENT_UNITS) $(SYNC_UNITS) $(WATCHER_UNITS); do \
	  $(INSTALL) -m 0644 packaging/systemd/$$unit $(DESTDIR)$(SYSTEMDUNITDIR)/$$unit && \
	  echo "systemd unit -> $(SYSTEMDUNITDIR)/$$unit (not enabled)" || exit 1; done
	@if [ -f packaging/systemd/fingerauthd.sysusers.conf ]; then \
	  $(INSTALL) -d -m 0755 $(DESTDIR)$(SYSUSERSDIR) && \
	  $(INSTALL) -m 0644 packaging/systemd/fingerauthd.sysusers.conf $(DESTDIR)$(SYSUSERSDIR)/fingerauthd.conf && \
	  echo "sysusers -> $(SYSUSERSDIR)/fingerauthd.conf"; fi
	@if [ -f $(AUTHD_CONF_SHIPPED) ]; then \
	  if [ -e $(AUTHD_CONF_TARGET) ]; then echo "install: keeping the existing $(SYSCONFDIR)/fingerauthd.conf"; \
	  else $(INSTALL) -m 0644 $(AUTHD_CONF_SHIPPED) $(AUTHD_CONF_TARGET) && echo "authenticator config -> $(SYSCONFDIR)/fingerauthd.conf"; fi; \
	fi
	@echo "installed. The module is NOT enabled: edit $(SYSCONFDIR)/security/fingerauth.conf, then run"
	@echo "  (screen lockers also need: systemctl enable --now fingerauth-agent.socket)"
	@echo "  (remote approval on a workstation: systemctl enable --now fingerauth-watcher)"
	@echo "  pam-auth-update --enable fingerauth   (or add the pam.d line by hand, see pam_fingerauth(8))"

# Removes what install added. The configuration goes only when it is still the shipped
# one; an edited one stays, and we say so. On this machine (no DESTDIR) the
# pam-auth-update profile is taken out of /etc/pam.d/common-* first, as the package does.
uninstall:
	@if [ -z "$(DESTDIR)" ] && [ -f $(PAMCONFIGDIR)/fingerauth ] && command -v pam-auth-update >/dev/null; then \
	  echo "pam-auth-update --package --remove fingerauth"; pam-auth-update --package --remove fingerauth; fi
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
	  echo "systemctl disable --now $(AGENT_UNITS) $(SYNC_UNITS) $(WATCHER_UNITS)"; \
	  systemctl disable --now $(AGENT_UNITS) $(SYNC_UNITS) $(WATCHER_UNITS) >/dev/null 2>&1 || true; fi
	rm -f $(foreach unit,$(AGENT_UNITS) $(SYNC_UNITS) $(WATCHER_UNITS),$(DESTDIR)$(SYSTEMDUNITDIR)/$(unit)) \
	  $(DESTDIR)$(LIBEXECDIR)/fingerauth-agent $(DESTDIR)$(LIBEXECDIR)/fingerauth-watcher
	rm -f $(DESTDIR)$(PAMDIR)/pam_fingerauth.so $(DESTDIR)$(LIBEXECDIR)/fingerauth-pam \
	  $(DESTDIR)$(LIBEXECDIR)/fingerauth-login \
	  $(DESTDIR)$(BINDIR)/fingerauth $(DESTDIR)$(SBINDIR)/fingerauthd \
	  $(DESTDIR)$(PAMCONFIGDIR)/fingerauth $(DESTDIR)$(BASHCOMPDIR)/fingerauth \
	  $(DESTDIR)$(SYSTEMDUNITDIR)/fingerauthd.service $(DESTDIR)$(SYSUSERSDIR)/fingerauthd.conf
	rm -f $(foreach lang,$(LOCALES),$(DESTDIR)$(LOCALEDIR)/$(lang)/LC_MESSAGES/fingerauth.mo)
	rm -f $(foreach page,$(notdir $(MAN_PAGES)) fingerauth.1,$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(page)))/$(page).gz)
	@rmdir $(DESTDIR)$(LIBEXECDIR) 2>/dev/null || true
	@rmdir $(DESTDIR)$(STATEDIR) 2>/dev/null || true
	@if [ -f $(CONF_TARGET) ]; then \
	  if cmp -s $(CONF_TARGET) $(CONF_SHIPPED); then rm -f $(CONF_TARGET); echo "removed $(SYSCONFDIR)/security/fingerauth.conf (unchanged)"; \
	  else echo "kept $(SYSCONFDIR)/security/fingerauth.conf: it differs from the shipped one (your edits)"; fi; \
	fi
	@if [ -f $(AUTHD_CONF_TARGET) ]; then \
	  if [ -f $(AUTHD_CONF_SHIPPED) ] && cmp -s $(AUTHD_CONF_TARGET) $(AUTHD_CONF_SHIPPED); then rm -f $(AUTHD_CONF_TARGET); echo "removed $(SYSCONFDIR)/fingerauthd.conf (unchanged)"; \
	  else echo "kept $(SYSCONFDIR)/fingerauthd.conf: it differs from the shipped one (your edits)"; fi; \
	fi
	@if [ -d $(DESTDIR)$(STATEDIR) ]; then echo "kept $(STATEDIR): it holds enrolled prints and keys (remove it by hand)"; fi
