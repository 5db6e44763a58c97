"""Extraction that fails (an LLM server that refuses connections): one log line per failure
and no traceback, the failure readable in the stats, and an error from the wait when asked
(``raise_on_failure=True``), once per failure; the messages stay stored."""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

import pytest

from oracleagentmemory.core.extractors import MemoryExtractionError
from oracleagentmemory.core.llms import Llm


def _refusing_api_base() -> str:
    with socket.socket() as s:  # a port nobody listens on: connections are refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _client(make_client: Any) -> Any:
    llm = Llm("m", api_base=_refusing_api_base(), api_key="k")
    llm.retry_base_delay = 0.01  # type: ignore[attr-defined]
    return make_client(llm=llm)


def test_a_failed_extraction_is_one_line_a_stat_and_an_error_when_asked(
    make_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    client = _client(make_client)
    caplog.set_level(logging.DEBUG, logger="httpx")
    caplog.set_level(logging.WARNING, logger="oracleagentmemory")
    t1 = client.create_thread(user_id="u1")
    t2 = client.create_thread(user_id="u1")
    t1.add_messages([{"role": "user", "content": "I moved to Lisbon."}])
    t1.wait_for_memory_extraction()  # the reference's wait: returns normally
    failures = [r for r in caplog.records if r.name == "oracleagentmemory.extraction"]
    assert len(failures) == 1, [r.getMessage() for r in failures]
    assert failures[0].exc_info is None, "no traceback at WARNING"
    assert t1.thread_id in failures[0].getMessage()
    assert (
        "Connection refused" in failures[0].getMessage()
        or "ConnectError" in failures[0].getMessage()
    )
    stats = client.get_memory_extraction_stats()
    assert stats.failed == 1 and stats.last_failure is not None
    assert t1.thread_id in stats.last_failure
    # Another thread's wait has nothing to report; this thread's reports it once.
    t2.wait_for_memory_extraction(raise_on_failure=True)
    with pytest.raises(MemoryExtractionError) as caught:
        t1.wait_for_memory_extraction(raise_on_failure=True)
    assert caught.value.failures[0][0] == t1.thread_id
    assert "1 memory extraction job(s) failed" in str(caught.value)
    t1.wait_for_memory_extraction(raise_on_failure=True)  # reported already
    assert [m.content for m in client.list_messages(thread_id=t1.thread_id)] == [
        "I moved to Lisbon."
    ], "the messages stay stored"


def test_the_clients_wait_reports_every_threads_failures(make_client: Any) -> None:
    client = _client(make_client)
    threads = [client.create_thread(user_id="u1") for _ in range(2)]
    for t in threads:
        t.add_messages([{"role": "user", "content": "hello"}])
    with pytest.raises(MemoryExtractionError) as caught:
        asyncio.run(client.wait_for_memory_extraction_async(raise_on_failure=True))
    assert sorted(key for key, _ in caught.value.failures) == sorted(t.thread_id for t in threads)
    client.wait_for_memory_extraction(raise_on_failure=True)
    with pytest.raises(TypeError, match="raise_on_failure"):
        client.wait_for_memory_extraction(raise_on_failure="yes")
