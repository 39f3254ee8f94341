# `make deb`: build/fingerauth_<version>_<arch>.deb from a staged `make install`, with
# Depends computed from the NEEDED libraries (packaging/debian/depends.sh), every file
# under /etc a conffile, the maintainer scripts in packaging/debian/, and what Debian policy
# wants in /usr/share/doc/fingerauth (copyright, changelog.Debian.gz) and lintian's
# overrides (each one says why). Builds first unless NOBUILD=1.

# Upstream version 0.1.0, package revision 1: its entry must head packaging/debian/changelog.
DEB_VERSION ?= 0.1.0-1
DEB_DOC = $(DEB_STAGE)/usr/share/doc/fingerauth
DEB_ARCH := $(shell dpkg --print-architecture)
DEB_STAGE = $(BUILD)/deb-stage
DEB_FILE = $(BUILD)/fingerauth_$(DEB_VERSION)_$(DEB_ARCH).deb

.PHONY: deb

deb: $(if $(NOBUILD),,build)
	@rm -rf $(DEB_STAGE) && mkdir -p $(DEB_STAGE)/DEBIAN
	@$(MAKE) --no-print-directory install NOBUILD=1 BUILD=$(BUILD) DESTDIR=$(abspath $(DEB_STAGE)) >/dev/null
	@head -1 packaging/debian/changelog | grep -qF "fingerauth ($(DEB_VERSION))" || \
	  { echo "make deb: packaging/debian/changelog has no entry for $(DEB_VERSION) on its first line" >&2; exit 1; }
	@install -d -m 0755 $(DEB_DOC) $(DEB_STAGE)/usr/share/lintian/overrides
	@install -m 0644 packaging/debian/copyright $(DEB_DOC)/copyright
	@gzip -9n < packaging/debian/changelog > $(DEB_DOC)/changelog.Debian.gz && chmod 0644 $(DEB_DOC)/changelog.Debian.gz
	@install -m 0644 packaging/debian/lintian-overrides $(DEB_STAGE)/usr/share/lintian/overrides/fingerauth
	@depends=$$(packaging/debian/depends.sh $(DEB_STAGE)) && \
	  size=$$(du -sk --exclude=DEBIAN $(DEB_STAGE) | cut -f1) && \
	  sed -e "s/@VERSION@/$(DEB_VERSION)/" -e "s/@ARCH@/$(DEB_ARCH)/" -e "s/@SIZE@/$$size/" \
	      -e "s/@DEPENDS@/$$depends/" packaging/debian/control.in > $(DEB_STAGE)/DEBIAN/control
	@cd $(DEB_STAGE) && find etc -type f -printf '/%p\n' | sort > DEBIAN/conffiles && chmod 0644 DEBIAN/conffiles
	@for s in postinst prerm postrm; do install -m 0755 packaging/debian/$$s $(DEB_STAGE)/DEBIAN/$$s; done
	@cd $(DEB_STAGE) && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | \
	  xargs -0 md5sum > DEBIAN/md5sums && chmod 0644 DEBIAN/md5sums
	dpkg-deb --root-owner-group -Zxz --build $(DEB_STAGE) $(DEB_FILE)
	@rm -rf $(DEB_STAGE)
	@dpkg-deb --field $(DEB_FILE) Package Version Depends
