"""Whether a file is the user's own code: not the standard library, not an
installed package, not durable itself.

Asked of every loaded module when a process first fingerprints (hundreds
once numpy or pandas is imported): the real path of each folder is found
once, and a file's own only when the file is a link, so that each file
costs one `lstat` rather than one per part of its path.

Pure standard library."""

from __future__ import annotations

import functools
import os
import sys
import sysconfig

_REAL_FOLDERS: dict[str, str] = {}


@functools.lru_cache(maxsize=8192)  # every loaded module, and the functions followed
def is_user_file(filename: str, module_root: str) -> bool:
    if filename.startswith("<frozen"):
        return False
    if not os.path.isabs(filename):  # <string>, <stdin>; notebook cells have real paths
        return module_root not in sys.stdlib_module_names
    path = real_path(filename)
    parts = path.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return False
    return not any(path.startswith(d + os.sep) for d in _library_dirs())


def real_path(filename: str) -> str:
    """`os.path.realpath(filename)`, its folder's part remembered."""
    folder, base = os.path.split(filename)
    if not base or base in (os.curdir, os.pardir) or os.path.islink(filename):
        return os.path.realpath(filename)
    real = _REAL_FOLDERS.get(folder)
    if real is None:
        if len(_REAL_FOLDERS) > 4096:
            _REAL_FOLDERS.clear()
        real = _REAL_FOLDERS[folder] = os.path.realpath(folder)
    return os.path.join(real, base)


@functools.lru_cache(maxsize=1)
def _library_dirs() -> tuple[str, ...]:
    # durable itself: the package, two levels up from durable/_fingerprint/userfiles.py
    # (one level, since the move into subpackages, made durable/_core, _api, ...
    # count as the user's code: their module-level lists were followed).
    dirs = {os.path.dirname(os.path.dirname(os.path.realpath(__file__)))}
    for base in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        paths = sysconfig.get_paths(vars={"base": base, "platbase": base})
        dirs.update(
            os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib")
        )
    return tuple(sorted(dirs))
