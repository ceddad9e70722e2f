"""Entity names embedded in a worker thread while a load writes its relationships and builds its indexes.

The names of a load are final once its sources are read, but they were embedded only after everything
else: at R-MAT 20 (1M entities, 8.2M relationships, ``wordllama-256``) the relationships and indexes kept
one of two cores busy for about 35 s, then the embedder ran alone for 12 s more. The names are now embedded
from the end of the read on, beside that work. The vectors go, as the store's int8 rows
(:func:`int8_rows`), to an unnamed temporary file beside the store rather than into memory (260 bytes an
entity at 256 dimensions: 2.2 GB at R-MAT 23); the loader inserts them once the rest is written.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bfsql.embedders import Embedder, sync_embedding
from bfsql.loading.progress import LoadProgress

__all__ = ["EmbeddingAhead", "int8_rows"]

WAIT_STEP = 0.25
"""Seconds between two progress updates while the loader waits for the worker."""


def int8_rows(vectors: Any) -> Any:
    """Vectors (rows of a matrix) normalised, as the store keeps them: one row of bytes each, its scale
    ``max|x| / 127`` as little-endian float32, then one signed byte per component (a uint8 matrix of
    ``dimension + 4`` columns)."""
    import numpy as np

    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2:
        return np.zeros((0, 4), dtype=np.uint8)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = (matrix / np.where(norms > 0.0, norms, 1.0)).astype(np.float32)
    tops = np.abs(matrix).max(axis=1, keepdims=True) if matrix.shape[1] else np.zeros((len(matrix), 1))
    scales = np.where(tops > 0.0, tops / 127.0, 1.0).astype("<f4")
    quantised = np.clip(np.rint(matrix / scales), -127, 127).astype(np.int8)
    return np.concatenate([scales.view(np.uint8), quantised.view(np.uint8)], axis=1)


class EmbeddingAhead:
    """``texts`` embedded by ``embedder`` in a worker thread, ``batch`` at a time, from the moment it is made.

    :meth:`wait` waits for the last batch (and raises the embedder's error, if any); :meth:`rows` then gives
    the stored rows in the order of ``texts``. :meth:`close` stops the worker and drops the file (a load that
    failed or was stopped).
    """

    def __init__(self, texts: list[str], embedder: Embedder, batch: int, folder: Path | None) -> None:
        self.count = len(texts)
        self.width = embedder.dimension + 4
        """Bytes of one stored row."""
        self._texts: list[str] | None = texts
        self.embedder = embedder
        """What embeds the texts (its name and dimension are stored with the vectors)."""
        self._batch = batch
        self._file = tempfile.TemporaryFile(dir=folder, prefix=".bfsql-vectors-")
        self._stop = threading.Event()
        self._changed = threading.Condition()
        self._done = 0
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._embed, name="bfsql-load-embed", daemon=True)
        self._thread.start()

    def _embed(self) -> None:
        texts = self._texts
        assert texts is not None
        try:
            with sync_embedding(self.embedder) as embed:
                for start in range(0, len(texts), self._batch):
                    if self._stop.is_set():
                        return
                    piece = texts[start : start + self._batch]
                    self._file.write(int8_rows(embed(piece)).tobytes())
                    with self._changed:
                        self._done += len(piece)
                        self._changed.notify_all()
        except BaseException as exc:  # given to the loader by wait(), in its own thread
            self._error = exc
        finally:
            self._texts = None
            with self._changed:
                self._changed.notify_all()

    def wait(self, progress: LoadProgress) -> None:
        """Wait for the worker, advancing ``progress`` (the embed phase, counted in entities) as it goes."""
        shown = 0
        while self._thread.is_alive():
            with self._changed:
                self._changed.wait(WAIT_STEP)
                done = self._done
            progress.advance(done - shown)
            shown = done
        self._thread.join()
        if self._error is not None:
            raise self._error
        progress.advance(self._done - shown)

    def rows(self) -> Iterator[list[bytes]]:
        """The stored rows, ``batch`` at a time, in the order of the texts (after :meth:`wait`)."""
        self._file.seek(0)
        width = self.width
        for start in range(0, self.count, self._batch):
            size = min(self._batch, self.count - start)
            data = self._file.read(size * width)
            yield [data[i : i + width] for i in range(0, size * width, width)]

    def close(self) -> None:
        """Stop the worker (after its current batch) and drop the file."""
        self._stop.set()
        self._thread.join()
        self._file.close()
