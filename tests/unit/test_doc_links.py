"""Every relative link and anchor in the manual points at something that exists.

The manual is README.md, BENCHMARKS.md, DEVELOPERS.md and every Markdown file under docs/.
A link's file must exist (relative to the page that links it); a ``#anchor`` must be the slug
GitHub gives one of the target page's headings (lower case, punctuation dropped, spaces to
hyphens, ``-1``, ``-2`` ... for repeats). Links inside code are not links.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)*?\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
NOT_IN_SLUG = re.compile(r"[^\w\- ]")


def manual_pages() -> list[Path]:
    pages = [ROOT / name for name in ("README.md", "BENCHMARKS.md", "DEVELOPERS.md")]
    return pages + sorted((ROOT / "docs").rglob("*.md"))


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    text = INLINE_LINK.sub(r"\1", heading).replace("`", "")
    return NOT_IN_SLUG.sub("", text.lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in prose_lines(page.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(page: Path) -> list[str]:
    links = []
    for line in prose_lines(page.read_text(encoding="utf-8")):
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target):
                links.append(target)
    return links


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def broken(page: Path, target: str) -> str | None:
    path, _, anchor = target.partition("#")
    resolved = (page.parent / path).resolve() if path else page
    if not resolved.exists():
        return f"{target}: no such file {shown(resolved)}"
    if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
        return f"{target}: no heading in {shown(resolved)} has the slug {anchor!r}"
    return None


def test_the_manual_is_where_the_links_say() -> None:
    assert (ROOT / "docs" / "settings.md") in manual_pages()
    assert len(manual_pages()) > 10


@pytest.mark.parametrize("page", manual_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    problems = [problem for t in relative_links(page) if (problem := broken(page, t))]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("The image, `local_test/`, and SageMaker", "the-image-local_test-and-sagemaker"),
        ("The API described: `GET /openapi.json`", "the-api-described-get-openapijson"),
        ("Open Inference Protocol (KServe V2)", "open-inference-protocol-kserve-v2"),
        ("The SDK's local mode", "the-sdks-local-mode"),
        ("See [the docs](docs/x.md) now", "see-the-docs-now"),
    ],
)
def test_slugs_follow_githubs_rule(heading: str, expected: str) -> None:
    assert slug(heading) == expected


def test_a_broken_link_and_a_wrong_anchor_are_reported(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    code = "```\n[d](x.md)\n```\n"
    page.write_text(f"# Top\n\n## Top\n\n[a](#top-1) [b](#nope) [c](gone.md) `[e](y.md)`\n\n{code}")
    assert relative_links(page) == ["#top-1", "#nope", "gone.md"]
    assert broken(page, "#top-1") is None
    assert "no heading in" in str(broken(page, "#nope"))
    assert "no such file" in str(broken(page, "gone.md"))
