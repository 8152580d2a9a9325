"""write_atomic: the old file or the new one, never half of one, and no temporary file left."""

from __future__ import annotations

import os

import pytest

from pytest_agentbench.files import write_atomic


def test_writes_text_and_bytes_and_creates_folders(tmp_path):
    target = tmp_path / "a" / "b" / "out.json"
    assert write_atomic(target, "héllo\n", mkdir=True) == target
    assert target.read_bytes() == "héllo\n".encode()
    write_atomic(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.json"]


def test_a_link_at_the_temporary_name_is_replaced_not_followed(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep", encoding="utf-8")
    target = tmp_path / "page.html"
    tmp = tmp_path / ".page.html.tmp"
    tmp.symlink_to(outside)
    write_atomic(target, "new", tmp=tmp, mode=0o644)
    assert outside.read_text(encoding="utf-8") == "keep"
    assert target.read_text(encoding="utf-8") == "new" and not target.is_symlink()
    assert not tmp.exists()
    assert target.stat().st_mode & 0o777 == 0o644 & ~_umask()


def test_a_failed_rename_keeps_the_old_file_and_removes_the_temporary(tmp_path):
    target = tmp_path / "taken"
    target.mkdir()  # os.replace cannot put a file over a folder
    (target / "inside").write_text("x", encoding="utf-8")
    with pytest.raises(OSError):
        write_atomic(target, "data")
    assert target.is_dir() and not (tmp_path / "taken.tmp").exists()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
