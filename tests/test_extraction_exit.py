"""A program that ends while background extraction runs exits cleanly (status 0, no abort),
within a bound, and the work it left is done by the next process that opens the store.

The programs are real subprocesses with the default (ONNX Runtime) embedder and the HTTP
``Llm`` talking to a real local server: a worker still inside ONNX Runtime at interpreter
exit used to abort the process ("terminate called without an active exception").
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from oracleagentmemory.core import OracleAgentMemory
from oracleagentmemory.core.llms import Llm

from ._embedders import HashingEmbedder
from ._openai_server import FakeOpenAIServer
from .test_extraction_http import _model_reply

pytestmark = pytest.mark.slow  # servers or programs in subprocesses: make test, not test-quick

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-test"
MODEL = "memory-model"

PROGRAM = """
import sys
from oracleagentmemory.core import OracleAgentMemory
from oracleagentmemory.core.llms import Llm

db, api_base, ending = sys.argv[1], sys.argv[2], sys.argv[3]
memory = OracleAgentMemory(connection=db, llm=Llm({model!r}, api_base=api_base, api_key={key!r}))
for t in range(4):
    thread = memory.create_thread(user_id="u1")
    for i in range(3):
        text = f"I keep {{i}} hives in Porto ({{t}})."
        thread.add_messages([{{"role": "user", "content": text}}])
if ending == "close":
    memory.close(timeout=0.05)  # returns while the workers still run
print("RETURNING", flush=True)
"""


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key=KEY, models=(MODEL,)) as srv:
        srv.latency = 0.05  # the workers are mid-job (often inside the embedder) at exit
        yield srv


def test_a_program_ending_during_background_extraction_exits_0_twenty_times(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    server.replies.extend([_model_reply] * 4000)
    script = tmp_path / "program.py"
    script.write_text(PROGRAM.format(model=MODEL, key=KEY))

    def run(i: int) -> subprocess.CompletedProcess[str]:
        ending = "close" if i % 2 else "return"
        return subprocess.run(
            [sys.executable, str(script), str(tmp_path / f"m{i}.db"), server.api_base, ending],
            capture_output=True,
            text=True,
            timeout=120,
        )

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(run, range(20)))
    for i, done in enumerate(results):
        assert "RETURNING" in done.stdout, (i, done.stderr[-2000:])
        assert "Fatal Python error" not in done.stderr, (i, done.stderr[-2000:])
        assert "terminate called" not in done.stderr, (i, done.stderr[-2000:])
        assert done.returncode == 0, (i, done.returncode, done.stderr[-2000:])


LEAVER = """
import sys
sys.path.insert(0, {root!r})
from oracleagentmemory.core import MemoryExtractionConfig, OracleAgentMemory
from oracleagentmemory.core.llms import Llm
from tests._embedders import HashingEmbedder

memory = OracleAgentMemory(
    connection=sys.argv[1],
    embedder=HashingEmbedder(),
    llm=Llm({model!r}, api_base=sys.argv[2], api_key={key!r}),
    memory_extraction_config=MemoryExtractionConfig(enable_context_summary=False),
)
for t in range(2):
    thread = memory.create_thread(thread_id=f"t{{t}}", user_id="u1")
    for i in range(2):
        thread.add_messages([{{"role": "user", "content": f"thread {{t}} fact {{i}}"}}])
print("QUEUED", flush=True)
"""


def test_work_left_at_exit_is_bounded_and_done_by_the_next_process(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    released = threading.Event()  # the model answers nothing until the program is gone

    def held_reply(body: dict[str, Any]) -> str:
        released.wait(60)
        return _model_reply(body)

    server.latency = 0.0
    server.replies.extend([held_reply] * 100)
    db = str(tmp_path / "left.db")
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            LEAVER.format(root=str(ROOT), model=MODEL, key=KEY),
            db,
            server.api_base,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OAM_EXIT_WAIT_SECONDS": "0.3"},
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "QUEUED"
        returned = time.monotonic()
        _, stderr = child.communicate(timeout=50)
        exit_s = time.monotonic() - returned
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        released.set()
    assert child.returncode == 0, stderr[-2000:]
    assert "Fatal Python error" not in stderr
    assert exit_s < 15, exit_s  # bounded: the held model call would take 60 s

    embedder = HashingEmbedder()
    reader = OracleAgentMemory(connection=db, embedder=embedder)  # no LLM: resumes nothing
    assert len(reader.store.list_pending_work()) == 4
    assert reader.list_memories(user_id="u1") == []
    reader.close()

    client = OracleAgentMemory(
        connection=db, embedder=embedder, llm=Llm(MODEL, api_base=server.api_base, api_key=KEY)
    )
    try:
        client.wait_for_memory_extraction(timeout=60)
        stats = client.get_memory_extraction_stats()
        assert (stats.resumed, stats.completed, stats.failed) == (4, 4, 0)
        contents = sorted(m.content for m in client.list_memories(user_id="u1"))
        assert contents == [f"thread {t} fact {i}" for t in range(2) for i in range(2)]
        assert client.store.list_pending_work() == []
    finally:
        client.close()
