"""The deployment files of docs/deploy: the systemd unit is hardened and lets bfsql write its cache; the image
trusts the proxy's forwarded addresses.

``systemd-analyze security --offline=yes`` rates a unit file without loading it (systemd 252 and
later; Debian's ``systemd`` package, from tests/team/services.sh): the exposure level, 0 (best)
to 10, must stay at 3.0 or below. Without systemd-analyze the test skips, or fails under
``BFSQL_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from bfsql_testsupport.services import unavailable

DEPLOY = Path(__file__).resolve().parents[2] / "docs" / "deploy"
UNIT = DEPLOY / "bfsql@.service"
MOST_EXPOSURE = 3.0


def _directives(text: str) -> dict[str, list[str]]:
    """Each directive of a unit file and its values, in order (continuation lines joined)."""
    found: dict[str, list[str]] = {}
    for line in text.replace("\\\n", " ").splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.lstrip().startswith(("#", ";", "[")):
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def test_the_systemd_unit_is_rated_3_or_less_by_systemd_analyze():
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        unavailable("systemd-analyze", "systemd is not installed (apt-get install systemd; tests/team/services.sh)")
    done = subprocess.run([analyze, "security", "--offline=yes", "--no-pager", str(UNIT)], capture_output=True,
                          text=True, timeout=120)
    rated = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", done.stdout)
    if rated is None and "offline" in done.stderr:
        unavailable("systemd-analyze security --offline", done.stderr.strip()[-300:])
    assert rated is not None, done.stdout[-2000:] + done.stderr[-2000:]
    assert float(rated.group(1)) <= MOST_EXPOSURE, done.stdout


def test_the_unit_gives_bfsql_a_cache_it_may_write_and_nothing_else():
    directives = _directives(UNIT.read_text())
    assert directives["ProtectSystem"] == ["strict"]
    assert directives["CacheDirectory"] == ["bfsql"] and directives["LogsDirectory"] == ["bfsql"]
    environment = " ".join(directives["Environment"]).split()
    assert "BFSQL_CACHE_DIR=%C/bfsql" in environment, "the demo graph's store is built in the cache directory"
    assert "--audit-log /var/log/bfsql/" in directives["ExecStart"][0], "the audit log goes to the logs directory"
    assert directives["MemoryDenyWriteExecute"] == ["yes"]


def test_the_image_trusts_forwarded_addresses_only_from_where_it_is_told():
    text = (DEPLOY / "Containerfile").read_text()
    assert re.search(r"^ENV FORWARDED_ALLOW_IPS=", text, re.M), "uvicorn's default, 127.0.0.1, is never the proxy"
