# pam_fingerauth.so in Embedded Swift (scripts/build-module.sh; docs/ARCHITECTURE.md, "The
# module in Embedded Swift"): the module's layers compiled again from the same files as the
# SwiftPM targets, linked to NEED libpam and libc only. `make build` makes it; it is built
# again only when one of the files it compiles, its C parts or the script change.
MODULE_LAYERS := FingerAuthCore FingerAuthLoginDomain FingerAuthSystem PAMFingerAuth
MODULE_INPUTS := $(shell find $(MODULE_LAYERS:%=Sources/%) Sources/CSystem Sources/CPAM Sources/CSpawn -type f) \
  scripts/build-module.sh mk/module.mk

.PHONY: module
module: $(BUILD)/pam_fingerauth.so

$(BUILD)/pam_fingerauth.so: $(MODULE_INPUTS)
	@mkdir -p $(BUILD)
	scripts/build-module.sh $(BUILD) && strip --strip-unneeded $@ && chmod 0644 $@
