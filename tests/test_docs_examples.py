"""Every code block of README.md and docs/**/*.md runs as a test, or is data (issue 25).

Each page's runnable blocks run in document order in one fresh interpreter (the repository's
venv Python), in a temporary working directory: Python blocks share one namespace, shell
blocks run in bash with the venv's ``bin`` first on ``PATH``. What a page shows a block
printing (``# prints: ...``, or an ``Output`` block after it) is checked. The conventions are
in ``tests/_docs_blocks.py``.

What the examples reach, instead of the network:

- the OpenAI protocol (``Llm``, ``Embedder``, ``Reranker``): ``OPENAI_BASE_URL`` and the
  examples' own server addresses (``http://gpu:8000/v1``, ``http://localhost:11434/v1``,
  ``http://localhost:8080/v1``) point at the real local test server of
  ``tests/_openai_server.py``, answering with ``tests/_fake_model.py``;
- ``postgresql://me@host/db``: a fresh schema of the session's pgserver;
- port ``8080``: a free port, the same for the whole page.

The framework pages' examples (``docs/integrations/<framework>.md``) are run by their own test
modules against the real frameworks, with scripted models; the integrations index repeats
them, which ``tests/test_integrations_docs.py`` checks.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from ._docs_blocks import (
    DATA,
    DRIVER,
    OUTPUT_TITLE,
    PYTHON,
    SHELL,
    Block,
    console_commands,
    instance,
    matches,
    parse,
    prints_in_order,
    shell_script,
    split_steps,
    write_steps,
)
from ._fake_model import fake_model
from ._openai_server import FakeOpenAIServer
from ._servers import free_port

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("docs/**/*.md"))]
# Pages whose Python examples another test module runs (against the real framework).
COVERED = {
    "docs/integrations/langgraph.md": "tests/test_integrations_langgraph.py",
    "docs/integrations/langchain.md": "tests/test_integrations_langchain.py",
    "docs/integrations/openai-agents.md": "tests/test_integrations_openai_agents.py",
    "docs/operations/row-security.md": "tests/test_deepsec_postgres.py",  # needs roles
}
INDEX = "docs/integrations/README.md"  # repeats the first examples of the COVERED pages
MAX_SKIPS = 3
LLM_URLS = ("http://gpu:8000/v1", "http://localhost:11434/v1", "http://localhost:8080/v1")
PG_PLACEHOLDER = "postgresql://me@host/db"
PAGE_TIMEOUT = 300


def _blocks(page: str) -> list[Block]:
    return parse(page, (ROOT / page).read_text(encoding="utf-8"))


ALL = {page: _blocks(page) for page in PAGES}


def _covered(block: Block) -> bool:
    if block.lang not in PYTHON:
        return False
    if block.page in COVERED:
        return True
    if block.page == INDEX:
        return any(block.code == other.code for page in COVERED for other in ALL[page])
    return False


def _runnable(page: str) -> list[Block]:
    return [b for b in ALL[page] if b.runs and not _covered(b)]


RUN_PAGES = [page for page in PAGES if _runnable(page)]


# -- what the pages hold --------------------------------------------------------------------


def test_every_block_is_code_that_runs_or_data() -> None:
    unknown = [
        f"{b.where} ```{b.lang}"
        for blocks in ALL.values()
        for b in blocks
        if b.lang not in PYTHON | SHELL | DATA
    ]
    assert unknown == [], "label each block python, sh, or a data language (text, json, ...)"


def test_few_blocks_are_skipped_and_each_says_why() -> None:
    skipped = [(b.where, b.skip) for blocks in ALL.values() for b in blocks if b.skip]
    assert all(reason and len(reason) > 20 for _, reason in skipped), skipped
    assert len(skipped) <= MAX_SKIPS, skipped
    # Today: LocalLlm (llama.cpp compiles for 20-30 minutes; make test-llm covers it), the
    # read-replica client (a primary and a standby; tests/test_read_replica.py runs it) and
    # `oam purge` on a PostgreSQL URL (tests/test_forget.py runs it on a real server).
    pages = sorted(where.split(":")[0] for where, _ in skipped)
    assert pages == ["docs/guides/forgetting.md", "docs/guides/llms.md", "docs/scaling.md"], skipped


def test_data_blocks_are_files_or_outputs_or_shown() -> None:
    for blocks in ALL.values():
        for b in blocks:
            if b.lang in DATA and b.title not in (None, OUTPUT_TITLE):
                assert re.fullmatch(r"[\w.-]+", b.title), f"{b.where}: title a file name"


def test_the_covered_pages_are_run_by_their_tests() -> None:
    for page, test in COVERED.items():
        source = (ROOT / test).read_text(encoding="utf-8")
        assert Path(page).name in source and "exec(" in source, (page, test)
        assert any(b.lang in PYTHON for b in ALL[page]), page
    index = [b for b in ALL[INDEX] if b.lang in PYTHON]
    assert index and all(_covered(b) for b in index), "the index repeats the pages' examples"


def test_the_readme_is_short_and_starts_where_a_newcomer_does() -> None:
    readme = ROOT / "README.md"
    assert readme.stat().st_size < 15_000
    text = readme.read_text(encoding="utf-8")
    assert "## Install" in text and "pip install recallwell" in text
    shell = [b for b in ALL["README.md"] if b.lang in SHELL]
    set_up = [
        [line.split("#", 1)[0].strip() for line in b.code.splitlines() if line.strip()]
        for b in shell
    ]
    assert ["make demo", "make test"] in set_up
    # The quick start is the file the wheel smoke test runs from an installed wheel.
    quick = next(b for b in ALL["README.md"] if b.lang in PYTHON)
    assert quick.code == (ROOT / "examples" / "quickstart.py").read_text(encoding="utf-8")
    assert len(quick.code.splitlines()) <= 12


def test_the_reference_lists_every_name_core_exports() -> None:
    import oracleagentmemory.core as core

    page = (ROOT / "docs" / "reference" / "core.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| \[`(\w+)`\]", page, re.MULTILINE))
    assert listed == set(core.__all__)


def test_the_site_builds_these_pages() -> None:
    """Every page is in the site's navigation (mkdocs.yml), so none is left unlinked."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = set(re.findall(r"([\w/.-]+\.md)\s*$", config.split("\nnav:", 1)[1], re.MULTILINE))
    assert {p.removeprefix("docs/") for p in PAGES if p != "README.md"} == nav


