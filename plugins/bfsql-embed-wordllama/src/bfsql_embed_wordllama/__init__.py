"""bfsql-embed-wordllama: the ``wordllama-256`` embedder for bfsql, a static model (no neural network at run time).

``wordllama-256`` is WordLlama's ``l2_supercat`` model at 256 dimensions: one trained vector per
token of the Llama 2 tokenizer (32,000 tokens). A text's vector is the mean of its tokens'
vectors, L2-normalised. Before tokenising, identifiers are split and the text lowercased
(``OCCURRED_ON`` and ``occurredOn`` read as ``occurred on``), which measured better on the
paraphrase sets of ``bench/bench_search.py``. Embedding is a table look-up: tens of thousands of
names a second on one core, against ~100-250 for a transformer such as ``minilm-int8``.

Nothing is downloaded at run time: the weights (``l2_supercat_256.safetensors``, 16 MB, float16)
and the tokenizer (``l2_supercat_tokenizer_config.json``) come inside the PyPI package
``wordllama`` (MIT), pinned, and both are checked against their SHA-256 before first use, so the
vectors of this embedder's name never change silently (a store records the embedder's name).
``wordllama`` itself is never imported (its loader looks for the tokenizer in the wrong folder and
then tries to download it); its files are read with ``tokenizers`` and ``numpy``.

Importing this module is cheap (bfsql imports every plugin when a command starts): tokenizers
and the weights load on the first ``embed`` call, once per process.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import re
import struct
import threading
from pathlib import Path
from typing import Any

import bfsql

__all__ = ["DIMENSION", "MIN_SIMILARITY", "NAME", "WordLlamaEmbedder", "model_files", "prepare", "register_embedders"]

NAME = "wordllama-256"
DIMENSION = 256
MIN_SIMILARITY = 0.65
"""Least cosine of a vector hit, chosen with bench/bench_search.py on both graphs: it keeps 94% of the HPO
labeled targets found without a threshold and 88% of the GO ones, and drops the nearest name of 78% of random
pseudo-words on HPO + WordNet (155k names) and all of them on GO (docs/search.md)."""
MAX_TOKENS = 64
"""Tokens of a text that count (names are short; a long query costs what a name costs)."""

CHUNK = 512
"""Texts summed at a time: their token rows stay small enough for the CPU caches."""

FEW_TEXTS = 64
"""Calls of at most this many texts (a query) convert only their token rows to float32; bigger ones (the loader's
batches) the whole table, once."""

_PACKAGE = "wordllama"
_FILES = {
    # role: path inside the package, SHA-256
    "weights": ("weights/l2_supercat_256.safetensors",
                "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5"),
    "tokenizer": ("tokenizers/l2_supercat_tokenizer_config.json",
                  "93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68"),
}
_TENSOR = "embedding.weight"
_INSTALL = "pip install bfsql-embed-wordllama (or, from a clone, pip install ./plugins/bfsql-embed-wordllama)"

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[\W_]+")


def prepare(text: str) -> str:
    """The text as it is tokenised: camelCase and ``snake_case`` split, punctuation to spaces, lowercased."""
    return " ".join(_SEPARATORS.sub(" ", _CAMEL.sub(" ", text)).lower().split())


def _package_dir() -> Path:
    """The installed ``wordllama`` package's directory, found without importing it."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the {NAME} embedder needs the package {_PACKAGE!r}, which is not installed; {_INSTALL}")
    return Path(next(iter(spec.submodule_search_locations)))


def model_files() -> dict[str, Path]:
    """The weights and the tokenizer inside the ``wordllama`` package, checked against their SHA-256."""
    return {role: path for role, (path, _) in _checked_files().items()}


def _checked_files() -> dict[str, tuple[Path, bytes]]:
    """Each model file's path and bytes, checked against its SHA-256: the bytes checked are the bytes used, each
    file read once."""
    root = _package_dir()
    found = {}
    for role, (relative, digest) in _FILES.items():
        path = root / relative
        if not path.is_file():
            raise RuntimeError(f"the {role} file {relative} is missing from the package {_PACKAGE!r}; {_INSTALL}")
        raw = path.read_bytes()
        if hashlib.sha256(raw).hexdigest() != digest:
            raise RuntimeError(
                f"the {role} file {path} is not the one {NAME} was built with (SHA-256 differs); "
                f"reinstall the pinned version: {_INSTALL}"
            )
        found[role] = (path, raw)
    return found


