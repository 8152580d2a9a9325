"""Rewrite the old option spellings (``--tasks``, ``--agent``, ``--dry-run``...) to the new ones
(``--bench-limit``, ``--bench-agent``, ``--bench-dry-run``...) in the project's tests, docs,
examples, benchmark scripts, CI files and the package's own messages.

The old -> new table is the option table's (``pytest_agentbench.plugin.options.OPTIONS``), so this script
and the plugin never disagree. Usage, from the repository root::

    python tools/rename_options.py          # rewrite, and list the files changed
    python tools/rename_options.py --check  # only list what would change; exit 1 if anything would

Rules, so that only this plugin's options are touched:

* a flag matches as a whole word: ``--tasks`` never inside ``--audit-tasks``, ``--agent`` never
  inside ``--agent-url`` or ``--bench-agent``;
* a flag that some other program of the repository declares itself (``add_argument("--tasks"``
  in ``benchmarks/*.py``, ``--split`` of the AppWorld worker) is, in the folder of that program
  (``benchmarks/`` or ``pytest_agentbench/``), rewritten only on lines that are a pytest command line
  (they name ``pytest``, ``--bench`` or ``--audit-verifier``); nowhere on an ``add_argument``
  line or on a line that runs one of those scripts (``python benchmarks/audit.py --tasks 100``);
* text between ``rename_options: off`` and ``rename_options: on`` (the user guide's old -> new
  table) and the files that name the old spellings on purpose (the option table, its test, this
  script) are left alone.

The ``sandbox`` fixture exists under that name only in benchmark runs now (``agentbench_sandbox``
everywhere), so a test function in ``tests/`` or ``docs/`` that takes a ``sandbox`` parameter gets
``agentbench_sandbox`` instead, in its ``def`` line and its body. The short names of the other
fixtures (``agent``, ``episode``...) are left alone: they are used in benchmark runs, where they exist.

Running it twice changes nothing the second time: no new spelling contains an old one as a word.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Where old spellings are rewritten (missing ones are skipped).
TARGETS = ("tests", "docs", "README.md", "benchmarks", "examples", ".ci", ".github", "conftest_examples",
           "pytest_agentbench")
SUFFIXES = {".py", ".md", ".rst", ".txt", ".ini", ".toml", ".cfg", ".yml", ".yaml", ".sh", ".json"}
#: Folders holding programs with options of their own (see ``declared_elsewhere``).
PROGRAMS = ("benchmarks", "pytest_agentbench")
#: Files that name the old spellings on purpose.
KEEP = {"pytest_agentbench/plugin/options.py", "tests/test_option_table.py", "tools/rename_options.py"}
OFF, ON = "rename_options: off", "rename_options: on"
_DECLARED = re.compile(r"""add_argument\(\s*["'](--[a-z][a-z0-9-]*)["']""")
_PYTEST_LINE = re.compile(r"\bpytest\b|--bench\b|--audit-verifier\b")
_RUNS_SCRIPT = re.compile(r"benchmarks/\w+\.py|appworld_worker")


def old_to_new() -> dict[str, str]:
    sys.path.insert(0, str(ROOT))
    from pytest_agentbench.plugin.options import OLD_SPELLINGS

    table = {old: opt.flag for old, opt in OLD_SPELLINGS.items()}
    for new in table.values():  # what makes a second run a no-op
        assert not any(re.search(rf"(?<![\w-]){re.escape(old)}(?![\w-])", new) for old in table), new
    return table


def files() -> list[Path]:
    found: list[Path] = []
    for target in TARGETS:
        path = ROOT / target
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(p for p in sorted(path.rglob("*")) if p.is_file() and p.suffix in SUFFIXES
                         and "__pycache__" not in p.parts)
    return [p for p in found if p.relative_to(ROOT).as_posix() not in KEEP]


def declared_elsewhere(paths: list[Path], table: dict[str, str]) -> set[str]:
    """Old spellings that a program among ``paths`` declares as its own option."""
    flags: set[str] = set()
    for path in paths:
        if path.suffix == ".py":
            flags.update(_DECLARED.findall(path.read_text(encoding="utf-8", errors="replace")))
    return flags & set(table)


def _swap(match: re.Match[str], table: dict[str, str], keep: set[str]) -> str:
    old = match.group(1)
    return old if old in keep else table[old]


def rewrite(text: str, table: dict[str, str], theirs: set[str]) -> str:
    """``text`` with the old spellings replaced; those in ``theirs`` only on pytest command lines."""
    pattern = re.compile(r"(?<![\w-])(" + "|".join(re.escape(old) for old in sorted(table, key=len, reverse=True))
                         + r")(?![\w-])")
    out: list[str] = []
    active = True
    for line in text.splitlines(keepends=True):
        if OFF in line:
            active = False
        elif ON in line:
            active = True
        if not active or "add_argument(" in line:
            out.append(line)
            continue
        if _RUNS_SCRIPT.search(line):
            out.append(line)
            continue
        keep = set() if _PYTEST_LINE.search(line) else theirs
        out.append(pattern.sub(functools.partial(_swap, table=table, keep=keep), line))
    return "".join(out)


_SANDBOX_TEST = re.compile(r"^(\s*)def test\w*\((?:[^)]*[,\s])?sandbox\b[^)]*\)")
_SANDBOX = re.compile(r"(?<![\w.])sandbox(?!\w)")
#: Where the ``sandbox`` fixture parameter is renamed.
FIXTURE_TARGETS = ("tests", "docs", "README.md")


def rename_sandbox_fixture(text: str) -> str:
    """``def test_x(sandbox):`` and its body -> ``agentbench_sandbox`` (see the module docstring)."""
    out: list[str] = []
    indent: int | None = None
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if indent is not None and stripped and (len(line) - len(line.lstrip()) <= indent or stripped.startswith("`")):
            indent = None
        match = _SANDBOX_TEST.match(line)
        if match:
            indent = len(match.group(1))
        out.append(_SANDBOX.sub("agentbench_sandbox", line) if indent is not None else line)
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="list what would change, write nothing")
    args = parser.parse_args(argv)
    table = old_to_new()
    paths = files()
    theirs = {folder: declared_elsewhere([p for p in paths if p.relative_to(ROOT).parts[0] == folder], table)
              for folder in PROGRAMS}
    changed: list[str] = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        top = path.relative_to(ROOT).parts[0]
        new = rewrite(text, table, theirs.get(top, set()))
        if top in FIXTURE_TARGETS:
            new = rename_sandbox_fixture(new)
        if new != text:
            changed.append(path.relative_to(ROOT).as_posix())
            if not args.check:
                path.write_text(new, encoding="utf-8")
    for name in changed:
        print(name)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
