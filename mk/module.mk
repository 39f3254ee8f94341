# pam_fingerauth.so and fingerauth-pam in Embedded Swift (scripts/build-module.sh;
# docs/ARCHITECTURE.md, "The module in Embedded Swift"): their layers compiled again from the
# same files as the SwiftPM targets, the module linked to NEED libpam and libc only,
# fingerauth-pam libc only. `make build` makes both; they are built again only when one of
# the files they compile, their C parts or the script change.
MODULE_LAYERS := FingerAuthCore FingerAuthLoginDomain FingerAuthSystem PAMFingerAuth FingerAuthLoginSystem FingerAuthPAM
MODULE_INPUTS := $(shell find $(MODULE_LAYERS:%=Sources/%) Sources/CSystem Sources/CPAM Sources/CSpawn -type f) \
  scripts/build-module.sh mk/module.mk

.PHONY: module
module: $(BUILD)/pam_fingerauth.so

# One run makes both files; fingerauth-pam is the second output of the same rule.
$(BUILD)/pam_fingerauth.so: $(MODULE_INPUTS)
	@mkdir -p $(BUILD)
	scripts/build-module.sh $(BUILD) && strip --strip-unneeded $@ && chmod 0644 $@ && \
	  strip --strip-unneeded $(BUILD)/fingerauth-pam && chmod 0755 $(BUILD)/fingerauth-pam