# -- running them ---------------------------------------------------------------------------


class _AnyModel(tuple[str, ...]):
    """Every model name is served."""

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and bool(name)


def _model_reply(body: dict[str, Any]) -> str:
    """The fake model's answer to what the adapter sent; a value valid for any other schema."""
    fmt = body.get("response_format") or (body.get("text") or {}).get("format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema")
    messages = body.get("messages") or [
        {"role": i.get("role", "user"), "content": i.get("content", "")}
        for i in body.get("input", [])
        if isinstance(i, dict)
    ]
    text = " ".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
    call = type(
        "Call",
        (),
        {"schema": schema, "messages": [(m.get("role"), m.get("content")) for m in messages]},
    )
    answer = fake_model()(call)
    if isinstance(answer, str) and schema:
        answer = instance(schema, text)
    return answer if isinstance(answer, str) else json.dumps(answer)


class _Replies:
    """An endless queue: every request gets the fake model's answer."""

    def popleft(self) -> Any:
        return _model_reply

    def __bool__(self) -> bool:
        return True


@pytest.fixture(scope="module")
def model_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key=None, models=_AnyModel()) as server:
        server.replies = _Replies()  # type: ignore[assignment]
        yield server


def _makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([\w.-]+):", text, re.MULTILINE))


def _extras() -> set[str]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return set(tomllib.load(f)["project"]["optional-dependencies"])


