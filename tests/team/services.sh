#!/usr/bin/env bash
# System packages for the team tests (tests/team; run as root by CI before nox; idempotent).
#   haproxy: the load balancer the replica tests and bench/bench_team.py start in front of bfsql replicas;
#   nodejs, npm: run oidc-provider (from npm, pinned by tests/support/oidc/package-lock.json), the OpenID
#   provider the OAuth tests start on loopback;
#   systemd: its systemd-analyze rates docs/deploy/bfsql@.service (nothing is started).
set -euo pipefail

needed=()
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || needed+=(haproxy)
command -v node >/dev/null 2>&1 || needed+=(nodejs)
command -v npm >/dev/null 2>&1 || needed+=(npm)
command -v systemd-analyze >/dev/null 2>&1 || needed+=(systemd)
if [ "${#needed[@]}" -eq 0 ]; then
    echo "bfsql team tests: HAProxy, Node, npm and systemd-analyze are installed"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${needed[@]}"
# The package may start its own HAProxy on the default configuration; the tests start theirs on free ports.
if command -v systemctl >/dev/null 2>&1; then systemctl stop haproxy >/dev/null 2>&1 || true; fi
if [ -x /etc/init.d/haproxy ]; then /etc/init.d/haproxy stop >/dev/null 2>&1 || true; fi
echo "bfsql team tests: installed ${needed[*]}"
