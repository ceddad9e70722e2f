"""The part of JSON-LD 1.1 bfsql needs: context processing, IRI expansion and compaction.

Implemented (following the JSON-LD 1.1 Processing Algorithms): inline, array and
referenced contexts, ``null`` resets, ``@base``, ``@vocab``, ``@import``, simple and
expanded term definitions (``@id``, ``@type``, ``@container``, ``@prefix``,
``@reverse``, property-scoped ``@context``), keyword aliases, compact IRIs with the 1.1
prefix rule, vocabulary- and document-relative expansion, and compaction of vocabulary
IRIs to terms, ``@vocab``-relative names and compact IRIs.

Not implemented, because bfsql reads documents rather than transforming them:
``@language``/``@direction`` maps, type-scoped contexts, ``@nest``, ``@protected``
checks, and the full term-selection algorithm (compaction picks the shortest matching
term). Referenced contexts are never fetched here: :class:`ContextLoader` resolves
them beforehand from local copies, or over HTTP only when explicitly allowed.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from bfsql_jsonld.errors import ContextError
from bfsql_jsonld.urls import shown

__all__ = [
    "KEYWORDS",
    "ActiveContext",
    "ContextLoader",
    "Term",
    "compact_iri",
    "context_refs",
    "expand_iri",
    "load_local_context",
    "process_context",
]

KEYWORDS = frozenset(
    {
        "@base",
        "@container",
        "@context",
        "@direction",
        "@graph",
        "@id",
        "@import",
        "@included",
        "@index",
        "@json",
        "@language",
        "@list",
        "@nest",
        "@none",
        "@prefix",
        "@propagate",
        "@protected",
        "@reverse",
        "@set",
        "@type",
        "@value",
        "@version",
        "@vocab",
    }
)
_CONTEXT_KEYS = frozenset(
    {"@base", "@vocab", "@language", "@direction", "@version", "@import", "@propagate", "@protected"}
)
_KEYWORD_FORM = re.compile(r"^@[A-Za-z]+$")
_ABSOLUTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_GEN_DELIMS = tuple(":/?#[]@")
MAX_REMOTE_DEPTH = 16
"""Referenced contexts that include further references, at most this deep."""


@dataclass(frozen=True)
class Term:
    """A term definition: what the term means and how its values are typed."""

    iri: str | None
    """The IRI or keyword the term stands for; None for a null mapping (not linked data)."""
    type: str | None = None
    """Type coercion: ``@id``, ``@vocab``, ``@json``, ``@none`` or a datatype IRI."""
    container: frozenset[str] = frozenset()
    prefix: bool = False
    """Whether the term may be the prefix of a compact IRI."""
    reverse: bool = False
    context: Any = None
    """The property-scoped context applied to the term's values, unprocessed."""


@dataclass
class ActiveContext:
    """The result of processing contexts: base IRI, vocabulary mapping and terms."""

    base: str | None
    original_base: str | None = None
    vocab: str | None = None
    terms: dict[str, Term] = field(default_factory=dict)

    @classmethod
    def initial(cls, document_url: str | None) -> ActiveContext:
        """The initial context of a document fetched from ``document_url``."""
        return cls(base=document_url, original_base=document_url)

    def copy(self) -> ActiveContext:
        """An independent copy (term definitions are immutable and shared)."""
        return replace(self, terms=dict(self.terms))

    def keyword_of(self, key: str) -> str | None:
        """The keyword ``key`` is or aliases, else None."""
        if key in KEYWORDS:
            return key
        term = self.terms.get(key)
        if term is not None and term.iri in KEYWORDS:
            return term.iri
        return None


def looks_like_keyword(value: str) -> bool:
    """``@`` followed by letters only: reserved by JSON-LD for future keywords."""
    return bool(_KEYWORD_FORM.match(value))


def expand_iri(
    active: ActiveContext,
    value: str,
    *,
    vocab: bool = False,
    document_relative: bool = False,
    local: Mapping[str, Any] | None = None,
    defined: dict[str, bool] | None = None,
) -> str | None:
    """IRI expansion (JSON-LD 1.1 §5.2): a term, compact IRI, vocab- or base-relative value to an IRI."""
    if value in KEYWORDS:
        return value
    if looks_like_keyword(value):
        return None
    _define_first(active, value, local, defined)
    term = active.terms.get(value)
    if vocab and term is not None:
        return term.iri
    if ":" in value[1:]:
        absolute = _expand_prefixed(active, value, local, defined)
        if absolute is not None:
            return absolute
    if vocab and active.vocab is not None:
        return active.vocab + value
    if document_relative and active.base is not None:
        return urljoin(active.base, value)
    return value


