#!/usr/bin/env python3
"""Checks the documentation a reader follows (Python 3.9+ standard library only).

    python3 scripts/check-docs.py                       # every check below; exit 1 on a failure
    python3 scripts/check-docs.py block FILE NAME       # print the code block marked NAME in FILE
    python3 scripts/check-docs.py block FILE NAME --output   # print the text block that follows it

The checks, over README.md, the package guides (core/, ffi-c/, bindings-python/,
bindings-node/, gameday/ README.md), docs/*.md and benches/*.md:
- every relative link resolves: the file or folder exists, and an #anchor names
  a heading of the Markdown file it points to (GitHub's heading ids);
- every code block marked as run (`<!-- NAME: scripts/X runs this block ... -->`
  right above a fenced block) is named by the script that runs it, and that
  script is one scripts/test.sh runs, so a marked block cannot silently stop
  being run;
- README.md stays the front door: at most 250 lines;
- no guide names an issue or finding number (names say what things do);
- every `DESIGN §n` cited in the documentation and the sources is a section of
  docs/DESIGN.md, and docs/DESIGN.md is identical to ../shared/DESIGN.md where
  that file exists (skipped, loudly, where it does not).
"""

from __future__ import annotations

import re
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 250
GUIDES = ["README.md", "core/README.md", "ffi-c/README.md", "bindings-python/README.md",
          "bindings-node/README.md", "gameday/README.md"]
SHARED_DESIGN = ROOT.parent / "shared" / "DESIGN.md"

FENCE = re.compile(r"^(```|~~~)")
# [text](target) and ![alt](target); the target ends at whitespace or ')'.
INLINE_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
RUN_MARKER = re.compile(r"^<!--\s*([a-z0-9-]+):\s*(scripts/\S+)\s+(?:compiles and )?runs this block")
ISSUE_NUMBER = re.compile(r"\b(?:issues?|findings?)\s+#?\d+", re.IGNORECASE)
DESIGN_CITE = re.compile(r"DESIGN(?:\.md)?\s*§\s*(\d+)")


