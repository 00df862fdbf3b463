"""tierlog's gate for LangChain 1.x agents (the ``[langchain]`` extra).

``TierlogSummarizationMiddleware`` is a drop-in for
``langchain.agents.middleware.SummarizationMiddleware``: the same arguments plus a
journal and a session id. It journals every message the agent sees, tells the
summarizer what the history it deletes still owes, and refuses a summary that drops
it (``docs/langchain.md``).
"""

from eventstore.langchain._middleware import ON_UNSAFE, OnUnsafe, TierlogSummarizationMiddleware
from eventstore.langchain._obligations import Owed, owed, retell_block

__all__ = [
    "ON_UNSAFE",
    "OnUnsafe",
    "Owed",
    "TierlogSummarizationMiddleware",
    "owed",
    "retell_block",
]
