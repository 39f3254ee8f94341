#!/usr/bin/env python3
"""Runs a command beside a throwaway PostgreSQL server: `make unit` runs the XCTest suite
this way, so that the registry's tests run their one body on both stores.

    Tests/with_postgres.py swift test ...

The server (Debian's `postgresql` package, as the integration suite starts it) listens on
127.0.0.1 on a free port, in a temporary folder that is removed afterwards, also when the
command fails or is interrupted. The command gets its address, without a database name, in
FA_TEST_POSTGRES_URL (postgresql://fa@127.0.0.1:PORT); each test makes a database of its
own there. The exit status is the command's.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "integration"))
from support.postgres import Postgres  # noqa: E402


def main(command):
    if not command:
        print("usage: with_postgres.py COMMAND [ARG...]", file=sys.stderr)
        return 2
    with Postgres() as pg:
        env = dict(os.environ, FA_TEST_POSTGRES_URL="postgresql://fa@127.0.0.1:%d" % pg.port)
        return subprocess.call(command, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
