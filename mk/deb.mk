# `make deb`: build/fingerauth_<version>_<arch>.deb from a staged `make install`, with
# Depends computed from the NEEDED libraries (packaging/debian/depends.sh), every file
# under /etc a conffile, and the maintainer scripts in packaging/debian/. Builds first unless NOBUILD=1.

DEB_VERSION ?= 0.1.0
DEB_ARCH := $(shell dpkg --print-architecture)
DEB_STAGE = $(BUILD)/deb-stage
DEB_FILE = $(BUILD)/fingerauth_$(DEB_VERSION)_$(DEB_ARCH).deb

.PHONY: deb

deb: $(if $(NOBUILD),,build)
	@rm -rf $(DEB_STAGE) && mkdir -p $(DEB_STAGE)/DEBIAN
	@$(MAKE) --no-print-directory install NOBUILD=1 BUILD=$(BUILD) DESTDIR=$(abspath $(DEB_STAGE)) >/dev/null
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