def _define_first(
    active: ActiveContext, name: str, local: Mapping[str, Any] | None, defined: dict[str, bool] | None
) -> None:
    """Define ``name`` now when the context being processed (``local``) defines it and has not yet."""
    if local is not None and defined is not None and name in local and defined.get(name) is not True:
        _define(active, local, name, defined)


def _expand_prefixed(
    active: ActiveContext, value: str, local: Mapping[str, Any] | None, defined: dict[str, bool] | None
) -> str | None:
    """A ``prefix:suffix`` value as a blank node, an absolute IRI or a compact IRI; None if it is none of them."""
    prefix, suffix = value.split(":", 1)
    if prefix == "_" or suffix.startswith("//"):
        return value
    _define_first(active, prefix, local, defined)
    prefix_term = active.terms.get(prefix)
    if prefix_term is not None and prefix_term.iri is not None and prefix_term.prefix:
        return prefix_term.iri + suffix
    if _ABSOLUTE.match(value):
        return value
    return None


def compact_iri(active: ActiveContext, iri: str) -> str:
    """Vocabulary IRI compaction: the shortest term, then an ``@vocab``-relative name, then a compact IRI."""
    terms = [t for t, d in active.terms.items() if d.iri == iri and not d.reverse]
    if terms:
        return min(terms, key=lambda t: (len(t), t))
    if active.vocab and iri.startswith(active.vocab) and len(iri) > len(active.vocab):
        suffix = iri[len(active.vocab) :]
        if suffix not in active.terms:
            return suffix
    best: str | None = None
    for name, term in active.terms.items():
        if term.iri is None or not term.prefix or len(iri) <= len(term.iri) or not iri.startswith(term.iri):
            continue
        candidate = f"{name}:{iri[len(term.iri) :]}"
        clash = active.terms.get(candidate)
        if clash is not None and clash.iri != iri:
            continue
        if best is None or (len(candidate), candidate) < (len(best), best):
            best = candidate
    return best or iri


def process_context(
    active: ActiveContext,
    local: Any,
    resolved: Mapping[str, Any],
    *,
    base_url: str | None = None,
    remote: bool = False,
    stack: tuple[str, ...] = (),
) -> ActiveContext:
    """Context processing (JSON-LD 1.1 §4.1) of ``local`` on top of ``active``.

    ``resolved`` maps every referenced context URL (absolute) to its parsed document;
    :class:`ContextLoader` fills it. ``base_url`` resolves relative references.
    """
    result = active.copy()
    for item in local if isinstance(local, list) else [local]:
        if item is None:
            result = ActiveContext.initial(active.original_base)
        elif isinstance(item, str):
            url = urljoin(base_url or "", item)
            if url in stack or len(stack) >= MAX_REMOTE_DEPTH:
                raise ContextError(f"JSON-LD context {url} includes itself (or nests too deep).", "Fix the context.")
            result = process_context(
                result, _remote_context(url, resolved), resolved, base_url=url, remote=True, stack=(*stack, url)
            )
        elif isinstance(item, dict):
            result = _process_object(result, item, resolved, base_url, remote, stack)
        else:
            raise ContextError(f"Invalid JSON-LD @context entry {item!r}.", "A context is an object, a URL or null.")
    return result


def _remote_context(url: str, resolved: Mapping[str, Any]) -> Any:
    if url not in resolved:
        raise ContextError(f"JSON-LD context {url} was not loaded.", "This is a bug in bfsql-jsonld; please report it.")
    document = resolved[url]
    if not isinstance(document, dict) or "@context" not in document:
        raise ContextError(
            f"The document at {url} is not a JSON-LD context (no top-level @context).",
            "Point the reference (or --context-map) at a context document.",
        )
    return document["@context"]


