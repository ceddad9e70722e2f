#!/usr/bin/env bash
# System packages for bfsql-sparql's tests (run as root by CI before nox; idempotent).
#   virtuoso-opensource: the Virtuoso server (virtuoso-t) and isql-vt, started by the tests themselves;
#   konclude: ships the LUBM data set (lubm-univ-bench-data-1.ttl) that the multi-hop tests load.
# Oxigraph comes from PyPI (the 'oxigraph' package, in the [test] extra), not from here.
set -euo pipefail

needed=()
command -v virtuoso-t >/dev/null 2>&1 && command -v isql-vt >/dev/null 2>&1 || needed+=(virtuoso-opensource)
[ -f /usr/share/doc/konclude/examples/Tests/lubm-univ-bench-data-1.ttl ] || needed+=(konclude)
if [ "${#needed[@]}" -eq 0 ]; then
    echo "bfsql-sparql: Virtuoso and the LUBM data are installed"
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
# The LUBM file lives under /usr/share/doc: make sure dpkg does not drop it (slim images exclude docs).
if grep -rqs 'path-exclude=/usr/share/doc' /etc/dpkg/dpkg.cfg.d/; then
    echo 'path-include=/usr/share/doc/konclude/*' > /etc/dpkg/dpkg.cfg.d/zz-bfsql-konclude
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${needed[@]}"
if [ ! -f /usr/share/doc/konclude/examples/Tests/lubm-univ-bench-data-1.ttl ]; then
    apt-get install -y -qq --reinstall --no-install-recommends konclude  # installed earlier without its docs
fi
# The package may start its own Virtuoso on ports 1111/8890; the tests start theirs on free ports.
if [ -x /etc/init.d/virtuoso-opensource-7 ]; then
    /etc/init.d/virtuoso-opensource-7 stop >/dev/null 2>&1 || true
fi
echo "bfsql-sparql: installed ${needed[*]}"
