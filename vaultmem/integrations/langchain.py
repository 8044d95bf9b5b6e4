"""A LangChain retriever over a vault: `VaultRetriever`, a `langchain_core.retrievers.BaseRetriever`.

    from vaultmem import Vault
    from vaultmem.integrations.langchain import VaultRetriever

    retriever = VaultRetriever(vault=Vault("~/notes/agent-memory"), k=5, recall={"tags": ["ops"]})
    docs = retriever.invoke("when can we deploy?")

Each query is one `Vault.recall` (its filters in `recall`: tags, namespace, type, source, lifecycle, status,
since, until, …; a caller's view, `vault.as_caller(...)`, reads only its namespaces). Each hit is a Document:
the note's body as page_content, and as metadata its id, title, path, tags, source, date (the note's
timestamp), score (the recall's final score), namespace and type.
"""

from __future__ import annotations

from typing import Any

from .. import Hit, MissingExtra, Vault

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError:
    raise MissingExtra("vaultmem.integrations.langchain", "langgraph") from None

__all__ = ["VaultRetriever", "document_of"]


def document_of(hit: Hit) -> Document:
    """A recalled memory as a LangChain Document."""
    return Document(page_content=hit.content, id=hit.id,
                    metadata={"id": hit.id, "title": hit.title, "path": hit.path, "tags": list(hit.tags),
                              "source": hit.source, "date": hit.timestamp, "score": hit.final,
                              "namespace": hit.namespace, "type": hit.type})


class VaultRetriever(BaseRetriever):
    """Documents for a query from a vault's recall: `k` of them, with the `recall` options given."""

    vault: Vault
    k: int = 4
    recall: dict[str, Any] = {}

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [document_of(hit) for hit in self.vault.recall(query, **{"limit": self.k, **self.recall})]