def _process_object(
    result: ActiveContext,
    item: dict[str, Any],
    resolved: Mapping[str, Any],
    base_url: str | None,
    remote: bool,
    stack: tuple[str, ...],
) -> ActiveContext:
    if "@import" in item:
        if not isinstance(item["@import"], str):
            raise ContextError("@import must be a URL.", "Fix the context.")
        url = urljoin(base_url or "", item["@import"])
        imported = _remote_context(url, resolved)
        if not isinstance(imported, dict):
            raise ContextError(f"The context imported from {url} is not an object.", "Fix the context.")
        item = {**imported, **{k: v for k, v in item.items() if k != "@import"}}
    if "@base" in item and not remote:
        value = item["@base"]
        if value is None:
            result.base = None
        elif isinstance(value, str) and (_ABSOLUTE.match(value) or result.base is not None):
            result.base = urljoin(result.base or "", value)
        else:
            raise ContextError(f"Invalid @base {value!r}.", "@base is an IRI, or null.")
    if "@vocab" in item:
        value = item["@vocab"]
        if value is None:
            result.vocab = None
        elif isinstance(value, str):
            result.vocab = expand_iri(result, value, vocab=True, document_relative=True)
        else:
            raise ContextError(f"Invalid @vocab {value!r}.", "@vocab is an IRI, or null.")
    defined: dict[str, bool] = {}
    for term in item:
        if term not in _CONTEXT_KEYS:
            _define(result, item, term, defined)
    return result


def _define(active: ActiveContext, local: Mapping[str, Any], term: str, defined: dict[str, bool]) -> None:
    """Create term definition (JSON-LD 1.1 §4.2), following dependencies within ``local``."""
    if defined.get(term) is True:
        return
    if term in defined:
        raise ContextError(f"JSON-LD context defines {term!r} in a cycle.", "Fix the context.")
    defined[term] = False
    value = local[term]
    if term in KEYWORDS and not (term == "@type" and isinstance(value, dict)):
        raise ContextError(f"JSON-LD context redefines the keyword {term}.", "Remove that entry from the context.")
    if not (looks_like_keyword(term) or term == ""):
        active.terms.pop(term, None)
        definition = _term_definition(active, local, term, value, defined)
        if definition is not None:
            active.terms[term] = definition
    defined[term] = True


def _term_definition(
    active: ActiveContext, local: Mapping[str, Any], term: str, value: Any, defined: dict[str, bool]
) -> Term | None:
    """The definition ``value`` gives ``term``; None when the term is left undefined (an ``@id`` like a keyword)."""
    if value is None or (isinstance(value, dict) and "@id" in value and value["@id"] is None):
        return Term(iri=None)
    simple = isinstance(value, str)
    if simple:
        value = {"@id": value}
    if not isinstance(value, dict):
        raise ContextError(f"Invalid definition of term {term!r}: {value!r}.", "A term maps to an IRI or an object.")

    def expand(iri: str) -> str | None:
        return expand_iri(active, iri, vocab=True, local=local, defined=defined)

    reverse = "@reverse" in value
    prefix = False
    if reverse:
        iri = expand(str(value["@reverse"]))
    elif "@id" in value and value["@id"] != term:
        if not isinstance(value["@id"], str):
            raise ContextError(f"The @id of term {term!r} must be a string.", "Fix the context.")
        if looks_like_keyword(value["@id"]) and value["@id"] not in KEYWORDS:
            return None
        iri = expand(value["@id"])
        if iri == "@context":
            raise ContextError("@context cannot be aliased.", "Remove that term from the context.")
        prefix = simple and _may_be_prefix(term, iri)
    else:
        iri = _iri_from_term(active, local, term, defined)
    if "@prefix" in value:
        prefix = value["@prefix"] is True
    type_ = value.get("@type")
    container = value.get("@container")
    return Term(
        iri=iri,
        type=_type_mapping(type_, expand) if isinstance(type_, str) else None,
        container=frozenset([container] if isinstance(container, str) else container or []),
        prefix=prefix,
        reverse=reverse,
        context=value.get("@context"),
    )


def _type_mapping(type_: str, expand: Callable[[str], str | None]) -> str | None:
    """A definition's type coercion: ``@id``, ``@vocab``, ``@json`` and ``@none`` as they are, a datatype expanded."""
    return type_ if type_ in ("@id", "@vocab", "@json", "@none") else expand(type_)


def _may_be_prefix(term: str, iri: str | None) -> bool:
    """The 1.1 prefix rule for a simple term: no ``:`` or ``/`` in it, its IRI ending in a delimiter or a blank node."""
    simple_term = ":" not in term and "/" not in term
    return bool(simple_term and iri and (iri.endswith(_GEN_DELIMS) or iri.startswith("_:")))