def _read_table(path: Path, raw: bytes) -> Any:
    """The token table of a safetensors file's bytes (an 8-byte header length, a JSON header, the raw
    tensors), as the float16 matrix it holds (see :meth:`WordLlamaEmbedder.embed_array` for when it is made
    float32)."""
    import numpy as np

    (size,) = struct.unpack("<Q", raw[:8])
    entry = json.loads(raw[8 : 8 + size])[_TENSOR]
    if entry["dtype"] != "F16" or len(entry["shape"]) != 2 or entry["shape"][1] != DIMENSION:
        raise RuntimeError(f"{path}: expected a float16 table of {DIMENSION} columns, found {entry}")
    start, end = (8 + size + offset for offset in entry["data_offsets"])
    return np.frombuffer(raw, dtype="<f2", count=(end - start) // 2, offset=start).reshape(entry["shape"])


class WordLlamaEmbedder:
    """WordLlama ``l2_supercat`` (256 dimensions): mean of token vectors, offline, on the CPU."""

    name = NAME
    dimension = DIMENSION
    semantic = True
    min_similarity = MIN_SIMILARITY

    def __init__(self) -> None:
        self._table: Any = None
        self._table32: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._table is None:
                try:
                    from tokenizers import Tokenizer
                except ImportError as exc:
                    raise RuntimeError(f"the {NAME} embedder needs tokenizers ({exc}); {_INSTALL}") from None
                files = _checked_files()
                tokenizer = Tokenizer.from_str(files["tokenizer"][1].decode())
                tokenizer.no_padding()
                tokenizer.enable_truncation(max_length=MAX_TOKENS)
                self._tokenizer = tokenizer
                self._table = _read_table(*files["weights"])
            return self._table, self._tokenizer

    def _whole_table32(self, table: Any) -> Any:
        """The token table as float32, made once (about 60 ms): what a batch of many texts gathers from."""
        import numpy as np

        with self._lock:
            if self._table32 is None:
                self._table32 = table.astype(np.float32)
            return self._table32

    def embed_array(self, texts: list[str]) -> Any:
        """One normalised vector per text, as a float32 matrix (blocking). A text without a token
        (empty, or punctuation only) gets a zero vector.

        The rows are summed as float32 either way (the same vectors, bit for bit): a call of a few
        texts converts its own token rows, so that a process that embeds one query never pays for
        converting the whole table; a batch gathers from the whole table converted once.
        """
        import numpy as np

        table, tokenizer = self._load()
        if len(texts) > FEW_TEXTS:
            table = self._whole_table32(table)
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        if not texts:
            return out
        encodings = tokenizer.encode_batch([prepare(t) for t in texts], add_special_tokens=False)
        for first in range(0, len(encodings), CHUNK):
            chunk = encodings[first : first + CHUNK]
            lengths = np.fromiter((len(e.ids) for e in chunk), dtype=np.int64, count=len(chunk))
            ids = np.fromiter((i for e in chunk for i in e.ids), dtype=np.int64, count=int(lengths.sum()))
            if ids.size:
                filled = lengths > 0
                starts = (np.cumsum(lengths) - lengths)[filled]
                rows = table[np.clip(ids, 0, len(table) - 1)].astype(np.float32, copy=False)
                out[first : first + len(chunk)][filled] = np.add.reduceat(rows, starts, axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0.0, norms, 1.0)

    def embed_sync(self, texts: list[str]) -> list[list[float]]:
        """One normalised 256-dimensional vector per text (blocking)."""
        return self.embed_array(list(texts)).tolist()  # type: ignore[no-any-return]

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One normalised vector per text. Small calls (a query) run inline; big ones off the event loop."""
        if len(texts) <= FEW_TEXTS and self._table is not None:
            return self.embed_sync(texts)
        return await asyncio.to_thread(self.embed_sync, list(texts))


@bfsql.hookimpl
def register_embedders(register: Any) -> None:
    """Register ``wordllama-256``."""
    register(
        NAME,
        WordLlamaEmbedder,
        "WordLlama l2_supercat (256 dims): static token vectors, meaning at tens of thousands of names a second, "
        "offline, CPU.",
    )
