"""The distribution is ``recallwell``; the import package stays ``oracleagentmemory``; importing it
where Oracle's ``oracleagentmemory`` distribution is installed too is one clear ImportError."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from oracleagentmemory import _distribution

ROOT = Path(__file__).resolve().parent.parent


def _import_in_subprocess(extra_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(extra_path), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-c", "import oracleagentmemory.core; print('imported')"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_the_distribution_has_a_name_of_its_own() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == _distribution.DISTRIBUTION == "recallwell"
    assert "oracle" not in project["name"].lower()
    assert "not affiliated with oracle" in project["description"].lower()
    assert {"Homepage", "Source", "Issues"} <= set(project["urls"])


def test_the_readme_says_it_is_independent_and_installs_by_the_new_name() -> None:
    head = (ROOT / "README.md").read_text().split("## Install")[0].lower()
    assert "not affiliated with" in head and "independent" in head and "implementation" in head
    text = (ROOT / "README.md").read_text()
    assert "pip install recallwell" in text


def test_no_install_hint_names_oracles_distribution() -> None:
    offenders = []
    for folder in ("src", "docs", "examples"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in {".py", ".md", ".sh"} or not path.is_file():
                continue
            text = path.read_text(errors="replace")
            if (
                "oracleagentmemory[" in text
                or "pip install oracleagentmemory\n" in text
                or (
                    "pip install 'oracleagentmemory" in text
                    or 'pip install "oracleagentmemory' in text
                )
            ):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, offenders


def test_the_scan_finds_a_dist_info_or_egg_info_of_that_name(tmp_path: Path) -> None:
    (tmp_path / "oracleagentmemory-26.8.0.dist-info").mkdir()
    (tmp_path / "oracleagentmemory_extra-1.0.dist-info").mkdir()  # another name: not a conflict
    (tmp_path / "recallwell-0.2.0.dist-info").mkdir()
    other = tmp_path / "other"
    other.mkdir()
    (other / "OracleAgentMemory.egg-info").mkdir()
    found = _distribution.conflicting_installs([str(tmp_path), str(other), str(tmp_path / "no")])
    assert sorted(Path(f).name for f in found) == [
        "OracleAgentMemory.egg-info",
        "oracleagentmemory-26.8.0.dist-info",
    ]


def test_importing_beside_oracles_distribution_is_one_clear_import_error(tmp_path: Path) -> None:
    clean = _import_in_subprocess(tmp_path)
    assert clean.returncode == 0 and "imported" in clean.stdout, clean.stderr
    info = tmp_path / "oracleagentmemory-26.8.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: oracleagentmemory\nVersion: 26.8.0\n"
    )
    mixed = _import_in_subprocess(tmp_path)
    assert mixed.returncode == 1
    last = mixed.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: two distributions in this environment install")
    assert "26.8.0" in last and "pip uninstall -y oracleagentmemory recallwell" in last
