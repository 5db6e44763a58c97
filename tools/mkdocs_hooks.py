"""MkDocs hooks for the documentation site (``mkdocs.yml``: ``hooks:``).

- The benchmark results live in ``bench/`` beside the code that writes them, not in ``docs/``.
  They are added to the site as ``bench/...``, and links in the pages are written the way they
  work on a checkout (``../bench/results/full.md`` from ``docs/performance.md``); this hook
  points those links at the site's copy, so both readings of a link work.
- A results file may name a plot that was not kept; the site shows it without the plot.
- Docstrings are written with Sphinx roles (``:class:`X```); the rendered reference shows
  ``X`` as code without the role's name in front of it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
BENCH_FILES = ("README.md", "results")
_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
_ROLE = re.compile(r":(?:class|mod|func|meth|attr|exc|data|obj|const):<code>(~?)([^<]*)</code>")


def on_files(files: Files, config: Any) -> Files:
    bench = ROOT / "bench"
    for name in BENCH_FILES:
        top = bench / name
        paths = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in paths:
            uri = "bench/" + path.relative_to(bench).as_posix()
            files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    depth = page.file.src_uri.count("/")
    if page.file.src_uri.startswith("bench/"):
        # Some results name a plot that was not kept: show the results without it.
        here = Path(page.file.abs_src_path).parent

        def image(match: re.Match[str]) -> str:
            return match.group(0) if (here / match.group(1)).is_file() else ""

        return _IMAGE.sub(image, markdown)
    # From docs/<depth dirs>/page.md the checkout's bench/ is depth + 1 levels up; in the
    # site it sits at the docs root, depth levels up.
    return markdown.replace("](" + "../" * (depth + 1) + "bench/", "](" + "../" * depth + "bench/")


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    def code(match: re.Match[str]) -> str:
        # ``~a.b.C`` shows ``C``, as Sphinx does.
        name = match.group(2).rsplit(".", 1)[-1] if match.group(1) else match.group(2)
        return f"<code>{name}</code>"

    return _ROLE.sub(code, html)
