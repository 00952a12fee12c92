"""The documentation (issue 31 item 8): the MkDocs site in ``docs/`` builds with warnings as errors, its API
page is generated from ``mia_core.api``'s docstrings, and no relative link of the README or of ``docs/``
points at a file that is not there."""
from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# [text](target) and ![alt](target), outside code; <...> autolinks and reference-style links are not used
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _links(md: str) -> list[str]:
    md = re.sub(r"```.*?```", "", md, flags=re.S)  # fenced code
    md = re.sub(r"`[^`\n]*`", "", md)  # inline code
    return LINK.findall(md)


def _relative(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) and not target.startswith("#")


@pytest.mark.slow
def test_the_site_builds_strict_with_the_api_reference(tmp_path):
    pytest.importorskip("mkdocs")
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                        "--site-dir", str(site)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    assert "WARNING" not in r.stderr, r.stderr[-4000:]
    page = (site / "api" / "index.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))  # what the page says, without its markup
    from mia_core import api

    for fn in (api.score, api.audit, api.plan_run):  # each function's summary line, from its docstring
        summary = fn.__doc__.strip().splitlines()[0]
        words = re.sub(r"[^\w\s]", " ", summary).split()[:6]  # words only: rST markup is not rendered
        assert re.search(r"\W+".join(map(re.escape, words)), text), (fn.__name__, summary)
    assert "Membership scores of unlabelled texts" in text
    for page in ("attacks", "documents", "mlm", "dataset-inference", "scale"):
        assert (site / page / "index.html").is_file(), page


def test_every_relative_link_points_at_a_file():
    assert len(PAGES) > 10, "docs/ holds the pages the README links to"
    broken = []
    for page in PAGES:
        for target in _links(page.read_text()):
            if not _relative(target):
                continue
            path = target.split("#", 1)[0]
            if path and not (page.parent / path).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_the_link_check_sees_links():
    """The checker itself: it finds links outside code and ignores those in code."""
    md = "see [a](docs/a.md#x) and ![img](b.png)\n`[c](c.md)`\n```\n[d](d.md)\n```\n[e](https://x.org)"
    assert _links(md) == ["docs/a.md#x", "b.png", "https://x.org"]
    assert [t for t in _links(md) if _relative(t)] == ["docs/a.md#x", "b.png"]
