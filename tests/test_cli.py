"""The ``oam`` command line: every verb's help, the reference's schema verbs mapped to our
engines, credentials, keys, conversation import and search (run as a real subprocess where
the output stream matters, in-process elsewhere)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oracleagentmemory.cli import build_parser, main
from oracleagentmemory.core import OracleAgentMemory

from ._servers import oam

_ROOT = Path(__file__).resolve().parents[1]
LOCOMO = next(
    (
        p
        for p in (
            _ROOT.parent / "shared/data/locomo/locomo_dev.json",
            _ROOT.parents[1] / "shared/data/locomo/locomo_dev.json",
        )
        if p.is_file()
    ),
    _ROOT.parent / "shared/data/locomo/locomo_dev.json",
)  # ../shared beside the clone (CI, /work/main), or two levels up (a worktree)
VERBS = [
    "install-plsql",
    "check-plsql",
    "uninstall-plsql",
    "upgrade-memory-store",
    "serve",
    "mcp",
    "keys",
    "export",
    "import",
    "search",
    "stats",
    "purge",
]


def test_cli_main_signature() -> None:
    import inspect

    sig = inspect.signature(main)
    assert list(sig.parameters) == ["argv"]
    assert sig.parameters["argv"].default is None


@pytest.mark.parametrize(
    "argv", [[], *([v] for v in VERBS), ["keys", "create"], ["keys", "list"], ["keys", "revoke"]]
)
def test_help_on_every_verb(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: oam")


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-verb"]) == 2
    assert main(["search", "--dsn", "x.db"]) == 2  # no --user-id, no query
    assert "required" in capsys.readouterr().err


def test_schema_verbs_on_sqlite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "m.db")
    assert main(["check-plsql", "--dsn", db]) == 3  # no store there (nothing created)
    assert not Path(db).exists()
    assert "no SQLite database" in capsys.readouterr().err
    assert not Path(db).exists(), "check must not create the file"
    assert (
        main(["install-plsql", "--dsn", db, "--embedder", "none", "--search-strategy", "keyword"])
        == 0
    )
    assert "created" in capsys.readouterr().out
    assert (
        main(["install-plsql", "--dsn", db, "--embedder", "none", "--search-strategy", "keyword"])
        == 0
    )
    assert "already present" in capsys.readouterr().out
    # The reference puts options before the verb: both orders work.
    assert (
        main(["--dsn", db, "--embedder", "none", "--search-strategy", "keyword", "check-plsql"])
        == 0
    )
    assert "ok (schema version" in capsys.readouterr().out
    assert main(["--dsn", db, "upgrade-memory-store"]) == 2
    assert "--memory-store-id" in capsys.readouterr().err
    assert main(["--dsn", db, "--memory-store-id", "other", "upgrade-memory-store"]) == 3
    assert "no store 'other'" in capsys.readouterr().err
    assert (
        main(
            [
                "--dsn",
                db,
                "--memory-store-id",
                "oam",
                "--embedder",
                "none",
                "--search-strategy",
                "keyword",
                "upgrade-memory-store",
            ]
        )
        == 0
    )
    assert "already at schema version" in capsys.readouterr().out
    # A second store in the same file, whose id extends the first one's.
    assert (
        main(
            [
                "install-plsql",
                "--dsn",
                db,
                "--memory-store-id",
                "oam_b",
                "--embedder",
                "none",
                "--search-strategy",
                "keyword",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["uninstall-plsql", "--dsn", db]) == 0
    assert "nothing to uninstall" in capsys.readouterr().out
    assert main(["uninstall-plsql", "--dsn", db, "--purge"]) == 2
    assert "--yes" in capsys.readouterr().err
    assert (
        main(["uninstall-plsql", "--dsn", db, "--purge", "--yes", "--memory-store-id", "oam"]) == 0
    )
    assert "dropped store 'oam'" in capsys.readouterr().out
    assert main(["check-plsql", "--dsn", db]) == 3  # the file is there, store 'oam' is not
    assert (
        main(
            [
                "check-plsql",
                "--dsn",
                db,
                "--memory-store-id",
                "oam_b",
                "--embedder",
                "none",
                "--search-strategy",
                "keyword",
            ]
        )
        == 0
    ), "the other store is intact"
    assert main(["--purge", "--yes", "--dsn", db, "uninstall-plsql"]) == 0
    assert "dropped store 'oam_b'" in capsys.readouterr().out
    import sqlite3

    with sqlite3.connect(db) as conn:
        left = conn.execute("SELECT name FROM sqlite_master").fetchall()
    assert left == []


def test_schema_verbs_on_postgres(pg_url: Any, capsys: pytest.CaptureFixture[str]) -> None:
    url = pg_url("cli")
    args = ["--dsn", url, "--embedder", "none", "--search-strategy", "keyword"]
    assert main([*args, "check-plsql"]) == 3  # no store
    assert main([*args, "install-plsql"]) == 0
    assert main([*args, "check-plsql"]) == 0
    assert main([*args, "--purge", "--yes", "uninstall-plsql"]) == 0
    assert main([*args, "check-plsql"]) == 3
    assert "no store 'oam'" in capsys.readouterr().err


def test_password_from_stdin_or_env_never_echoed(pg_server: Any, tmp_path: Path) -> None:
    secret = "s3cr3t-Pa55"
    uri = pg_server.get_uri()  # postgresql://postgres:@/postgres?host=...
    pg_server.psql(
        f"DO $$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname='oamcli')"
        f" THEN CREATE ROLE oamcli LOGIN PASSWORD '{secret}' SUPERUSER; END IF; END$$;"
    )
    # The password never appears in the output (pgserver's socket trusts local roles, so
    # what fails here is the missing store: exit 3).
    url = uri.replace("postgres:@", "oamcli@")
    bad = oam(
        "--dsn", url, "--password-stdin", "check-plsql", input="wrong-" + secret + "\n", check=False
    )
    assert bad.returncode == 3, bad.stderr
    assert secret not in bad.stdout + bad.stderr
    # From standard input, then from the environment: both reach the server.
    ok = oam(
        "--dsn",
        url,
        "--password-stdin",
        "--embedder",
        "none",
        "--search-strategy",
        "keyword",
        "install-plsql",
        input=secret + "\n",
    )
    assert "created" in ok.stdout and secret not in ok.stdout + ok.stderr
    env = oam(
        "--dsn",
        url,
        "--embedder",
        "none",
        "--search-strategy",
        "keyword",
        "check-plsql",
        env={"ORACLE_MEMORY_DB_PASSWORD": secret},
    )
    assert "ok" in env.stdout and secret not in env.stdout + env.stderr
    # The DSN itself may come from the reference's environment variable.
    env2 = oam(
        "--embedder",
        "none",
        "--search-strategy",
        "keyword",
        "check-plsql",
        env={"ORACLE_MEMORY_DB_PASSWORD": secret, "ORACLE_MEMORY_DB_CONNECT_STRING": url},
    )
    assert "ok" in env2.stdout
    # --user places the user into the URL; a password for a SQLite file is refused.
    assert (
        oam(
            "--dsn",
            uri,
            "--user",
            "oamcli",
            "--password-stdin",
            "--embedder",
            "none",
            "--search-strategy",
            "keyword",
            "check-plsql",
            input=secret + "\n",
        ).returncode
        == 0
    )
    sq = oam(
        "--dsn", str(tmp_path / "x.db"), "--password-stdin", "check-plsql", input="p\n", check=False
    )
    assert sq.returncode == 2 and "SQLite" in sq.stderr
    assert (
        oam("--dsn", url, "--password-stdin", "check-plsql", input="\n", check=False).returncode
        == 2
    )


def test_keys_create_old_user_spelling_still_works_with_a_deprecation_note(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "k.db")
    done = oam("keys", "create", "--dsn", db, "--user", "u1", "--user-id", "u2")
    assert "deprecated, say '--user-id U'" in done.stderr
    assert "for u1, u2" in done.stdout
    quiet = oam("keys", "create", "--dsn", db, "--user-id", "u3")
    assert "deprecated" not in quiet.stderr


def test_keys_create_prints_key_last(tmp_path: Path) -> None:
    db = str(tmp_path / "k.db")
    out = oam("keys", "create", "--dsn", db, "--user-id", "u1", "--user-id", "u2").stdout
    key = out.strip().splitlines()[-1]
    assert key.startswith("oam_") and " " not in key
    listed = oam("keys", "list", "--dsn", db).stdout
    key_id = key.split("_")[1]
    assert key_id in listed and "u1,u2" in listed and key not in listed
    import sqlite3

    with sqlite3.connect(db) as conn:
        (stored,) = conn.execute("SELECT key_hash FROM oam_api_keys").fetchone()
    assert key not in stored and stored.startswith("sha256:")
    assert oam("keys", "revoke", "--dsn", db, key_id).returncode == 0
    assert "revoked" in oam("keys", "list", "--dsn", db).stdout
    assert oam("keys", "revoke", "--dsn", db, key_id, check=False).returncode == 3  # not found
    assert oam("keys", "create", "--dsn", db, check=False).returncode == 2


def test_import_messages_jsonl_and_search(
    tmp_path: Path, local_embedder: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "c.db")
    path = tmp_path / "chat.jsonl"
    lines = [
        {"role": "user", "content": "I moved to Lisbon in May.", "thread_id": "t1"},
        {"role": "assistant", "content": "How do you like it?", "thread_id": "t1"},
        {"role": "user", "content": "My sister lives in Porto.", "thread_id": "t2"},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert main(["import", "--dsn", db, str(path), "--user-id", "u1", "--no-progress"]) == 0
    assert "3 messages into 2 threads" in capsys.readouterr().out
    assert main(["search", "--dsn", db, "--user-id", "u1", "--json", "where do you live"]) == 0
    found = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert {f["content"] for f in found} == {x["content"] for x in lines}
    assert main(["stats", "--dsn", db]) == 0
    stats = capsys.readouterr().out
    assert "message\t3" in stats and "thread\t2" in stats
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "ok"}\n{not json\n')
    assert main(["import", "--dsn", db, str(bad)]) == 1
    assert "bad.jsonl:2" in capsys.readouterr().err
    assert main(["import", "--dsn", db, str(tmp_path / "missing.json")]) == 3


@pytest.mark.skipif(not LOCOMO.is_file(), reason=f"LoCoMo data not found at {LOCOMO}")
@pytest.mark.parametrize("window_vectors", ["late", "pair"])
def test_import_locomo_progress_and_same_search_as_api(
    tmp_path: Path, local_embedder: Any, capsys: pytest.CaptureFixture[str], window_vectors: str
) -> None:
    """The import's searches are the API's: writing under ``late_chunked()`` (the default), or
    as ``add_messages`` writes elsewhere with ``--window-vectors pair``."""
    from oracleagentmemory.core._client.messages._message_batch import late_chunked

    data = json.loads(LOCOMO.read_text())[:1]
    conv = data[0]["conversation"]  # the first 4 sessions keep the test short on 2 cores
    for k in [k for k in conv if k.startswith("session_") and int(k.split("_")[1]) > 4]:
        del conv[k]
    one = tmp_path / "conv.json"
    one.write_text(json.dumps(data[:1]))
    db = str(tmp_path / "locomo.db")
    cmd = ["import", "--dsn", db, str(one), "--progress", "--window-vectors", window_vectors]
    assert main(cmd) == 0
    err = capsys.readouterr().err
    assert "import [" in err and "100%" in err, "a progress bar is drawn"
    sid = data[0]["sample_id"]
    # The same conversation written through the Python API.
    from oracleagentmemory.admin.conversations import locomo_threads

    ref_db = str(tmp_path / "ref.db")
    with OracleAgentMemory(connection=ref_db, embedder=local_embedder) as ref:
        (t,) = locomo_threads(data[:1])
        thread = ref.create_thread(thread_id=sid, user_id=f"u-{sid}")
        for start in range(0, len(t.messages), 100):
            with late_chunked(window_vectors == "late"):
                thread.add_messages(
                    [
                        {k: v for k, v in m.items() if v is not None}
                        for m in t.messages[start : start + 100]
                    ]
                )
        questions = [q["question"] for q in data[0]["qa"][:8]]
        expected = [
            [
                (r.content, round(r.distance, 5))
                for r in ref.search(q, user_id=f"u-{sid}", max_results=5)
            ]
            for q in questions
        ]
    for q, exp in zip(questions, expected, strict=True):
        assert (
            main(
                ["search", "--dsn", db, "--user-id", f"u-{sid}", "--max-results", "5", "--json", q]
            )
            == 0
        )
        out = capsys.readouterr().out
        got = [(x["content"], round(x["distance"], 5)) for x in map(json.loads, out.splitlines())]
        assert got == exp, q


@pytest.mark.skipif(not LOCOMO.is_file(), reason=f"LoCoMo data not found at {LOCOMO}")
def test_import_whole_locomo_conversation_keyword_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A whole conversation (every session) on a keyword-only store: the import draws its
    progress bar, stores every turn in order, and the CLI finds what the Python API finds."""
    data = json.loads(LOCOMO.read_text())[:1]
    one = tmp_path / "conv.json"
    one.write_text(json.dumps(data))
    db = str(tmp_path / "whole.db")
    base = ["--dsn", db, "--embedder", "none", "--search-strategy", "keyword"]
    assert main(["import", *base, str(one), "--progress"]) == 0
    assert "100%" in capsys.readouterr().err
    from oracleagentmemory.admin.conversations import locomo_threads

    (t,) = locomo_threads(data)
    sid = data[0]["sample_id"]
    assert len(t.messages) > 300
    with OracleAgentMemory(connection=db, embedder=None, search_strategy="keyword") as mem:
        stored = mem.list_messages(thread_id=sid, limit=None)
        assert [m.content for m in stored] == [m["content"] for m in t.messages]
        questions = [q["question"] for q in data[0]["qa"][:10]]
        expected = [
            [r.content for r in mem.search(q, user_id=f"u-{sid}", max_results=5)] for q in questions
        ]
    assert any(expected), "the questions find turns of the conversation"
    for q, exp in zip(questions, expected, strict=True):
        assert (
            main(["search", *base, "--user-id", f"u-{sid}", "--max-results", "5", "--json", q]) == 0
        )
        got = [json.loads(x)["content"] for x in capsys.readouterr().out.splitlines()]
        assert got == exp, q