def documents() -> List[Path]:
    found = [ROOT / g for g in GUIDES if (ROOT / g).exists()]
    found += sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "benches").glob("*.md"))
    return found


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def prose_lines(text: str) -> Iterator[Tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code removed:
    a link or a number written as code is an example, not a claim."""
    in_fence = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line.lstrip()):
            in_fence = not in_fence
            continue
        if not in_fence:
            yield number, INLINE_CODE.sub("", line)


def slug(heading: str) -> str:
    """GitHub's id for a heading: lower case, markup and punctuation dropped
    (letters, digits, '-', '_' and spaces kept), spaces turned into '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    kept = "".join(c for c in text if c in "-_ " or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(path: Path, cache: Dict[Path, Set[str]]) -> Set[str]:
    if path not in cache:
        seen: Dict[str, int] = {}
        ids: Set[str] = set()
        for _, line in prose_lines(path.read_text(encoding="utf-8")):
            m = re.match(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            ids.add(base if n == 0 else f"{base}-{n}")
        cache[path] = ids
    return cache[path]


def check_links(doc: Path, cache: Dict[Path, Set[str]]) -> List[str]:
    problems = []
    text = doc.read_text(encoding="utf-8")
    for number, line in prose_lines(text):
        targets = INLINE_LINK.findall(line)
        ref = REFERENCE_DEF.match(line)
        if ref:
            targets.append(ref.group(1))
        for target in targets:
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
                continue  # http:, https:, mailto: — not this check's business
            path_part, _, anchor = target.partition("#")
            dest = (doc.parent / path_part).resolve() if path_part else doc
            where = f"{rel(doc)}:{number}: link {target!r}"
            if not dest.exists():
                problems.append(f"{where}: {path_part} does not exist")
                continue
            if not str(dest).startswith(str(ROOT)):
                problems.append(f"{where}: points outside the repository")
                continue
            if anchor:
                if dest.is_dir() or dest.suffix != ".md":
                    problems.append(f"{where}: an anchor into something that is not a Markdown file")
                elif anchor not in anchors(dest, cache):
                    problems.append(f"{where}: no heading with id #{anchor} in {rel(dest)}")
    return problems


def scripts_run_by_test_sh() -> Set[str]:
    test_sh = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    return set(re.findall(r"\b(scripts/[\w.-]+)", test_sh))


def marked_blocks(doc: Path) -> List[Tuple[int, str, str]]:
    """(line, name, script) of every run marker in `doc`."""
    found = []
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        m = RUN_MARKER.match(line)
        if m:
            found.append((number, m.group(1), m.group(2)))
    return found


def block(doc: Path, name: str, output: bool = False) -> Optional[str]:
    """The fenced block right below the marker `name` (with `output`: the next
    ```text block after it, the output the guide promises), or None."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    start = next((i for i, line in enumerate(lines)
                  if (m := RUN_MARKER.match(line)) and m.group(1) == name), None)
    if start is None or start + 1 >= len(lines) or not FENCE.match(lines[start + 1]):
        return None
    i = start + 1
    if output:
        end = next((j for j in range(i + 1, len(lines)) if FENCE.match(lines[j])), None)
        if end is None:
            return None
        text_at = next((j for j in range(end + 1, len(lines)) if lines[j].startswith("```text")), None)
        if text_at is None:
            return None
        i = text_at
    body: List[str] = []
    for line in lines[i + 1:]:
        if FENCE.match(line):
            return "\n".join(body) + "\n"
        body.append(line)
    return None


def check_marked_blocks(doc: Path, run_by_tests: Set[str]) -> List[str]:
    problems = []
    for number, name, script in marked_blocks(doc):
        where = f"{rel(doc)}:{number}: block {name!r}"
        if block(doc, name) is None:
            problems.append(f"{where}: no fenced code block right below its marker")
        path = ROOT / script
        if not path.exists():
            problems.append(f"{where}: {script} does not exist")
            continue
        body = path.read_text(encoding="utf-8")
        if name not in body or rel(doc) not in body:
            problems.append(f"{where}: {script} does not read {name} from {rel(doc)}")
        if script not in run_by_tests:
            problems.append(f"{where}: {script} is not run by scripts/test.sh")
    return problems


def check_no_issue_numbers(doc: Path) -> List[str]:
    return [f"{rel(doc)}:{n}: names an issue or finding number ({m.group(0)!r}): say what it does instead"
            for n, line in prose_lines(doc.read_text(encoding="utf-8"))
            for m in [ISSUE_NUMBER.search(line)] if m]


def check_design() -> Tuple[List[str], List[str]]:
    """(problems, notes) of the spec copy and the sections cited."""
    problems: List[str] = []
    notes: List[str] = []
    design = ROOT / "docs" / "DESIGN.md"
    if not design.exists():
        return ["docs/DESIGN.md is missing (copy ../shared/DESIGN.md)"], notes
    text = design.read_text(encoding="utf-8")
    if SHARED_DESIGN.exists():
        if SHARED_DESIGN.read_text(encoding="utf-8") != text:
            problems.append("docs/DESIGN.md differs from ../shared/DESIGN.md: copy it again "
                            "(cp ../shared/DESIGN.md docs/DESIGN.md) and commit")
    else:
        notes.append(f"!!! SKIPPED: {SHARED_DESIGN} is absent, so docs/DESIGN.md is not compared with it")
    sections = set(re.findall(r"^## (\d+)\.", text, re.MULTILINE))
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    files = sorted(set(files) | {rel(d) for d in documents()})  # new guides, before their commit
    for name in files:
        path = ROOT / name
        if name == "docs/DESIGN.md" or not path.is_file() or path.suffix in (".lock", ".tgz", ".node"):
            continue
        try:
            body = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for n in sorted(set(DESIGN_CITE.findall(body)) - sections, key=int):
            problems.append(f"{name}: cites DESIGN §{n}, which docs/DESIGN.md does not have")
    return problems, notes


def main(argv: List[str]) -> int:
    if argv and argv[0] == "block":
        if len(argv) not in (3, 4) or (len(argv) == 4 and argv[3] != "--output"):
            print(__doc__, file=sys.stderr)
            return 2
        text = block(ROOT / argv[1], argv[2], output=len(argv) == 4)
        if text is None:
            print(f"check-docs: no block {argv[2]!r}{' output' if len(argv) == 4 else ''} in {argv[1]}",
                  file=sys.stderr)
            return 1
        sys.stdout.write(text)
        return 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2

    docs = documents()
    cache: Dict[Path, Set[str]] = {}
    run_by_tests = scripts_run_by_test_sh()
    problems: List[str] = []
    blocks = 0
    for doc in docs:
        problems += check_links(doc, cache)
        problems += check_marked_blocks(doc, run_by_tests)
        blocks += len(marked_blocks(doc))
        if rel(doc) != "docs/DESIGN.md":  # the spec is copied as it is
            problems += check_no_issue_numbers(doc)
    readme_lines = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    if readme_lines > README_MAX_LINES:
        problems.append(f"README.md has {readme_lines} lines, more than {README_MAX_LINES}: "
                        "move detail into the guide it belongs to")
    design_problems, notes = check_design()
    problems += design_problems
    for note in notes:
        print(note, file=sys.stderr)
    for p in problems:
        print(f"FAIL {p}")
    print(f"check-docs: {len(docs)} files, {blocks} blocks marked as run, README.md {readme_lines} lines: "
          + ("ok" if not problems else f"{len(problems)} problems"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
