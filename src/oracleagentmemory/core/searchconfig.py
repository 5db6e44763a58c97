"""Search configuration: token budgets, reranking and LLM pruning of search results.

Fields default to ``NOT_SET_MARKER`` and resolve like the other layered configs
(operation > thread > client > SDK default, field by field)::

    operation.merged_over(thread_config).merged_over(client_config).resolve()

Merging across kinds keeps the most specific kind: a plain ``MemorySearchConfig`` merged over
a ``TopKMemorySearchConfig`` yields a top-k config with the plain one's budgets on top.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Final

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis._duck import check_llm, check_reranker
from oracleagentmemory.apis.llms.llm import ILlm
from oracleagentmemory.apis.records import Record as Record
from oracleagentmemory.apis.reranker import IReranker
from oracleagentmemory.apis.searchconfig import ISearchConfig
from oracleagentmemory.core._shared._config import (
    LayeredConfig,
    check_enum,
    check_float,
    check_int,
)


class PruningEvaluationMode(str, Enum):
    """How thoroughly the pruner LLM evaluates candidate cut-off points."""

    FAST = "fast"
    EXTENDED = "extended"
    EXHAUSTIVE = "exhaustive"


@dataclass(frozen=True)
class ResolvedMemorySearchConfig:
    """A search configuration with every field resolved to a concrete value.

    ``None`` budgets mean "no budget"; ``max_results`` is None for a plain
    ``MemorySearchConfig`` (the search call decides); ``pruner`` is set only for pruning.
    """

    token_budget: int | None
    soft_token_budget: int | None
    reranker: IReranker | None
    reranker_max_candidates: int
    max_results: int | None
    evaluation_mode: PruningEvaluationMode
    num_probe_points: int
    protected_fraction: float
    pruner: ILlm | None


SEARCH_CONFIG_DEFAULTS: Final[Mapping[str, Any]] = {
    "token_budget": None,
    "soft_token_budget": None,
    "reranker": None,
    "reranker_max_candidates": 50,
    "max_results": 10,
    "evaluation_mode": PruningEvaluationMode.FAST,
    "num_probe_points": 5,
    "protected_fraction": 0.2,
}
"""SDK defaults: the last layer of resolution."""


def _check_budget(name: str, value: Any) -> int | None:
    if value is None:
        return None
    return check_int(name, value, minimum=1)


@dataclass(frozen=True, repr=False)
class MemorySearchConfig(LayeredConfig, ISearchConfig):
    """Token budgets of search results.

    ``token_budget`` is a hard cap on the estimated tokens of the returned results;
    ``soft_token_budget`` a target that may be crossed to keep a result whole. None means
    no budget.
    """

    KIND: ClassVar[str] = "memory"

    token_budget: int | NotSet | None = NOT_SET_MARKER
    soft_token_budget: int | NotSet | None = NOT_SET_MARKER

    def _check_field(self, name: str, value: Any) -> Any:
        if name in ("token_budget", "soft_token_budget"):
            return _check_budget(name, value)
        if name == "reranker":
            return None if value is None else check_reranker(value, "reranker")
        if name == "pruner":
            return check_llm(value, "pruner")
        if name == "evaluation_mode":
            return check_enum(name, value, PruningEvaluationMode)
        if name == "protected_fraction":
            return check_float(name, value, minimum=0.0, maximum=1.0)
        return check_int(name, value, minimum=1)

    def _check_fields(self) -> None:
        hard, soft = self.token_budget, self.soft_token_budget
        if isinstance(hard, int) and isinstance(soft, int) and soft > hard:
            raise ValueError(f"soft_token_budget must not exceed token_budget ({soft} > {hard})")

    @staticmethod
    def kind_class(kind: str) -> type[MemorySearchConfig]:
        """The config class stored under ``kind`` (``to_json``'s tag); ValueError if none."""
        for target in (MemorySearchConfig, TopKMemorySearchConfig, PruningMemorySearchConfig):
            if kind == target.KIND:
                return target
        raise ValueError(f"unknown search config kind {kind!r}")

    def merged_over(self, broader: ISearchConfig | NotSet | None) -> MemorySearchConfig:
        """This config's set fields over ``broader``'s, keeping the more specific kind."""
        if broader is NOT_SET_MARKER or broader is None:
            return self
        if not isinstance(broader, MemorySearchConfig):
            raise TypeError(f"cannot merge {type(self).__name__} over {type(broader).__name__}")
        target = type(broader) if issubclass(type(broader), type(self)) else type(self)
        names = target.field_names()
        values = {name: getattr(broader, name, NOT_SET_MARKER) for name in names}
        values.update({k: v for k, v in self.set_fields().items() if k in names})
        values = {name: value for name, value in values.items() if value is not NOT_SET_MARKER}
        return target(**values)

    def resolve(self) -> ResolvedMemorySearchConfig:
        """Fill every unset field from the SDK defaults."""
        values = {**SEARCH_CONFIG_DEFAULTS, "pruner": None, **self.set_fields()}
        if "max_results" not in self.field_names():
            values["max_results"] = None
        return ResolvedMemorySearchConfig(**values)

    def to_json(self) -> dict[str, Any]:
        """The set fields as a JSON-ready dict, with a ``kind`` tag.

        Reranker and pruner objects cannot be stored: an explicit ``reranker=None`` is kept,
        a reranker object and the pruner are left out and must be supplied to
        :meth:`from_json`.
        """
        data = super().to_json()
        if data.get("reranker") is not None:
            del data["reranker"]
        data.pop("pruner", None)
        return {"kind": self.KIND, **data}

    @classmethod
    def from_json(
        cls,
        data: Mapping[str, Any],
        *,
        reranker: IReranker | NotSet | None = NOT_SET_MARKER,
        pruner: ILlm | NotSet = NOT_SET_MARKER,
    ) -> MemorySearchConfig:
        """Rebuild a config stored by :meth:`to_json`, re-attaching reranker and pruner."""
        if not isinstance(data, Mapping):
            raise TypeError("MemorySearchConfig.from_json expects a mapping")
        target = cls.kind_class(data.get("kind", cls.KIND))
        names = set(target.field_names())
        values = {key: value for key, value in data.items() if key in names}
        if reranker is not NOT_SET_MARKER and "reranker" in names:
            values["reranker"] = reranker
        if "pruner" in names:
            if pruner is NOT_SET_MARKER:
                raise ValueError("a stored pruning search config needs pruner= to be rebuilt")
            values["pruner"] = pruner
        return target(**values)


@dataclass(frozen=True, repr=False)
class _RerankingMemorySearchConfig(MemorySearchConfig):
    """Budgets plus an optional reranker applied to the top ``reranker_max_candidates``."""

    reranker: IReranker | NotSet | None = NOT_SET_MARKER
    reranker_max_candidates: int | NotSet = NOT_SET_MARKER


@dataclass(frozen=True, repr=False)
class TopKMemorySearchConfig(_RerankingMemorySearchConfig):
    """Keep the ``max_results`` best results (after reranking, within the budgets)."""

    KIND: ClassVar[str] = "top_k"

    max_results: int | NotSet = NOT_SET_MARKER


@dataclass(frozen=True, repr=False)
class PruningMemorySearchConfig(_RerankingMemorySearchConfig):
    """Let the ``pruner`` LLM cut the ranked results where relevance drops.

    ``num_probe_points`` candidate cut-offs are evaluated (more of them in EXTENDED and
    EXHAUSTIVE modes); the top ``protected_fraction`` of results is never pruned.
    """

    KIND: ClassVar[str] = "pruning"

    evaluation_mode: PruningEvaluationMode | NotSet = NOT_SET_MARKER
    num_probe_points: int | NotSet = NOT_SET_MARKER
    protected_fraction: float | NotSet = NOT_SET_MARKER
    pruner: ILlm = field(kw_only=True)