def _installed() -> set[str]:
    return {(d.metadata["Name"] or "").lower() for d in metadata.distributions()}


def _substitute(code: str, subs: dict[str, str]) -> str:
    for old, new in subs.items():
        code = code.replace(old, new)
    return code


def _env(model_server: FakeOpenAIServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OAM_", "OPENAI_"))}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        OPENAI_BASE_URL=model_server.api_base,
        OPENAI_API_KEY="sk-docs-test",
        OPENAI_AGENTS_DISABLE_TRACING="1",
        PYTHONUNBUFFERED="1",
    )
    return env


def _stop_servers(cwd: Path) -> None:
    pids = cwd / ".docs-test-pids"
    if not pids.exists():
        return
    for pid in {int(p) for p in pids.read_text().split()}:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pid, sig)  # each server leads its own process group (setsid)
            except ProcessLookupError:
                break
            for _ in range(100):  # not our child: poll until it is gone
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
            else:
                continue
            break


@pytest.mark.slow  # every page's commands and programs, servers included: make test
@pytest.mark.parametrize("page", RUN_PAGES)
def test_the_page_examples_run(
    page: str, tmp_path: Path, model_server: FakeOpenAIServer, request: pytest.FixtureRequest
) -> None:
    blocks = ALL[page]
    text = "".join(b.code for b in blocks)
    subs = dict.fromkeys(LLM_URLS, model_server.api_base)
    if "8080" in text:
        subs["8080"] = str(free_port())
    if PG_PLACEHOLDER in text:
        subs[PG_PLACEHOLDER] = request.getfixturevalue("pg_url")("docs")
    for b in blocks:
        if b.lang in DATA and b.title not in (None, OUTPUT_TITLE):
            (tmp_path / b.title).write_text(b.code, encoding="utf-8")

    steps: list[dict[str, Any]] = []
    ran: list[tuple[Block, str | None]] = []  # each step's block and a console block's output
    problems: list[str] = []
    targets, extras, installed = _makefile_targets(), _extras(), _installed()
    for b in _runnable(page):
        shown = None
        if b.lang in PYTHON:
            steps.append({"kind": "python", "code": _substitute(b.code, subs), "where": b.where})
        else:
            code = b.code
            if b.lang == "console":
                code, shown = console_commands(code)
            pg = subs.get(PG_PLACEHOLDER)
            shell_subs = {**subs, PG_PLACEHOLDER: shlex.quote(pg)} if pg else subs
            script, found = shell_script(
                _substitute(code, shell_subs), targets, extras, installed, sys.executable
            )
            problems += [f"{b.where}: {p}" for p in found]
            steps.append({"kind": "shell", "code": script, "where": b.where})
        ran.append((b, shown))
    assert problems == []

    write_steps(tmp_path / ".docs-test-steps.json", steps)
    (tmp_path / ".docs-test-driver.py").write_text(DRIVER, encoding="utf-8")
    try:
        proc = subprocess.run(
            [sys.executable, ".docs-test-driver.py", ".docs-test-steps.json"],
            cwd=tmp_path,
            env=_env(model_server),
            capture_output=True,
            text=True,
            timeout=PAGE_TIMEOUT,
        )
    finally:
        _stop_servers(tmp_path)
    outputs = split_steps(proc.stdout, len(steps))
    assert proc.returncode == 0, (
        f"{page}: a block failed\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n"
        f"{proc.stderr[-6000:]}"
    )
    for (b, shown), out in zip(ran, outputs, strict=True):
        missing = prints_in_order(b.prints, out)
        assert missing == [], f"{b.where} does not print {missing}; it printed:\n{out}"
        expected = b.output.code if b.output else shown
        if expected:
            assert matches(expected, out), f"{b.where} printed:\n{out}\nnot:\n{expected}"
