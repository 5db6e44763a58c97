"""Embedder interface."""

from oracleagentmemory.apis.embedders.embedder import IEmbedder

__all__ = ["IEmbedder"]
