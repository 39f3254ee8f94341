# `make lint`, run first in `make test`: house rule 2 (no traps in Sources/), a reason on
# every `@unchecked Sendable`, and .swift-format on every Swift file.
# `make format` rewrites the files to the format.
TEST_STAGES := lint $(TEST_STAGES)

.PHONY: lint format
lint:
	@scripts/lint.sh
	@scripts/lint-sendable.sh
	@scripts/lint-format.sh

format:
	@scripts/lint-format.sh --fix
