# `make lint`: house rule 2 (no traps in Sources/), run first in `make test`.
TEST_STAGES := lint $(TEST_STAGES)

.PHONY: lint
lint:
	@scripts/lint.sh
