"""hermes-retrieval: a ``select_context`` engine for hermes-host (entry point ``retrieval``).

It searches the session's full stored history before each send and injects what the turn
needs as one turn-scoped reference block.  See the README for options and composition.
"""

from hermes_retrieval.engine import Retrieval, RetrievalOptions, RetrievalOptionsError

__all__ = ["Retrieval", "RetrievalOptions", "RetrievalOptionsError"]
