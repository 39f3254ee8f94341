"""Shared fixtures: test CAs for the session (ECDSA P-256, the default; RSA-2048 for what
only an RSA certificate shows), and for each test a FingerAuth world with its own state
directory, virtual reader, configuration and a real fingerauthd over TLS. A test gets a
world serving the RSA certificate with
`@pytest.mark.parametrize("world", ["rsa:2048"], indirect=True)`."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from support.tls import make_ca  # noqa: E402
from support.world import World  # noqa: E402


@pytest.fixture(scope="session")
def ca(tmp_path_factory):
    return make_ca(str(tmp_path_factory.mktemp("ca")))


@pytest.fixture(scope="session")
def rsa_ca(tmp_path_factory):
    return make_ca(str(tmp_path_factory.mktemp("rsa-ca")), server_key="rsa:2048", ca_key="rsa:2048")


@pytest.fixture
def world(request, tmp_path, ca):
    key = getattr(request, "param", "ec")
    if key not in ("ec", "rsa:2048"):
        raise ValueError("world's certificate key %r: 'ec' or 'rsa:2048'" % key)
    w = World(tmp_path, ca if key == "ec" else request.getfixturevalue("rsa_ca"))
    try:
        w.start_authenticator()
        yield w
    finally:
        w.close()
