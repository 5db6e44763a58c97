"""One structured LLM call with one repair attempt, shared by extraction and summaries."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from oracleagentmemory.apis.llms.llm import ILlm
from oracleagentmemory.core._shared._exit_gate import check_not_exiting
from oracleagentmemory.core.extractors._parse import ParsedAnswer, UnusableAnswer, parse_json
from oracleagentmemory.core.extractors._prompts import repair_prompt

log = logging.getLogger("oracleagentmemory.extraction")

T = TypeVar("T", bound=ParsedAnswer)


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What one call gave: the usable part (None when nothing was) and whether the answer was
    cut off at the model's token limit (then asking for less is the remedy)."""

    parsed: T | None
    truncated: bool = False


def _generate(
    llm: ILlm, prompt: list[dict[str, str]], schema: dict[str, Any]
) -> tuple[str, Any, bool]:
    """The answer's text, its finish reason, and whether the adapter rejected it. An adapter
    that rejects an answer (an exception carrying ``text`` and ``finish_reason``, as
    ``core.llms.LlmOutputError`` does, after its own repair attempt) still gives that text:
    it is read here like any other answer, since its complete items may be usable."""
    check_not_exiting()  # no new model call from a worker once the process exits
    try:
        response = llm.generate(prompt, response_json_schema=schema)
    except Exception as exc:
        text = getattr(exc, "text", None)
        if not isinstance(text, str) or not hasattr(exc, "finish_reason"):
            raise
        return text, getattr(exc, "finish_reason", None), True
    text = getattr(response, "text", None)
    if not isinstance(text, str):
        raise UnusableAnswer(f"the LLM returned {type(response).__name__} without text")
    return text, getattr(response, "finish_reason", None), False


def ask_json(
    llm: ILlm,
    prompt: list[dict[str, str]],
    schema: dict[str, Any],
    read: Callable[[Any], T],
    what: str,
) -> Outcome[T]:
    """Ask ``llm`` for JSON matching ``schema`` and read it with ``read``.

    An answer that is not JSON even after repair gets one more call showing the model its
    answer and the problem; when that fails too, the call is given up with a warning. An
    answer cut off at the token limit is not asked again (it would be cut again): its
    complete items are kept and the outcome says it was truncated. Other exceptions of the
    LLM (network, quota) propagate.
    """
    answer, finish, rejected = _generate(llm, prompt, schema)
    truncated = finish == "length"
    try:
        data = parse_json(answer)
    except UnusableAnswer as exc:
        if truncated:
            log.warning("%s: the answer was cut off at the token limit and is unusable", what)
            return Outcome(None, truncated=True)
        if rejected:  # the adapter already asked again
            log.warning("%s: %s; nothing from this call is kept", what, exc)
            return Outcome(None)
        log.warning("%s: %s; asking once more", what, exc)
        answer, finish, _ = _generate(llm, repair_prompt(prompt, answer, str(exc)), schema)
        truncated = finish == "length"
        try:
            data = parse_json(answer)
        except UnusableAnswer as again:
            log.warning("%s: %s; nothing from this call is kept", what, again)
            return Outcome(None, truncated=truncated)
    if truncated:
        log.warning("%s: the answer was cut off at the token limit", what)
    parsed = read(data)
    for problem in parsed.problems:
        log.warning("%s: %s", what, problem)
    return Outcome(parsed, truncated=truncated)
