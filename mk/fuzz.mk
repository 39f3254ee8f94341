# libFuzzer over FingerAuthCore's parsers of outside input (Tests/fuzz/FuzzTargets.swift):
# the config file, the pam.d arguments, the login helper's lines and its request, the authenticator's
# answers (their JSON, and the HTTP framing the helper's client reads: HTTPWire.swift and
# HTTPAnswerReader.swift, compiled into the same module with their `import FingerAuthCore` lines left out), JWTs and JSON, the agent's requests and replies, the TPM structures of a key attestation,
# offline grants, their receipts and the offline log's records and their judgement,
# the command-line words every program parses. `make fuzz` runs each target FUZZ_SECONDS (default 60);
# `make test` runs a smoke of FUZZ_SMOKE_SECONDS each. A crash fails the run and leaves
# its input in build/fuzz/.
FUZZ_TARGETS := config pam-args scan-message login-request authenticator-response http-answer jwt agent-message tpm-structures command-line offline
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 8
FUZZER := $(BUILD)/fuzz/fa-fuzz

TEST_STAGES += fuzz-smoke

.PHONY: fuzz fuzz-smoke fuzz-build

# The HTTP framing the helper's client reads, compiled into the fuzz module.
FUZZ_HTTP := HTTPWire HTTPAnswerReader

$(FUZZER): Tests/fuzz/FuzzTargets.swift $(wildcard Sources/FingerAuthCore/*.swift) \
  $(FUZZ_HTTP:%=Sources/FingerAuthHTTP/%.swift) mk/fuzz.mk
	@mkdir -p $(BUILD)/fuzz
	@for f in $(FUZZ_HTTP); do sed '/^import FingerAuthCore$$/d' Sources/FingerAuthHTTP/$$f.swift > $(BUILD)/fuzz/$$f.swift; done
	swiftc -swift-version 6 -sanitize=fuzzer,address -parse-as-library -O -module-name FuzzCore -use-ld=lld \
	  Sources/FingerAuthCore/*.swift $(FUZZ_HTTP:%=$(BUILD)/fuzz/%.swift) Tests/fuzz/FuzzTargets.swift -o $@

fuzz-build: $(FUZZER)

fuzz: fuzz-build
	@scripts/fuzz.sh $(FUZZER) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke: fuzz-build
	@scripts/fuzz.sh $(FUZZER) $(FUZZ_SMOKE_SECONDS) $(FUZZ_TARGETS)
