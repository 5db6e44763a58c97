"""``oam`` as a shell user meets it: one-line errors with shell advice, exit codes that say
what happened, read-only verbs that create nothing, a closed pipe, an unreachable server,
purge counts, the memory verbs and the import ETA (real subprocesses where streams matter)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from oracleagentmemory.admin.cli_errors import EXIT_CODES_HELP
from oracleagentmemory.cli import main
from oracleagentmemory.core import OracleAgentMemory, SchemaPolicy, SQLiteMemoryStore

from ._servers import OAM, oam

pytestmark = pytest.mark.slow  # servers or programs in subprocesses: make test, not test-quick

KEYWORD = ["--embedder", "none", "--search-strategy", "keyword"]


def _keyword_store(db: str) -> None:
    assert main(["install-plsql", "--dsn", db, *KEYWORD]) == 0


@pytest.mark.parametrize(
    "verb",
    [
        ["stats"],
        ["search", "q", "--user-id", "u"],
        ["export", "--out", "x.jsonl"],
        ["memories", "list", "--user-id", "u"],
        ["purge", "--expired"],
        ["check-plsql"],
        ["keys", "list"],
    ],
)
def test_read_verbs_name_the_missing_file_create_nothing_and_exit_3(
    tmp_path: Path,
    verb: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "nosuch.db")
    assert main([*verb, "--dsn", db]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("oam: error: ")
    assert "nosuch.db" in err and "oam install-plsql --dsn" in err
    assert "schema_policy" not in err and "SchemaPolicy" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "nothing may be created"


def test_missing_store_in_an_existing_file_gets_shell_advice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "m.db")
    _keyword_store(db)
    capsys.readouterr()
    assert main(["stats", "--dsn", db, "--memory-store-id", "other", *KEYWORD]) == 3
    err = capsys.readouterr().err
    assert "create it with: oam install-plsql --dsn" in err and "--memory-store-id other" in err
    assert "SchemaPolicy" not in err


def test_an_outdated_or_foreign_store_gets_the_verb_to_run() -> None:
    from oracleagentmemory.admin.cli_errors import shell_advice

    text = (
        "the managed schema is version 3, older than 10; open it with "
        "schema_policy=SchemaPolicy.CREATE_IF_NECESSARY to upgrade it"
    )
    assert shell_advice(text, "m.db", "s1").endswith(
        "upgrade it with: oam upgrade-memory-store --dsn m.db --memory-store-id s1"
    )
    secret = shell_advice(
        "x; open it with schema_policy=SchemaPolicy.CREATE_IF_NECESSARY to create it",
        "postgresql://u:pw@h/db",
        None,
    )
    assert "pw" not in secret and "oam install-plsql --dsn postgresql://u:***@h/db" in secret
    empty = shell_advice(
        "x; open it with schema_policy=SchemaPolicy.CREATE_IF_NECESSARY to create it",
        "postgresql://postgres:@/db?host=/tmp/s",
        None,
    )
    assert "--dsn postgresql://postgres:@/db?host=/tmp/s" in empty, "no password: none shown"


@pytest.mark.parametrize("dsn", ["{tmp}", "/proc/oam-nowhere/m.db"])
def test_an_unopenable_path_is_named_and_exits_4(
    tmp_path: Path, dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = dsn.format(tmp=tmp_path)  # a folder, or a folder that cannot be made
    assert main(["install-plsql", "--dsn", path, *KEYWORD]) == 4
    err = capsys.readouterr().err
    assert f"cannot open SQLite database {path!r}" in err and err.count("\n") == 1


def test_unreachable_postgres_is_one_line_exit_4_and_quick() -> None:
    started = time.monotonic()
    proc = oam("stats", "--dsn", "postgresql://nobody@127.0.0.1:1/db", check=False)
    assert proc.returncode == 4
    assert time.monotonic() - started < 20
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("oam: error: cannot connect to PostgreSQL at 127.0.0.1:1/db")


def test_a_closed_pipe_ends_quietly_with_141(tmp_path: Path) -> None:
    db = str(tmp_path / "big.db")
    store = SQLiteMemoryStore(
        None, db, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY, search_strategy="keyword"
    )
    store.add(
        [f"memory number {i} " + "x" * 200 for i in range(3000)],
        record_type="memory",
        user_ids="u1",
    )
    store.close()
    proc = subprocess.Popen(
        [*OAM, "memories", "list", "--dsn", db, "--user-id", "u1", "--limit", "0", *KEYWORD],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == "", err


def test_purge_reports_counts_and_a_missing_user_or_thread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "p.db")
    with OracleAgentMemory(
        connection=db,
        embedder=None,
        search_strategy="keyword",
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
    ) as mem:
        t = mem.create_thread(thread_id="t1", user_id="u1", agent_id="a1")
        t.add_messages([{"role": "user", "content": "hi"}, {"role": "user", "content": "yo"}])
        t.add_memory("likes tea", memory_type="preference")
        mem.add_memory("lives in Porto", memory_type="fact", user_id="u1")
        t2 = mem.create_thread(thread_id="t2", user_id="u2")
        t2.add_messages([{"role": "user", "content": "hello"}])
    base = ["--dsn", db, *KEYWORD]
    assert main(["purge", "--thread-id", "t2", "--yes", *base]) == 0
    assert capsys.readouterr().out.strip() == "deleted thread 't2': 1 thread, 1 message"
    assert main(["purge", "--user-id", "u1", "--yes", *base]) == 0
    assert capsys.readouterr().out.strip() == (
        "deleted user 'u1': 1 thread, 2 messages, 1 fact, 1 preference"
    )
    assert main(["purge", "--user-id", "u1", "--yes", *base]) == 3
    out = capsys.readouterr()
    assert out.out == "" and "no user 'u1' (no profile, no data): nothing deleted" in out.err
    assert main(["purge", "--thread-id", "t2", "--yes", *base]) == 3
    assert "no thread 't2': nothing deleted" in capsys.readouterr().err


def test_memory_verbs_add_list_delete(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "m.db")
    with OracleAgentMemory(
        connection=db,
        embedder=None,
        search_strategy="keyword",
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
    ) as mem:
        mem.create_thread(thread_id="t1", user_id="u1", agent_id="concierge")
    base = ["--dsn", db, *KEYWORD]
    assert (
        main(
            [
                "memories",
                "add",
                "Alice is allergic to peanuts.",
                "--type",
                "fact",
                "--thread-id",
                "t1",
                "--metadata",
                '{"source": "cli"}',
                *base,
            ]
        )
        == 0
    )
    fact = capsys.readouterr().out.strip()
    assert (
        main(
            [
                "memories",
                "add",
                "Prefers trains.",
                "--type",
                "preference",
                "--user-id",
                "u1",
                "--ttl-days",
                "30",
                *base,
            ]
        )
        == 0
    )
    pref = capsys.readouterr().out.strip()
    assert main(["memories", "list", "--user-id", "u1", "--json", *base]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in rows] == [fact, pref]
    # A memory naming a thread takes the thread's user and agent.
    assert (rows[0]["user_id"], rows[0]["agent_id"], rows[0]["thread_id"]) == (
        "u1",
        "concierge",
        "t1",
    )
    assert rows[0]["metadata"] == {"source": "cli"}
    assert main(["memories", "list", "--user-id", "u1", "--type", "fact", *base]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"{fact}\tfact\t") and line.endswith("Alice is allergic to peanuts.")
    for bad, code, text in [
        (
            ["memories", "add", "x", "--thread-id", "t1", "--agent-id", "other"],
            2,
            "takes the thread's scope",
        ),
        (["memories", "add", "x", "--thread-id", "nope"], 3, "no thread 'nope'"),
        (["memories", "add", "x"], 2, "needs --user-id"),
        (["memories", "add", "x", "--user-id", "u1", "--metadata", "[1]"], 2, "JSON object"),
        (["memories", "delete", fact], 2, "--yes"),
        (["memories", "delete", "nope", "--yes"], 3, "no memory 'nope'"),
    ]:
        assert main([*bad, *base]) == code, bad
        assert text in capsys.readouterr().err, bad
    assert main(["memories", "delete", fact, "--yes", *base]) == 0
    assert capsys.readouterr().out.strip() == f"deleted memory {fact!r}"
    assert main(["memories", "list", "--user-id", "u1", *base]) == 0
    assert fact not in capsys.readouterr().out


def test_help_lists_the_exit_codes_and_the_new_verbs() -> None:
    out = oam("--help").stdout
    assert " ".join(EXIT_CODES_HELP.split()) in " ".join(out.split())
    assert "memories" in out
    serve = oam("serve", "--help").stdout
    for flag in ("--llm-model", "--llm-api-base", "--llm-api-key-env", "--access-log"):
        assert flag in serve
    assert "--llm-model" in oam("mcp", "--help").stdout


def test_llm_options_are_checked_before_serving(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "s.db")
    for args, text in [
        (["--llm-api-base", "http://x/v1"], "need --llm-model"),
        (["--llm-model", "m", "--llm-api-base", "ftp://x"], "http:// or https://"),
        (["--llm-model", "m", "--llm-api-key-env", "OAM_TEST_UNSET_VAR"], "is not set"),
    ]:
        assert main(["serve", "--dsn", db, *args]) == 2, args
        assert text in capsys.readouterr().err
        assert main(["mcp", "--dsn", db, "--user-id", "u1", *args]) == 2, args
        assert text in capsys.readouterr().err
    assert not Path(db).exists()


def test_import_progress_shows_an_eta() -> None:
    import io

    from oracleagentmemory.admin.progress import ProgressBar

    stream = io.StringIO()
    bar = ProgressBar(4, "import", stream=stream, force=True)
    bar.update(1)
    time.sleep(0.12)
    bar.update(1)
    assert "ETA 0:00" in stream.getvalue()
    bar.close()
    assert stream.getvalue().endswith("in 0:00\n")
    assert ProgressBar(0, "x", stream=io.StringIO()).eta() == "--:--"


def test_a_file_that_is_not_a_database_or_a_folder_is_named_and_exits_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.db"
    bad.write_text("garbage " * 100)
    assert main(["stats", "--dsn", str(bad), *KEYWORD]) == 4
    assert (
        f"cannot open SQLite database {str(bad)!r}: file is not a database"
        in capsys.readouterr().err
    )
    for verb in (["check-plsql"], ["keys", "list"], ["stats"]):
        assert main([*verb, "--dsn", str(tmp_path), *KEYWORD]) == 4, verb
        assert "it is a folder" in capsys.readouterr().err or verb == ["stats"]
    assert main(["import", "--dsn", str(tmp_path / "m.db"), str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_strategy_and_embedder_mistakes_get_options_to_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "v.db")
    with OracleAgentMemory(connection=db, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY) as mem:
        mem.add_memory("Alice likes green tea.", user_id="u1")
    assert (
        main(["search", "tea", "--user-id", "u1", "--dsn", db, "--search-strategy", "keyword"]) == 1
    )
    err = capsys.readouterr().err
    advice = f"add it with: oam install-plsql --dsn {db} --search-strategy keyword"
    assert advice in err and "SearchStrategy" not in err
    # The advice works: run it, and the same search succeeds.
    assert main(advice.split(": ", 1)[1].split()[1:]) == 0
    capsys.readouterr()
    assert (
        main(["search", "tea", "--user-id", "u1", "--dsn", db, "--search-strategy", "keyword"]) == 0
    )
    assert "green tea" in capsys.readouterr().out
    assert main(["search", "tea", "--user-id", "u1", "--dsn", db, "--embedder", "none"]) == 1
    err = capsys.readouterr().err
    assert "query_vector" not in err and "--search-strategy keyword" in err


def test_import_progress_stays_out_of_a_log(tmp_path: Path) -> None:
    conv = tmp_path / "c.json"
    conv.write_text(json.dumps([{"role": "user", "content": f"m{i}"} for i in range(5)]))
    proc = oam("import", "--dsn", str(tmp_path / "i.db"), str(conv), "--user-id", "u1", *KEYWORD)
    assert "\r" not in proc.stderr and "ETA" not in proc.stderr, "stderr is not a terminal"
    assert "imported 5 messages into 1 thread:" in proc.stdout


def test_mcp_over_stdio_says_what_it_serves(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    proc = subprocess.run(
        [*OAM, "mcp", "--dsn", str(tmp_path / "m.db"), "--user-id", "u1", *KEYWORD],
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout == "", "standard output is the protocol's"
    assert proc.stderr.startswith("oam mcp: serving user 'u1' over stdio (store oam in "), (
        proc.stderr
    )


def test_the_access_log_goes_to_stderr_with_times(tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="the [server] extra is not installed")
    import httpx

    from ._servers import free_port

    port = free_port()
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen(
            [
                *OAM,
                "serve",
                "--dsn",
                str(tmp_path / "s.db"),
                "--port",
                str(port),
                "--access-log",
                *KEYWORD,
            ],
            stdout=o,
            stderr=e,
        )
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).is_success:
                        break
                except httpx.TransportError:
                    time.sleep(0.2)
            time.sleep(0.5)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    logged = err.read_text()
    assert out.read_text() == ""
    assert logged.startswith(f"oam serve: listening on http://127.0.0.1:{port} ")
    assert "s.db (a new, empty file);" in logged.splitlines()[0]
    line = next(x for x in logged.splitlines() if '"GET /healthz HTTP/1.1" 200' in x)
    assert line[:4].isdigit() and line[4] == "-", "a timestamp first"


def test_an_interrupted_import_says_what_is_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from oracleagentmemory.admin import conversations

    def interrupted(client: object, threads: object, **kwargs: object) -> list[str]:
        kwargs["progress"](3)  # type: ignore[operator]
        raise KeyboardInterrupt

    monkeypatch.setattr(conversations, "import_conversations", interrupted)
    conv = tmp_path / "c.json"
    conv.write_text(json.dumps([{"role": "user", "content": f"m{i}"} for i in range(5)]))
    assert (
        main(["import", "--dsn", str(tmp_path / "i.db"), str(conv), "--user-id", "u1", *KEYWORD])
        == 130
    )
    assert "interrupted after 3 of 5 messages" in capsys.readouterr().err
