"""Embedders: text to vectors, for vector search and fuzzy path matching.

An embedder is anything with a ``name``, a ``dimension`` and an async
``embed(texts) -> list[list[float]]`` returning one L2-normalised vector per text.
Embedders are registered through the ``register_embedders`` hook, like backends;
the built-in ``hashing`` embedder (this module) needs no model and no download:
it hashes character 3-grams and words into 512 dimensions.

Vectors from two embedders are not comparable. A store that keeps entity vectors
records the embedder's name and dimension, and a server refuses to compare them with
vectors from another embedder (see docs/search.md, "Switching models safely").
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import operator
import re
import signal
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

from bfsql.errors import InvalidArgument
from bfsql.hookspecs import hookimpl

__all__ = [
    "AUTO",
    "DEFAULT_EMBEDDER",
    "DEFAULT_MIN_SIMILARITY",
    "PREFERRED_EMBEDDERS",
    "CachedEmbedder",
    "Embedder",
    "EmbedderMismatch",
    "HashingEmbedder",
    "cosine",
    "dot",
    "is_semantic",
    "min_similarity",
    "normalise",
    "split_identifier",
    "sync_embedding",
]

DEFAULT_EMBEDDER = "hashing"
"""The fallback embedder: always installed, no model (spelling, not meaning)."""
AUTO = "auto"
"""Embedder choice meaning: the store's own, else the preferred semantic one, else ``hashing``."""
PREFERRED_EMBEDDERS: tuple[str, ...] = ("wordllama-256", "minilm-int8")
"""Semantic embedders used by default when installed, best first: ``wordllama-256`` (``bfsql-embed-wordllama``,
static vectors, tens of thousands of names a second), then ``minilm-int8`` (``bfsql-embed-minilm``, a transformer,
~100-250 names a second on two cores); bench/bench_search.py measures both (docs/search.md)."""
DEFAULT_MIN_SIMILARITY = 0.5
"""Least cosine a vector hit needs, for an embedder that does not state its own ``min_similarity``."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. Implementations must be deterministic for a given name."""

    @property
    def name(self) -> str:
        """A stable name, recorded next to stored vectors (e.g. ``hashing``, ``minilm``)."""
        ...

    @property
    def dimension(self) -> int:
        """The length of every vector."""
        ...

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One L2-normalised vector per text, in order. An empty text may give a zero vector.

        An embedder may also offer ``embed_array(texts)``, blocking, giving the same vectors as a float32
        matrix: the loaders use it, sparing a big load a Python float per component (see :func:`sync_embedding`).
        """
        ...


def min_similarity(embedder: Embedder) -> float:
    """The least cosine for a vector hit to count as a match: the embedder's ``min_similarity``
    attribute (measured per model, see docs/search.md), else :data:`DEFAULT_MIN_SIMILARITY`."""
    value = getattr(embedder, "min_similarity", None)
    if value is None and isinstance(embedder, CachedEmbedder):
        value = getattr(embedder.inner, "min_similarity", None)
    return float(value) if isinstance(value, int | float) else DEFAULT_MIN_SIMILARITY


def is_semantic(embedder: Embedder) -> bool:
    """Whether the embedder captures meaning (its ``semantic`` attribute; ``hashing`` does not)."""
    inner = embedder.inner if isinstance(embedder, CachedEmbedder) else embedder
    return bool(getattr(inner, "semantic", False))


class EmbedderMismatch(InvalidArgument):
    """Stored vectors were made by another embedder than the one the server uses."""

    code = "embedder_mismatch"


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0.0 when either is zero)."""
    dot = math.fsum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(math.fsum(x * x for x in a))
    nb = math.sqrt(math.fsum(y * y for y in b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return dot / (na * nb)


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    """The dot product (the cosine of two normalised vectors)."""
    return float(sum(map(operator.mul, a, b)))


def normalise(vector: list[float]) -> list[float]:
    """The vector scaled to length 1 (a zero vector stays zero)."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


def split_identifier(text: str) -> str:
    """``BORN_ON`` -> ``born on``, ``dateOfBirth`` -> ``date of birth``, ``has-part`` -> ``has part``.

    Splits on underscores, punctuation and camelCase boundaries, lowercases, and keeps
    the local part of a CURIE or IRI (``rdfs:subClassOf`` -> ``sub class of``).
    """
    local = re.split(r"[#/:]", text.rstrip("/#"))[-1] or text
    spaced = _CAMEL.sub(" ", local)
    return " ".join(_NON_WORD.sub(" ", spaced).lower().split())


def _words(text: str) -> list[str]:
    return _NON_WORD.sub(" ", _CAMEL.sub(" ", text)).lower().split()


class HashingEmbedder:
    """Deterministic feature hashing: word unigrams and character 3-grams, L2-normalised.

    Each word (split on punctuation, underscores and camelCase, lowercased) contributes
    itself and the 3-grams of ``#word#``; each feature adds its weight to one of
    ``dimension`` buckets chosen by a BLAKE2b hash. Similar spellings share 3-grams,
    so ``born`` is close to ``BORN_ON`` and ``RAF`` to ``RAF1``; meaning is not
    captured (``member`` is not close to ``isa``): install a model embedder for that.
    """

    WORD_WEIGHT = 1.0
    NGRAM_WEIGHT = 1.0
    semantic = False
    """Spelling only: vectors from it are not stored by default and make no semantic default."""
    min_similarity = 0.6
    """Least cosine of a vector hit (measured on HPO + WordNet with bench/bench_search.py: see docs/search.md)."""

    def __init__(self, dimension: int = 512) -> None:
        if dimension < 16:
            raise ValueError("dimension must be at least 16")
        self._dimension = dimension

    @property
    def name(self) -> str:
        """``hashing`` (with its dimension when not the default 512)."""
        return DEFAULT_EMBEDDER if self._dimension == 512 else f"{DEFAULT_EMBEDDER}-{self._dimension}"

    @property
    def dimension(self) -> int:
        """Number of hash buckets."""
        return self._dimension

    def _bucket(self, feature: str) -> int:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        return int.from_bytes(digest, "little") % self._dimension

    def embed_one(self, text: str) -> list[float]:
        """The vector of one text (synchronously)."""
        vector = [0.0] * self._dimension
        for word in _words(text):
            vector[self._bucket("w:" + word)] += self.WORD_WEIGHT
            padded = f"#{word}#"
            for i in range(len(padded) - 2):
                vector[self._bucket("c:" + padded[i : i + 3])] += self.NGRAM_WEIGHT
        return normalise(vector)

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text."""
        return [self.embed_one(t) for t in texts]


class CachedEmbedder:
    """An embedder with an LRU of recent texts: a text is embedded once while it stays cached.

    Missing texts of one call are embedded with a single call of the inner embedder.
    Vectors are L2-normalised on the way in, so :func:`dot` of two is their cosine.
    """

    def __init__(self, inner: Embedder, maxsize: int = 4096) -> None:
        self.inner = inner
        self.maxsize = maxsize
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    @property
    def name(self) -> str:
        """The inner embedder's name."""
        return self.inner.name

    @property
    def dimension(self) -> int:
        """The inner embedder's dimension."""
        return self.inner.dimension

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, from the cache when possible."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            vectors = await self.inner.embed(missing)
            if len(vectors) != len(missing):
                raise RuntimeError(
                    f"embedder {self.inner.name!r} returned {len(vectors)} vectors for {len(missing)} texts"
                )
            for text, vector in zip(missing, vectors, strict=True):
                self._cache[text] = normalise([float(x) for x in vector])
        out = []
        for text in texts:
            vector = self._cache[text]
            self._cache.move_to_end(text)
            out.append(vector)
        while len(self._cache) > self.maxsize:
            self._cache.popitem(last=False)
        return out


_HELD_SIGNALS = frozenset(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


@contextlib.contextmanager
def sync_embedding(embedder: Embedder) -> Iterator[Callable[[list[str]], Any]]:
    """A function embedding texts from synchronous code (the loader) into a float32 matrix, one row per text.

    An embedder with ``embed_array`` is called as it is: its matrix never becomes lists of Python floats,
    which took a fifth of embedding a million names. Otherwise one event loop serves every call: inside a
    running loop each call runs in a worker thread with a loop of its own. The loop is built with Ctrl-C,
    SIGTERM and SIGHUP held back, so a stop signal is raised once the loop exists and never leaves a
    half-built one behind.
    """
    as_array = getattr(embedder, "embed_array", None)
    if callable(as_array):
        yield lambda texts: _matrix(embedder, as_array(texts), len(texts))
        return
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        yield lambda texts: _matrix(embedder, _embed_in_thread(embedder, texts), len(texts))
        return
    holds = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    if holds:
        signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)
    try:
        runner = asyncio.Runner()
        runner.get_loop()
    finally:
        if holds:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD_SIGNALS)
    with runner:
        yield lambda texts: _matrix(embedder, runner.run(embedder.embed(texts)), len(texts))


def _matrix(embedder: Embedder, vectors: Any, count: int) -> Any:
    """``vectors`` as a float32 matrix of ``count`` rows of the embedder's dimension; a ValueError if they are not."""
    import numpy as np

    if count == 0:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except ValueError:  # rows of several lengths
        matrix = None
    if matrix is None or matrix.shape != (count, embedder.dimension):
        raise ValueError(f"embedder {embedder.name!r} returned vectors of the wrong number or dimension")
    return matrix


def _embed_in_thread(embedder: Embedder, texts: list[str]) -> list[list[float]]:
    result: list[list[list[float]]] = []
    error: list[BaseException] = []

    def worker() -> None:
        try:
            result.append(asyncio.run(embedder.embed(texts)))
        except BaseException as exc:
            error.append(exc)

    thread = threading.Thread(target=worker, name="bfsql-embed")
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return result[0]


@hookimpl
def register_embedders(register: Callable[..., Any]) -> None:
    """Register the built-in ``hashing`` embedder."""
    register(
        DEFAULT_EMBEDDER,
        HashingEmbedder,
        "Character 3-gram and word hashing into 512 dimensions: no model, no download; spelling, not meaning.",
    )
