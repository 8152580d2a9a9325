"""Writing a file so that readers never see half of it: through a temporary file beside it and a
rename. Every report file the package writes (summary.json, the manifest, viewer.html, compare
pages, Inspect logs, results.jsonl rewrites, pool.json) goes through here, so a full disk or an
interrupted run leaves the old file or the new one, and no temporary file behind. Pytest-free,
standard library only."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_agentbench.redact import redact


def write_atomic(path: Path, data: str | bytes, *, tmp: Path | None = None, mkdir: bool = False,
                 mode: int = 0o666) -> Path:
    """Write ``data`` (text is UTF-8) to ``path`` through ``tmp`` (default: ``path`` + ``.tmp``)
    and ``os.replace``. ``mkdir`` creates the missing parent folders first. The temporary file is
    created fresh, never through a symbolic link someone left at its name (the rename then
    replaces a link at ``path`` itself, not what it points to), with ``mode`` less the umask. On
    an OSError the temporary file is removed and the error raised; ``path`` is untouched."""
    tmp = tmp if tmp is not None else path.with_name(path.name + ".tmp")
    if mkdir:
        path.parent.mkdir(parents=True, exist_ok=True)
    payload = redact(data).encode("utf-8") if isinstance(data, str) else data
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    return path
