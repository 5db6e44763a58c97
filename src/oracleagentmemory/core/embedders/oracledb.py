"""``OracleDBEmbedder``: the reference's embedder that runs a model inside Oracle Database.

This SDK stores memory in SQLite or PostgreSQL and never reaches an Oracle server, so the
class exists (code that imports it keeps working) but cannot be built: constructing one
raises :class:`NotImplementedError` naming what to use instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory._notset import NOT_SET_MARKER as NOT_SET_MARKER
from oracleagentmemory.apis.embedders.embedder import IEmbedder

INSTEAD = (
    "OracleDBEmbedder runs a model inside Oracle Database, which this SDK does not use; "
    "use oracleagentmemory.core.embedders.default_embedder() (the bundled offline model) or "
    "Embedder(model=..., api_base=...) (a model served over the OpenAI embeddings API)"
)


def _refuse() -> NoReturn:
    raise NotImplementedError(INSTEAD)


class OracleDBEmbedder(IEmbedder):
    """The reference's in-database embedder; unavailable here (see the module docstring)."""

    def __init__(
        self,
        connection: object,
        model: str,
        input_name: Any = NOT_SET_MARKER,
        embedding_dimension: Any = NOT_SET_MARKER,
        max_input_tokens: Any = NOT_SET_MARKER,
        normalize: Any = NOT_SET_MARKER,
        query_prefix: Any = NOT_SET_MARKER,
        batch_size: Any = NOT_SET_MARKER,
        provider: Any = NOT_SET_MARKER,
        provider_options: Mapping[str, Any] | None = None,
    ) -> None:
        """Raises NotImplementedError: no Oracle Database is reachable from this SDK."""
        _refuse()

    def embed(self, texts: list[str], is_query: bool = False) -> NDArray[np.float32]:
        _refuse()

    async def embed_async(self, texts: list[str], is_query: bool = False) -> NDArray[np.float32]:
        _refuse()

    @property
    def embedding_dimension(self) -> int:
        _refuse()

    @property
    def max_input_tokens(self) -> int:
        _refuse()

    def get_vectorizer_config_json(self) -> str:
        """The in-database vectorizer settings (unavailable here)."""
        _refuse()