def _iri_from_term(active: ActiveContext, local: Mapping[str, Any], term: str, defined: dict[str, bool]) -> str | None:
    """The IRI of a term defined without its own ``@id``: from its prefix, as a relative IRI, or under ``@vocab``."""
    if ":" in term[1:]:
        head, tail = term.split(":", 1)
        _define_first(active, head, local, defined)
        head_term = active.terms.get(head)
        return head_term.iri + tail if head_term is not None and head_term.iri is not None else term
    if "/" in term:
        return expand_iri(active, term, vocab=False, local=local, defined=defined)
    if term == "@type":
        return "@type"
    if active.vocab is not None:
        return active.vocab + term
    raise ContextError(
        f"JSON-LD term {term!r} has no IRI and the context has no @vocab.", f"Give {term!r} an @id, or set @vocab."
    )


def context_refs(value: Any, base_url: str | None) -> Iterator[str]:
    """Every context URL a context value references (inline definitions and ``@import`` included)."""
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, str):
            yield urljoin(base_url or "", item)
        elif isinstance(item, dict):
            if isinstance(item.get("@import"), str):
                yield urljoin(base_url or "", item["@import"])
            for definition in item.values():
                if isinstance(definition, dict) and "@context" in definition:
                    yield from context_refs(definition["@context"], base_url)


def document_refs(document: Any, base_url: str | None) -> Iterator[str]:
    """Every context URL referenced anywhere in a JSON-LD document."""
    if isinstance(document, list):
        for item in document:
            yield from document_refs(item, base_url)
    elif isinstance(document, dict):
        for key, value in document.items():
            if key == "@context":
                yield from context_refs(value, base_url)
            else:
                yield from document_refs(value, base_url)


def load_local_context(spec: str, option: str) -> Any:
    """A context given as inline JSON or as a file path; returns the value of its ``@context``.

    Raises :class:`ContextError` naming ``option`` when it cannot be read or parsed.
    """
    text = spec
    if not spec.lstrip().startswith(("{", "[")):
        try:
            text = Path(spec).read_text(encoding="utf-8")
        except OSError as exc:
            raise ContextError(
                f"{option}: cannot read {spec}: {exc.strerror}.", "Give a JSON-LD context file or inline JSON."
            ) from None
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ContextError(
            f"{option}: {spec[:80]} is not JSON ({exc.msg}, line {exc.lineno}).",
            "Give a JSON-LD context file or inline JSON.",
        ) from None
    return parsed["@context"] if isinstance(parsed, dict) and "@context" in parsed else parsed


Fetch = Callable[[str], Awaitable[Any]]


class ContextLoader:
    """Resolves referenced contexts: local copies first, then (only if allowed) HTTP.

    Loaded contexts are kept for the session, so a context is fetched at most once.
    """

    def __init__(self, local: Mapping[str, Any], fetch: Fetch | None) -> None:
        self._documents: dict[str, Any] = dict(local)
        self._fetch = fetch
        self._pending: dict[str, asyncio.Future[Any]] = {}

    @property
    def documents(self) -> Mapping[str, Any]:
        """Every context document loaded so far, by URL."""
        return self._documents

    async def resolve(self, refs: list[str], document_url: str) -> Mapping[str, Any]:
        """Load every context in ``refs`` and, transitively, those they reference."""
        todo = list(dict.fromkeys(refs))
        seen: set[str] = set()
        while todo:
            url = todo.pop()
            if url in seen:
                continue
            seen.add(url)
            document = await self._load(url, document_url)
            if isinstance(document, dict):
                todo.extend(context_refs(document.get("@context"), url))
        return self._documents

    async def _load(self, url: str, document_url: str) -> Any:
        if url in self._documents:
            return self._documents[url]
        if self._fetch is None:
            raise ContextError(
                f"The document {shown(document_url)} uses the remote JSON-LD context {url}; bfsql does not fetch "
                "contexts over the network unless told to.",
                f"Provide a local copy with --context-map '{url}=FILE', or allow fetching with "
                "--allow-remote-contexts.",
            )
        if url not in self._pending:
            self._pending[url] = asyncio.ensure_future(self._fetch(url))
        try:
            document = await asyncio.shield(self._pending[url])
        finally:
            self._pending.pop(url, None)
        self._documents[url] = document
        return document
