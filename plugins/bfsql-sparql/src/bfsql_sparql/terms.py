"""RDF terms in SPARQL text: IRI validation, compact ids, and string literals that cannot break out.

Every piece of caller-controlled text that reaches a query goes through this module:
entity ids and types become ``<IRI>`` only after :func:`check_iri`, search strings
become literals or expressions through :func:`string_expression`, and language tags
through :func:`check_language`. Queries never carry ``PREFIX`` declarations; prefixes
exist only here, in Python.

SPARQL 1.1 (§19.2) processes ``\\u``/``\\U`` codepoint escapes before parsing, so a
query text that contains them could turn into another query. No text produced here
ever contains a backslash followed by ``u`` or ``U``.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from bfsql import clip, compact_iri

__all__ = [
    "BUILTIN_PREFIXES",
    "InvalidTerm",
    "PrefixMap",
    "check_iri",
    "check_language",
    "iri_ref",
    "local_name",
    "string_expression",
    "string_literal",
]

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
OWL = "http://www.w3.org/2002/07/owl#"
XSD = "http://www.w3.org/2001/XMLSchema#"
SKOS = "http://www.w3.org/2004/02/skos/core#"
PROV = "http://www.w3.org/ns/prov#"
DCTERMS = "http://purl.org/dc/terms/"

BUILTIN_PREFIXES: tuple[tuple[str, str], ...] = (
    ("rdf", RDF),
    ("rdfs", RDFS),
    ("owl", OWL),
    ("xsd", XSD),
    ("skos", SKOS),
    ("prov", PROV),
    ("dcterms", DCTERMS),
)
"""Prefixes known without configuration; configured prefixes come first and may redefine them."""

COMPACTED_KEPT = 100_000
"""Compact ids a prefix map remembers before it starts over."""

RESERVED_PREFIX_NAMES = frozenset({"http", "https", "urn", "ftp", "file", "mailto", "tag", "data"})
"""IRI schemes: a prefix with one of these names would make full IRIs ambiguous."""

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_PREFIX_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*")
_LANGUAGE = re.compile(r"[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*")

# RFC 3987 (absolute IRI), checked because strict servers (Oxigraph) refuse a query holding any
# other IRI: the error would blame the endpoint, and one bad id would sink a whole batch.
_UCSCHAR = (
    "\xa0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef"
    + "".join(f"{chr(plane)}-{chr(plane + 0xFFFD)}" for plane in range(0x10000, 0xE0000, 0x10000))
    + "\U000e1000-\U000efffd"
)
_PRIVATE = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"
_PCT = "%[0-9A-Fa-f]{2}"
_PLAIN = rf"A-Za-z0-9\-._~!$&'()*+,;={_UCSCHAR}"
"""iunreserved and sub-delims."""
_PCHAR = rf"(?:[{_PLAIN}:@]|{_PCT})"


@functools.cache
def _rfc3987() -> re.Pattern[str]:
    """The absolute-IRI pattern, compiled on first use (tens of milliseconds: bfsql imports this module for every
    command, through the backend's configuration)."""
    return re.compile(
        rf"[A-Za-z][A-Za-z0-9+.\-]*:"
        rf"(?://(?:(?:[{_PLAIN}:]|{_PCT})*@)?(?:\[(?P<literal>[^\]]*)\]|(?:[{_PLAIN}]|{_PCT})*)(?::[0-9]*)?"
        rf"(?:/{_PCHAR}*)*|/?(?:{_PCHAR}+(?:/{_PCHAR}*)*)?)"
        rf"(?:\?(?:{_PCHAR}|[{_PRIVATE}/?])*)?(?:#(?:{_PCHAR}|[/?])*)?"
    )


_IP_FUTURE = re.compile(r"v[0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+")
_ECHAR = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


class InvalidTerm(ValueError):
    """Text that cannot be written into a query as the term it claims to be."""


_BAD_CHAR = re.compile(r'[\x00-\x20\x7f-\x9f\ud800-\udfff<>"{}|^`\\]')
"""Whitespace, control characters, lone surrogates and ``<>"{}|^`\\``: never in an IRI written in a query."""


def _ip_literal(text: str) -> bool:
    """Whether ``text`` may stand between ``[`` and ``]`` as an IRI's host: IPv6 (without a zone) or IPvFuture."""
    if _IP_FUTURE.fullmatch(text):
        return True
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return "%" not in text


@functools.lru_cache(maxsize=65_536)  # ids are checked as they arrive and again as queries are written
def check_iri(iri: str) -> str:
    """Return ``iri`` if it is an absolute IRI that is safe between ``<`` and ``>``; else raise InvalidTerm.

    Refused: the characters ``<>"{}|^`\\``, whitespace and control characters, lone
    surrogates, anything without a scheme (``name:``), and anything else RFC 3987 does not allow.
    """
    if not _SCHEME.match(iri):
        raise InvalidTerm(f"{clip(iri)!r} is not an absolute IRI (it needs a scheme such as 'http:').")
    if _BAD_CHAR.search(iri):
        shown = ", ".join(repr(ch) for ch in sorted(set(_BAD_CHAR.findall(iri)))[:5])
        raise InvalidTerm(f"{clip(iri)!r} is not a valid IRI: it contains {shown}.")
    valid = _rfc3987().fullmatch(iri)
    if not valid or (valid["literal"] is not None and not _ip_literal(valid["literal"])):
        raise InvalidTerm(
            f"{clip(iri)!r} is not a valid IRI (RFC 3987): check its %-escapes (%XX), '[' ']', '#', '?' and port."
        )
    return iri


def iri_ref(iri: str) -> str:
    """``<iri>`` for a query, after :func:`check_iri`."""
    return f"<{check_iri(iri)}>"


def check_language(tag: str) -> str:
    """Return a BCP 47 language tag (``en``, ``pt-BR``) or raise InvalidTerm; ``""`` means untagged."""
    if tag and not _LANGUAGE.fullmatch(tag):
        raise InvalidTerm(f"{tag!r} is not a language tag (expected e.g. 'en' or 'pt-BR').")
    return tag


def _check_text(text: str) -> None:
    for ch in text:
        code = ord(ch)
        if (code < 0x20 and ch not in "\t\n\r\b\f") or code == 0x7F or 0xD800 <= code <= 0xDFFF:
            raise InvalidTerm(f"the text contains the control character {ch!r}; remove it.")


def _escape(text: str) -> str:
    return "".join(_ECHAR.get(ch, ch) for ch in text)


def string_literal(text: str) -> str:
    """A plain SPARQL string literal ``"…"`` denoting exactly ``text``.

    Raises InvalidTerm for control characters other than tab, newline, carriage return,
    backspace and form feed, and for a backslash followed by ``u``/``U`` (which only
    :func:`string_expression` can write safely).
    """
    _check_text(text)
    if re.search(r"\\[uU]", text):
        raise InvalidTerm("the text contains a backslash followed by 'u'; it can only be written as an expression.")
    return f'"{_escape(text)}"'


def string_expression(text: str) -> str:
    """A SPARQL expression whose value is the plain string ``text``.

    Usually a literal; when ``text`` has a backslash before ``u``/``U`` it is split
    there and joined with ``CONCAT``, so the query never contains a codepoint escape.
    """
    _check_text(text)
    pieces = re.split(r"(?<=\\)(?=[uU])", text)
    if len(pieces) == 1:
        return f'"{_escape(text)}"'
    return "CONCAT(" + ", ".join(f'"{_escape(piece)}"' for piece in pieces) + ")"


def local_name(iri: str) -> str:
    """The part of an IRI after its last ``#``, ``/`` or ``:`` (the whole IRI if that part is empty)."""
    for separator in ("#", "/", ":"):
        if separator in iri:
            tail = iri.rsplit(separator, 1)[1]
            return tail or iri
    return iri


@dataclass(frozen=True)
class PrefixMap:
    """Compact ids ``NAME:local`` for IRIs under known namespaces, and back.

    Compaction uses the longest matching namespace, so ``expand(compact(iri)) == iri``
    for every IRI. An IRI under no known namespace is its own id. One namespace may
    have the empty name (``=IRI``): its IRIs become bare names such as ``Gene``.
    """

    prefixes: tuple[tuple[str, str], ...]
    """(name, namespace IRI) pairs, most preferred first."""
    _compacted: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)
    """Recent answers of :meth:`compact`: a hop compacts the same types and predicates thousands of times."""
    _iris: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)
    """The same table the other way, compact id -> IRI: the ids a traversal sends back are those it was given."""

    @classmethod
    def parse(cls, specs: Iterable[str], builtins: bool = True) -> PrefixMap:
        """Build from ``NAME=IRI`` strings (``=IRI`` names the default namespace).

        Configured prefixes come first, then the built-in ones they do not redefine.
        """
        pairs: list[tuple[str, str]] = []
        for spec in specs:
            name, sep, namespace = spec.partition("=")
            name, namespace = name.strip(), namespace.strip()
            if not sep or not namespace:
                raise InvalidTerm(
                    f"prefix {spec!r} is not of the form NAME=IRI (e.g. dbr=http://dbpedia.org/resource/)."
                )
            if name and not _PREFIX_NAME.fullmatch(name):
                raise InvalidTerm(f"prefix name {name!r} must start with a letter and use letters, digits, _ . -")
            if name.lower() in RESERVED_PREFIX_NAMES:
                raise InvalidTerm(f"prefix name {name!r} is an IRI scheme; full IRIs would become ambiguous.")
            if any(name == known for known, _ in pairs):
                raise InvalidTerm(f"prefix {name or '(default)'!r} is given twice.")
            try:
                check_iri(namespace)
            except InvalidTerm as exc:
                raise InvalidTerm(f"prefix {name or '(default)'!r}: {exc}") from None
            pairs.append((name, namespace))
        if builtins:
            names = {name for name, _ in pairs}
            pairs.extend((name, ns) for name, ns in BUILTIN_PREFIXES if name not in names)
        return cls(tuple(pairs))

    def compact(self, iri: str) -> str:
        """``NAME:local`` for the longest namespace that ``iri`` starts with, else ``iri`` itself.

        Under the default namespace the id is the bare local part, used only when that
        part is not empty and has no ``:`` (so that it reads back as the same IRI).
        """
        known = self._compacted.get(iri)
        if known is None:
            if len(self._compacted) >= COMPACTED_KEPT:
                self._compacted.clear()
                self._iris.clear()
            known = self._compacted[iri] = compact_iri(iri, self.prefixes)
            if known != iri:  # a full IRI as its own id may read back as another IRI (scheme = a prefix name)
                self._iris[known] = iri
        return known

    def canonical_iri(self, entity_id: str) -> str | None:
        """The IRI of ``entity_id`` when :meth:`compact` recently made that id from it (so it is canonical), else None.

        ``expand(compact(iri)) == iri``, so the table answers what :meth:`expand` and the
        round trip through :meth:`compact` would, without either; the IRI is still checked.
        """
        iri = self._iris.get(entity_id)
        if iri is None:
            return None
        try:
            return check_iri(iri)
        except InvalidTerm:
            return None

    @functools.cached_property
    def _namespaces(self) -> dict[str, str]:
        return dict(self.prefixes)

    def expand(self, term: str) -> str:
        """The full IRI of a compact id, a bare name (default namespace) or an IRI; InvalidTerm otherwise."""
        names = self._namespaces
        name, sep, local = term.partition(":")
        if not sep and term and "" in names:
            return check_iri(names[""] + term)
        namespace = names.get(name) if sep and name else None
        if namespace is not None:
            return check_iri(namespace + local)
        if _SCHEME.match(term):
            return check_iri(term)
        known = ", ".join(name or "(default)" for name, _ in self.prefixes)
        raise InvalidTerm(
            f"{clip(term)!r} is neither an absolute IRI nor a compact id with a known prefix (known prefixes: {known})."
        )

    def rank(self, iri: str) -> int:
        """Preference of the namespace of ``iri``: the position of its prefix, len(prefixes) when none matches."""
        compact = self.compact(iri)
        if compact == iri:
            return len(self.prefixes)
        name, sep, _ = compact.partition(":")
        return self._positions[name if sep else ""]

    @functools.cached_property
    def _positions(self) -> dict[str, int]:
        return {name: position for position, (name, _) in enumerate(self.prefixes)}
