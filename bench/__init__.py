"""`make bench`: bench/run.py runs the sections of bench/sections/ in order. Importing this
package makes the integration tests' support package (Tests/integration/support: the World,
the test CA, the virtual reader, fingerauthd) importable, which every section builds on."""

import sys
from pathlib import Path

_SUPPORT = str(Path(__file__).resolve().parent.parent / "Tests" / "integration")
if _SUPPORT not in sys.path:
    sys.path.insert(0, _SUPPORT)
