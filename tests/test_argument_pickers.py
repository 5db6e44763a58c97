"""The client's and thread's methods that hand their ``locals()`` on by name tuples pick every
parameter they declare: a parameter added to a signature but not to its tuple would be dropped
silently."""

from __future__ import annotations

import inspect

import pytest

from oracleagentmemory.core import OracleAgentMemory
from oracleagentmemory.core._client import _memory_ops
from oracleagentmemory.core._client.messages import _images
from oracleagentmemory.core._client.search import _search
from oracleagentmemory.core.thread import OracleThread

PICKED = {
    "search": (set(_search.SCOPE_ARGUMENTS) | set(_search.SEARCH_OPTIONS), {"query"}),
    "add_memory": (set(_memory_ops.MEMORY_ARGUMENTS), {"content", "store_kwargs"}),
    "add_image": (set(_images.ADD_ARGUMENTS), {"image", "store_kwargs"}),
    "update_image": (set(_images.UPDATE_ARGUMENTS), {"image_id", "kwargs"}),
}
"""Method -> (the names its tuples pick, the parameters it passes on explicitly)."""


@pytest.mark.parametrize("cls", [OracleAgentMemory, OracleThread])
@pytest.mark.parametrize("method", sorted(PICKED))
def test_every_parameter_is_picked_or_passed(cls: type, method: str) -> None:
    picked, explicit = PICKED[method]
    params = set(inspect.signature(getattr(cls, method)).parameters) - {"self"}
    assert picked <= params, f"{cls.__name__}.{method} picks names it does not declare"
    assert params - picked == explicit, f"{cls.__name__}.{method}: a parameter is not handed on"
