"""The README's quick start is examples/quickstart.py, the file `make test-wheel`
(tools/wheel_smoke.sh) runs from a wheel installed in a fresh venv, so the two never drift."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_quick_start_is_the_file_the_wheel_check_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert block == (ROOT / "examples" / "quickstart.py").read_text(encoding="utf-8")
    assert "# prints: " in block, "the wheel check compares what it prints"
    script = (ROOT / "tools" / "wheel_smoke.sh").read_text(encoding="utf-8")
    assert "examples/quickstart.py" in script and "/readyz" in script
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^test: .*test-wheel", makefile, re.MULTILINE)
