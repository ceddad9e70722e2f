"""The test server itself: it starts from a checkout its server user cannot read (mktemp -d)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bfsql_testsupport.embedded_postgres import SERVER_USER, _usable_by, binaries


@pytest.mark.skipif(os.geteuid() != 0, reason="the server runs as another user only under root")
def test_binaries_in_a_private_directory_are_run_from_a_copy(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "pginstall").symlink_to(binaries().parent)  # reachable through the private directory only
    usable = _usable_by(private / "pginstall" / "bin", SERVER_USER)
    assert not usable.is_relative_to(private)
    assert _usable_by(usable, SERVER_USER) == usable, "the copy is run as it is"
