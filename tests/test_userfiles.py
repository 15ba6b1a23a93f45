"""Which files are the user's code, asked of every loaded module on a
process's first fingerprint: the real path of a folder is found once, and
the answer is that of `os.path.realpath` for links too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from durable._fingerprint import userfiles


def test_the_real_path_of_a_folder_is_found_once_for_all_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen failing before userfiles.py: 40 `realpath` calls (one per file,
    each an `lstat` per part of the path: 15 ms of a first call with
    pandas loaded)."""
    folder = tmp_path / "proj"
    folder.mkdir()
    files = [folder / f"m{i}.py" for i in range(40)]
    for file in files:
        file.write_text("X = 1\n")
    userfiles._library_dirs()  # found once per process, before
    calls: list[str] = []
    real = os.path.realpath
    monkeypatch.setattr(os.path, "realpath", lambda p, **k: calls.append(p) or real(p, **k))
    assert all(userfiles.is_user_file(str(f), "proj") for f in files)
    assert calls == [str(folder)]


def test_links_resolve_as_realpath_does(tmp_path: Path) -> None:
    """A file that is a link, a file in a folder that is a link, and a
    link into a library folder (a library's file, whatever its path says)."""
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.py").write_text("")
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    (tmp_path / "b.py").symlink_to(tmp_path / "real" / "a.py")
    for name in ("real/a.py", "linked/a.py", "b.py"):
        path = str(tmp_path / name)
        assert userfiles.real_path(path) == os.path.realpath(path)
    # A standard library file: the first library folder may hold none (a
    # virtualenv's own lib/pythonX.Y sorts first when the checkout's path does).
    into = tmp_path / "lib_link.py"
    into.symlink_to(os.path.realpath(os.__file__))
    assert userfiles.real_path(str(into)) == os.path.realpath(into)
    assert not userfiles.is_user_file(str(into), "lib_link")
