"""URL templates: ``/entities/{id}/relations?direction=out`` with every value percent-encoded.

A placeholder ``{name}`` may stand in a path segment or in a query value. Values are
encoded with :func:`urllib.parse.quote` and no safe characters, so ids holding ``/``,
``?``, ``#``, ``%``, spaces or non-ASCII text reach the API as one segment or one value
and round-trip. A query parameter whose value is ``None`` is left out; a list value
repeats the parameter (or is joined with a separator).

Request URLs are at most :data:`MAX_URL_BYTES` long, and error messages quote them
through :func:`shown`, so that a huge id neither reaches the API nor comes back whole.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from urllib.parse import quote, unquote, urlsplit

from bfsql import clip

__all__ = ["MAX_URL_BYTES", "URL_SHOWN", "UrlTemplate", "encode", "same_origin", "shown"]

MAX_URL_BYTES = 8192
"""The longest request URL the backend sends: many servers and proxies refuse longer ones (414) or cut them."""
URL_SHOWN = 200
"""Characters of a URL an error message quotes."""

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

Value = str | int | Sequence[str] | None


def encode(value: str) -> str:
    """Percent-encode one path segment or query value (``.`` and ``..`` too, so no one normalises them away)."""
    if value in (".", ".."):
        return value.replace(".", "%2E")
    return quote(value, safe="")


def shown(url: str) -> str:
    """``url`` as an error message quotes it: clipped to :data:`URL_SHOWN` characters."""
    return clip(url, URL_SHOWN)


def same_origin(url: str, other: str) -> bool:
    """Whether two absolute URLs share scheme, host and port."""
    a, b = urlsplit(url), urlsplit(other)
    return (a.scheme.lower(), a.hostname, a.port or _default_port(a.scheme)) == (
        b.scheme.lower(),
        b.hostname,
        b.port or _default_port(b.scheme),
    )


def _default_port(scheme: str) -> int | None:
    return {"http": 80, "https": 443}.get(scheme.lower())


class UrlTemplate:
    """One configured URL template, resolved against the API's base URL."""

    def __init__(
        self, base_url: str, template: str, option: str, required: set[str], allowed: set[str] | None = None
    ) -> None:
        self.option = option
        self.template = template
        self.required = required
        self.allowed = allowed or required
        absolute = template.startswith(("http://", "https://"))
        self.url = template if absolute else base_url.rstrip("/") + "/" + template.lstrip("/")
        self.path, _, self.query = self.url.partition("?")

    def check(self) -> None:
        """Raise ``ValueError`` naming the option if placeholders are missing or unknown."""
        names = set(_PLACEHOLDER.findall(self.url))
        missing, unknown = self.required - names, names - self.allowed
        if missing or unknown:
            problems = []
            if missing:
                problems.append("missing " + ", ".join(f"{{{n}}}" for n in sorted(missing)))
            if unknown:
                problems.append("unknown " + ", ".join(f"{{{n}}}" for n in sorted(unknown)))
            allowed = ", ".join(f"{{{n}}}" for n in sorted(self.allowed))
            raise ValueError(f"{self.option} {self.template!r}: {'; '.join(problems)} (placeholders: {allowed})")
        if "{" in urlsplit(self.url).netloc:
            raise ValueError(f"{self.option} {self.template!r}: placeholders may not stand in the host")

    def expand(self, values: Mapping[str, Value], list_separator: str | None = None) -> str:
        """The URL with every placeholder replaced by its encoded value."""
        path = _PLACEHOLDER.sub(lambda m: encode(str(values[m.group(1)])), self.path)
        if not self.query:
            return path
        pairs: list[str] = []
        for pair in self.query.split("&"):
            names = _PLACEHOLDER.findall(pair)
            given = [values.get(name) for name in names]
            if any(v is None or (isinstance(v, (list, tuple)) and not v) for v in given):
                continue
            lists = [v for v in given if isinstance(v, (list, tuple))]
            if lists and list_separator is None and len(names) == 1:
                pairs.extend(pair.replace("{" + names[0] + "}", encode(str(item))) for item in lists[0])
                continue

            def one(match: re.Match[str]) -> str:
                value = values[match.group(1)]
                if isinstance(value, (list, tuple)):
                    return encode((list_separator or ",").join(str(v) for v in value))
                return encode(str(value))

            pairs.append(_PLACEHOLDER.sub(one, pair))
        return path + ("?" + "&".join(pairs) if pairs else "")

    def match_id(self, iri: str) -> str | None:
        """The id whose entity URL is ``iri``, for a template that ends in ``{id}``; else None."""
        if self.query or not self.path.endswith("{id}") or self.path.count("{") != 1:
            return None
        prefix = self.path[: -len("{id}")]
        rest = iri[len(prefix) :] if iri.startswith(prefix) else ""
        if not rest or any(c in rest for c in "/?#"):
            return None
        return unquote(rest)
