"""Run by every interpreter that has this folder on PYTHONPATH: it looks like
Windows to durable. `fcntl` cannot be imported, and `msvcrt` is the stand-in
(which took its own `fcntl` before the door was shut)."""

# subprocess decides it runs on Windows when `import msvcrt` works: let it
# decide first, so that it keeps its POSIX implementation.
import subprocess  # noqa: F401
import sys

import msvcrt_standin

sys.modules["msvcrt"] = msvcrt_standin
sys.modules["fcntl"] = None  # type: ignore[assignment]
