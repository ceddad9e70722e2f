"""The answer, from what a tool returns to the JSON the client receives: one room for its shape.

* :mod:`~bfsql.server.answers.kinds`: the table of answer kinds (what post-processing edits,
  how each kind is fitted, where its notes go);
* :mod:`~bfsql.server.answers.fitting`: holding each kind to its budget, a little detail at a
  time (the one home of answer sizes);
* :mod:`~bfsql.server.answers.document`: the one document every client reads whole, as
  structured content and as the same JSON text.

docs/protocol.md describes the shapes.
"""

from bfsql.server.answers.document import (
    ERROR_CHARS,
    document,
    document_of,
    error_result,
    notes_in,
    result_of,
    was_cut,
)
from bfsql.server.answers.fitting import AnswerBudget, compact_json
from bfsql.server.answers.kinds import postprocess

__all__ = [
    "ERROR_CHARS",
    "AnswerBudget",
    "compact_json",
    "document",
    "document_of",
    "error_result",
    "notes_in",
    "postprocess",
    "result_of",
    "was_cut",
]
