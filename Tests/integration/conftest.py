"""Shared fixtures: a test CA for the session, and for each test a FingerAuth world with
its own state directory, virtual reader, configuration and a real fingerauthd over TLS."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from support.tls import make_ca  # noqa: E402
from support.world import World  # noqa: E402


@pytest.fixture(scope="session")
def ca(tmp_path_factory):
    return make_ca(str(tmp_path_factory.mktemp("ca")))


@pytest.fixture
def world(tmp_path, ca):
    w = World(tmp_path, ca)
    try:
        w.start_authenticator()
        yield w
    finally:
        w.close()
