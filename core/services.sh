#!/usr/bin/env bash
# System packages for core's tests (run as root by CI before nox; idempotent).
#   chromium (and a font for its labels): the headless browser that tests/test_explore_browser.py
#   drives through Playwright (which, from PyPI, never downloads a browser: it is pointed at this one).
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
    echo "bfsql core: Chromium is installed"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-liberation
echo "bfsql core: installed chromium"
