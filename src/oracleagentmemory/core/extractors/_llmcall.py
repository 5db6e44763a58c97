"""One structured LLM call with one repair attempt, shared by extraction and summaries."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from oracleagentmemory.apis.llms.llm import ILlm
from oracleagentmemory.core.extractors._parse import ParsedAnswer, UnusableAnswer, parse_json
from oracleagentmemory.core.extractors._prompts import repair_prompt

log = logging.getLogger("oracleagentmemory.extraction")

T = TypeVar("T", bound=ParsedAnswer)


def _text_of(response: Any) -> tuple[str, str | None]:
    text = getattr(response, "text", None)
    if not isinstance(text, str):
        raise UnusableAnswer(f"the LLM returned {type(response).__name__} without text")
    return text, getattr(response, "finish_reason", None)


def ask_json(
    llm: ILlm,
    prompt: list[dict[str, str]],
    schema: dict[str, Any],
    read: Callable[[Any], T],
    what: str,
) -> T | None:
    """Ask ``llm`` for JSON matching ``schema`` and read it with ``read``.

    An answer that is not JSON even after repair gets one more call showing the model its
    answer and the problem; when that fails too, the call is given up with a warning and
    None is returned. Exceptions of the LLM itself (network, quota) propagate.
    """
    answer, finish = _text_of(llm.generate(prompt, response_json_schema=schema))
    try:
        data = parse_json(answer)
    except UnusableAnswer as exc:
        if finish == "length":
            log.warning("%s: the answer was cut off at the token limit", what)
        log.warning("%s: %s; asking once more", what, exc)
        retry = repair_prompt(prompt, answer, str(exc))
        answer, finish = _text_of(llm.generate(retry, response_json_schema=schema))
        try:
            data = parse_json(answer)
        except UnusableAnswer as again:
            log.warning("%s: %s; nothing from this call is kept", what, again)
            return None
    parsed = read(data)
    for problem in parsed.problems:
        log.warning("%s: %s", what, problem)
    return parsed
