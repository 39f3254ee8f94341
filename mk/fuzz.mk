# libFuzzer over the plain-Swift parsers of outside input (the kernel, the key formats, the login domain) (Tests/fuzz/FuzzTargets.swift):
# the config file, the pam.d arguments, the login helper's lines and its request, the authenticator's
# answers (their JSON, and the HTTP framing the helper's client reads: HTTPWire.swift and
# HTTPAnswerReader.swift, compiled into the same module with the imports of those targets left out), JWTs and JSON, the agent's requests and replies, the TPM structures of a key attestation,
# offline grants, their receipts and the offline log's records and their judgement,
# the command-line words every program parses, the lines between the module and fingerauth-pam. `make fuzz` runs each target FUZZ_SECONDS (default 60);
# `make test` runs a smoke of FUZZ_SMOKE_SECONDS each. A crash fails the run and leaves
# its input in build/fuzz/.
FUZZ_TARGETS := config pam-args scan-message login-request authenticator-response http-answer jwt agent-message tpm-structures command-line offline module-protocol
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 8
FUZZER := $(BUILD)/fuzz/fa-fuzz

TEST_STAGES += fuzz-smoke

.PHONY: fuzz fuzz-smoke fuzz-build

# The HTTP framing the helper's client reads, compiled into the fuzz module.
FUZZ_HTTP := HTTPWire HTTPAnswerReader
# The plain-Swift parsers: the kernel, the key formats, the login domain; each file is copied
# into one module with the imports of those targets left out.
FUZZ_SOURCES := $(wildcard Sources/FingerAuthCore/*.swift Sources/FingerAuthKeyFormats/*.swift \
  Sources/FingerAuthLoginDomain/*/*.swift) $(FUZZ_HTTP:%=Sources/FingerAuthHTTP/%.swift)
FUZZ_IMPORTS := ^import FingerAuth\(Core\|KeyFormats\|LoginDomain\)$$

$(FUZZER): Tests/fuzz/FuzzTargets.swift $(FUZZ_SOURCES) mk/fuzz.mk
	@rm -rf $(BUILD)/fuzz/src && mkdir -p $(BUILD)/fuzz/src
	@for f in $(FUZZ_SOURCES); do sed '/$(FUZZ_IMPORTS)/d' $$f > $(BUILD)/fuzz/src/$$(echo $$f | tr / _); done
	swiftc -swift-version 6 -sanitize=fuzzer,address -parse-as-library -O -module-name FuzzCore -package-name FingerAuth -use-ld=lld \
	  $(BUILD)/fuzz/src/*.swift Tests/fuzz/FuzzTargets.swift -o $@

fuzz-build: $(FUZZER)

fuzz: fuzz-build
	@scripts/fuzz.sh $(FUZZER) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke: fuzz-build
	@scripts/fuzz.sh $(FUZZER) $(FUZZ_SMOKE_SECONDS) $(FUZZ_TARGETS)
