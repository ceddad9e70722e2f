#!/usr/bin/env bash
# System packages for core's tests (run as root by CI before nox; idempotent).
#   chromium (and a font for its labels): the headless browser that tests/test_explore_browser.py
#   drives through Playwright (which, from PyPI, never downloads a browser: it is pointed at this one).
#   libigraph-doc: igraph's examples, whose test.graphml tests/test_load_formats.py loads.
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium fonts-liberation)
[ -f /usr/share/doc/libigraph-dev/examples/simple/test.graphml ] || missing+=(libigraph-doc)
if [ ${#missing[@]} -eq 0 ]; then
    echo "bfsql core: Chromium and libigraph-doc are installed"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "bfsql core: installed ${missing[*]}"