def test_purge_verbs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "p.db")
    with OracleAgentMemory(connection=db, embedder=None, search_strategy="keyword") as mem:
        mem.add_user("u1", "profile")
        th = mem.create_thread(thread_id="t1", user_id="u1")
        th.add_messages([{"role": "user", "content": "hello"}])
        mem.add_memory("likes tea", user_id="u1")
    base = ["--dsn", db, "--embedder", "none", "--search-strategy", "keyword"]
    assert main([*base, "purge"]) == 2
    assert main([*base, "purge", "--user-id", "u1"]) == 2  # needs --yes
    assert main([*base, "purge", "--expired"]) == 0
    assert "removed 0 expired" in capsys.readouterr().out
    assert main([*base, "purge", "--thread-id", "t1", "--yes"]) == 0
    assert main([*base, "purge", "--user-id", "u1", "--yes"]) == 0
    assert "deleted user 'u1'" in capsys.readouterr().out
    with OracleAgentMemory(connection=db, embedder=None, search_strategy="keyword") as mem:
        assert mem.list_memories(limit=None) == [] and mem.list_users() == []


def test_parser_lists_reference_options() -> None:
    helptext = build_parser().format_help()
    for option in ("--user", "--dsn", "--password-stdin", "--purge", "--yes", "--memory-store-id"):
        assert option in helptext
    for verb in ("install-plsql", "check-plsql", "uninstall-plsql", "upgrade-memory-store"):
        assert verb in helptext


def test_export_never_follows_a_planted_link_and_is_private(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with OracleAgentMemory(connection=str(db), schema_policy="create_if_necessary") as mem:
        mem.add_memory("a secret", user_id="u1")
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    out = tmp_path / "dump.jsonl"
    (tmp_path / "dump.jsonl.partial").symlink_to(victim)  # what another local user may plant
    assert main(["export", "--dsn", str(db), "--out", str(out)]) == 0
    assert victim.read_text() == "untouched"
    assert "a secret" in out.read_text()
    assert out.stat().st_mode & 0o777 == 0o600
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".dump.jsonl.")]
    out.unlink()
    out.symlink_to(victim)  # a link planted at the target itself is replaced, not followed
    assert main(["export", "--dsn", str(db), "--out", str(out)]) == 0
    assert victim.read_text() == "untouched" and not out.is_symlink()
