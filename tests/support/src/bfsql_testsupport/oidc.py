"""A real OpenID provider on loopback for the OAuth tests: ``oidc-provider`` from npm, client-credentials grant.

:class:`OpenIdProvider` runs ``tests/support/oidc/provider.mjs`` under Node with RSA keys made
here (the test keeps the private keys, so it can also forge tokens signed by the provider's own
key with claims the provider would never issue). Its npm packages are installed once with
``npm ci`` from the committed lock file into a directory under the system temp dir. Node and
npm come from Debian (``tests/team/services.sh``); without them the tests skip, or fail under
``BFSQL_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
from cryptography.hazmat.primitives.asymmetric import rsa

from bfsql_testsupport.services import free_port, unavailable, wait_for_port

__all__ = ["OpenIdProvider", "rsa_key"]

SOURCE = Path(__file__).parents[2] / "oidc"
"""package.json, package-lock.json and provider.mjs."""


def _b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def rsa_key(kid: str) -> tuple[rsa.RSAPrivateKey, dict[str, Any]]:
    """A new 2048-bit RSA key and its private JWK (what the provider signs with)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    numbers = key.private_numbers()
    public = numbers.public_numbers
    jwk = {
        "kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": _b64(public.n), "e": _b64(public.e),
        "d": _b64(numbers.d), "p": _b64(numbers.p), "q": _b64(numbers.q), "dp": _b64(numbers.dmp1),
        "dq": _b64(numbers.dmq1), "qi": _b64(numbers.iqmp),
    }
    return key, jwk


def _installed() -> Path:
    """A directory holding provider.mjs and its node_modules (``npm ci`` once per lock file)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        unavailable("oidc-provider", "node and npm are not installed (apt-get install nodejs npm)")
    lock = (SOURCE / "package-lock.json").read_bytes()
    target = Path(tempfile.gettempdir()) / f"bfsql-oidc-{hashlib.sha256(lock).hexdigest()[:16]}"
    if not (target / "node_modules" / "oidc-provider").is_dir():
        partial = Path(tempfile.mkdtemp(prefix="bfsql-oidc-"))
        for name in ("package.json", "package-lock.json"):
            shutil.copy(SOURCE / name, partial / name)
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=partial,
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            shutil.rmtree(partial, ignore_errors=True)
            unavailable("oidc-provider", f"npm ci failed: {done.stderr.strip()[-500:]}")
        try:
            os.rename(partial, target)
        except OSError:  # another process installed it first
            shutil.rmtree(partial, ignore_errors=True)
    shutil.copy(SOURCE / "provider.mjs", target / "provider.mjs")
    return target


class OpenIdProvider:
    """``oidc-provider`` on a free 127.0.0.1 port; :meth:`token` gets access tokens with the client-credentials grant.

    ``clients`` maps a client id to the scopes it may ask for; ``resources`` maps each resource
    (audience) URL to the scopes its tokens may carry; ``claims`` maps a client id to claims added
    to each of its tokens (such as ``groups``). :meth:`restart` serves new keys on the same
    port and issuer (key rotation).
    """

    def __init__(self, clients: dict[str, str], resources: dict[str, str], ttl: int = 600,
                 claims: dict[str, dict[str, Any]] | None = None) -> None:
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.clients = clients
        self.resources = resources
        self.ttl = ttl
        self.claims = claims or {}
        self.keys: list[tuple[Any, dict[str, Any]]] = [rsa_key("key-1")]
        self._dir = _installed()
        self._process: subprocess.Popen[bytes] | None = None
        self._config = Path(tempfile.mkdtemp(prefix="bfsql-oidc-run-")) / "config.json"

    def secret(self, client: str) -> str:
        """The client's secret."""
        return f"{client}-secret-{self.port}"

    def start(self) -> OpenIdProvider:
        """Start the provider with :attr:`keys` (the first one signs) and wait until it answers."""
        self._config.write_text(json.dumps({
            "issuer": self.issuer, "port": self.port, "ttl": self.ttl,
            "keys": [jwk for _, jwk in self.keys],
            "clients": [{"client_id": c, "client_secret": self.secret(c), **({"scope": s} if s else {}),
                         **({"claims": self.claims[c]} if c in self.claims else {})}
                        for c, s in self.clients.items()],
            "resources": self.resources,
        }))
        log = open(self._config.parent / "provider.log", "ab")
        self._process = subprocess.Popen([shutil.which("node") or "node", "provider.mjs", str(self._config)],
                                         cwd=self._dir, stdout=log, stderr=log)
        log.close()
        try:
            wait_for_port(self.port, 60)
        except TimeoutError:
            self.stop()
            unavailable("oidc-provider", (self._config.parent / "provider.log").read_text(errors="replace")[-1000:])
        return self

    def stop(self) -> None:
        """Stop the provider (idempotent)."""
        if self._process is not None:
            self._process.terminate()
            self._process.wait(30)
            self._process = None

    def restart(self, keys: list[tuple[Any, dict[str, Any]]]) -> None:
        """Serve ``keys`` from now on (the first one signs): a key rotation."""
        self.stop()
        self.keys = keys
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the port is free again once the old process has gone
            try:
                self.start()
                return
            except Exception:
                time.sleep(0.2)
        self.start()

    def token(self, client: str, scope: str | None = None, resource: str | None = None) -> str:
        """An access token for ``client`` (client-credentials grant) with ``scope`` for ``resource``."""
        form = {"grant_type": "client_credentials"}
        if scope is not None:
            form["scope"] = scope
        if resource is not None:
            form["resource"] = resource
        answer = httpx.post(f"{self.issuer}/token", data=form, auth=(client, self.secret(client)), timeout=30)
        assert answer.status_code == 200, answer.text
        token: str = answer.json()["access_token"]
        return token

    def __enter__(self) -> OpenIdProvider:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        shutil.rmtree(self._config.parent, ignore_errors=True)
