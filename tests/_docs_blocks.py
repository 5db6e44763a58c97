"""The fenced code blocks of the documentation, and how ``test_docs_examples`` runs them.

A block is classified by its language: Python and shell blocks run; data blocks (``text``,
``json``, ...) do not. A data block titled ``Output`` (```` ```text title="Output" ````) is what
the runnable block just before it prints; any other title names a file the page's commands
read, written into the working directory first. ``# prints: X`` after a line of a runnable
block says the block prints the line ``X``. ``...`` in expected output matches anything (a
line that is only ``...``: any number of lines). ``<!-- docs-test: skip because REASON -->``
on the line before a block keeps it from running.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PYTHON = {"python", "py"}
SHELL = {"sh", "bash", "shell", "console"}
DATA = {"text", "json", "jsonl", "toml", "yaml", "ini", "http", "sql", "html", "ts", "typescript"}
OUTPUT_TITLE = "Output"

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_TITLE = re.compile(r'title="([^"]*)"')
_SKIP = re.compile(r"^\s*<!--\s*docs-test:\s*skip because (?P<reason>.+?)\s*-->\s*$")
_MARKER = re.compile(r"<!--\s*docs-test")
_PRINTS = re.compile(r"#\s*prints:\s?(?P<text>.*)$")


@dataclass
class Block:
    page: str
    line: int  # the fence's line, 1-based
    lang: str
    title: str | None
    code: str
    skip: str | None = None
    output: Block | None = None  # the Output block that follows it
    prints: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.lang in PYTHON | SHELL and self.skip is None


def parse(page: str, text: str) -> list[Block]:
    """The page's fenced blocks, in order, with their markers and outputs attached."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            if _MARKER.search(lines[i]) and not _SKIP.match(lines[i]):
                raise ValueError(f"{page}:{i + 1}: unknown docs-test marker {lines[i]!r}")
            i += 1
            continue
        indent, fence, info = opening["indent"], opening["fence"], opening["info"].strip()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and lines[j].strip() != fence:
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j])
            j += 1
        if j == len(lines):
            raise ValueError(f"{page}:{i + 1}: unclosed code fence")
        title = _TITLE.search(info)
        block = Block(
            page,
            i + 1,
            info.split()[0].lower() if info.split() else "",
            title[1] if title else None,
            "\n".join(body) + "\n",
        )
        before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        skip = _SKIP.match(before)
        block.skip = skip["reason"] if skip else None
        block.prints = [m["text"].rstrip() for m in map(_PRINTS.search, body) if m]
        if block.title == OUTPUT_TITLE:
            previous = blocks[-1] if blocks else None
            if previous is None or not previous.runs or previous.output is not None:
                raise ValueError(f"{block.where}: an Output block must follow a block that runs")
            previous.output = block
        blocks.append(block)
        i = j + 1
    return blocks


# -- expected output --------------------------------------------------------------------------


def _normal(line: str) -> str:
    return " ".join(line.split())


def _line_pattern(expected: str) -> str:
    return ".*".join(re.escape(part) for part in _normal(expected).split("..."))


def matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` (every line) is what ``expected`` shows, ``...`` matching anything."""
    parts = []
    for line in expected.splitlines():
        if not line.strip():
            continue
        parts.append(r"(?:[^\n]*\n)*?" if line.strip() == "..." else _line_pattern(line) + r"\n")
    got = "".join(_normal(line) + "\n" for line in actual.splitlines() if line.strip())
    return re.fullmatch("".join(parts), got) is not None


def prints_in_order(expected: list[str], actual: str) -> list[str]:
    """The expected lines not found, in order, among the lines ``actual`` holds."""
    got = [_normal(line) for line in actual.splitlines()]
    missing, at = [], 0
    for line in expected:
        pattern = re.compile(_line_pattern(line))
        found = next((k for k in range(at, len(got)) if pattern.fullmatch(got[k])), None)
        if found is None:
            missing.append(line)
        else:
            at = found + 1
    return missing


# -- shell blocks -----------------------------------------------------------------------------

_PIP_EXTRA = re.compile(r"^oracleagentmemory(?:\[(?P<extras>[\w,-]+)\])?$")


def console_commands(code: str) -> tuple[str, str]:
    """A ``console`` block's commands (``$ `` lines) and the output shown after them."""
    commands = [line[2:] for line in code.splitlines() if line.startswith("$ ")]
    shown = [line for line in code.splitlines() if not line.startswith("$ ")]
    return "\n".join(commands) + "\n", "\n".join(shown)


def check_pip(line: str, extras: set[str], installed: set[str]) -> list[str]:
    """Problems with a ``pip install`` line: extras that do not exist, packages not here."""
    problems = []
    for arg in shlex.split(line.split("#", 1)[0])[2:]:
        if arg.startswith("-"):
            continue
        wanted = _PIP_EXTRA.match(arg)
        if wanted:
            unknown = set((wanted["extras"] or "").split(",")) - extras - {""}
            problems += [f"no extra [{name}] in pyproject.toml" for name in sorted(unknown)]
        elif re.split(r"[=<>\[]", arg)[0].lower() not in installed:
            problems.append(f"{arg} is not installed in this environment")
    return problems


def shell_script(
    code: str, targets: set[str], extras: set[str], installed: set[str], python: str
) -> tuple[str, list[str]]:
    """The bash script a shell block runs as, and the problems its checked lines have.

    ``pip install`` lines are checked (the extras exist, the packages are installed here) and
    ``make`` lines name Makefile targets; neither runs (``make test`` would run this test), and
    ``pip uninstall`` lines never run (they would remove the packages under test).
    ``oam serve`` starts in the background, in its own process group whose id goes to
    ``.docs-test-pids``, and the script waits for its ``/readyz``."""
    out: list[str] = ["set -e -o pipefail"]
    problems: list[str] = []
    for line in code.splitlines():
        command = line.split("#", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if command.startswith("pip install"):
            problems += check_pip(command, extras, installed)
            out.append(f": checked {shlex.quote(command)}")
        elif command.startswith("pip uninstall"):
            out.append(f": not run {shlex.quote(command)}")
        elif command.startswith("make "):
            for target in command.split()[1:]:
                if "=" not in target and target not in targets:
                    problems.append(f"make {target}: no such Makefile target")
            out.append(f": checked {shlex.quote(command)}")
        elif command.startswith("oam serve"):
            port = re.search(r"--port\s+(\d+)", command)
            if port is None:
                problems.append(f"{command!r}: give --port so the test can wait for it")
                continue
            out.append(f"setsid {command} > .docs-test-serve.log 2>&1 &")  # util-linux
            out.append("echo $! >> .docs-test-pids")
            out.append(f"{shlex.quote(python)} -c {shlex.quote(_WAIT % int(port[1]))}")
        else:
            out.append(line)
    return "\n".join(out) + "\n", problems


_WAIT = """
import sys, time, urllib.request
for _ in range(240):
    try:
        urllib.request.urlopen("http://127.0.0.1:%d/readyz", timeout=2)
        sys.exit(0)
    except OSError:
        time.sleep(0.5)
sys.exit("oam serve was not ready (/readyz): " + open(".docs-test-serve.log").read())
"""


# -- the driver: one interpreter runs a page's steps in order ----------------------------------

STEP = "\x1e{}\x1e"
DRIVER = r"""
import json, subprocess, sys, traceback
steps = json.load(open(sys.argv[1]))
namespace = {"__name__": "__main__"}
for i, step in enumerate(steps):
    for stream in (sys.stdout, sys.stderr):
        print("\x1e%d\x1e" % i, file=stream, flush=True)
    if step["kind"] == "python":
        try:
            exec(compile(step["code"], step["where"], "exec"), namespace)
        except BaseException:
            traceback.print_exc()
            sys.exit(3)
    else:
        sys.stdout.flush()
        if subprocess.run(["bash", "-c", step["code"]]).returncode:
            print(step["where"] + ": the commands failed", file=sys.stderr)
            sys.exit(3)
    sys.stdout.flush()
    sys.stderr.flush()
"""


def split_steps(stdout: str, count: int) -> list[str]:
    """Each step's share of the driver's stdout."""
    parts = re.split("\x1e(\\d+)\x1e\n?", stdout)
    found = {int(parts[k]): parts[k + 1] for k in range(1, len(parts) - 1, 2)}
    return [found.get(i, "") for i in range(count)]


def write_steps(path: Path, steps: list[dict[str, Any]]) -> None:
    path.write_text(json.dumps(steps), encoding="utf-8")


# -- a model for the examples that call one ---------------------------------------------------


def instance(schema: dict[str, Any], text: str) -> Any:
    """A small value valid for ``schema``: strings are the prompt's first word."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        keys = schema.get("required", list(props))
        return {key: instance(props.get(key, {}), text) for key in keys}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    words = re.findall(r"\w+", text)
    return words[0] if words else "x"
