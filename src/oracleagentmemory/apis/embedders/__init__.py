"""The embedder interface: ``IEmbedder`` (texts to vectors, with its model identity and input
limit), which the bundled models and adapters in ``core.embedders`` implement."""

from oracleagentmemory.apis.embedders.embedder import IEmbedder

__all__ = ["IEmbedder"]
