"""The code files a function runs that its text does not name as modules.
The packages of the user's whose modules it may import by a name built at
run time: `import_module(f"plugins.{name}")` (a string constant
ending in a dot names the package), or `pkgutil.iter_modules(plugins.__path__)`
then `import_module(...)` (the function names the package's module). Which
of its modules run is not told by the text, so every module file under the
package counts, by its text, imported or not: an edited plugin, or one
added to the folder, is a changed call (it replayed what the old plugins
computed). And a Python file it runs by its path, named by a string
constant (`runpy.run_path("conf/exp.py")`, `spec_from_file_location(name,
"conf/exp.py")`, `exec(open("conf/exp.py").read())`, a process it starts,
`subprocess.run([sys.executable, "tool.py"])`, also through a function of
the user's it names that does so: `load("conf/exp.py")`), by its bytes.

Pure standard library."""

from __future__ import annotations

import hashlib
import os
import re
import types
from collections.abc import Iterable, Iterator

from .imports import import_user_module, user_module
from .modfiles import UNTOLD
from .reach import code_objects, is_user_code

# A package's name, then the start of a module's name built at run time: `"plugins."` (of
# `f"plugins.{name}"` or `"plugins." + name`), `"tools.%s"`, `"tools.{}"`, `"tools.fast_{kind}"`.
_TEMPLATE = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\.(?:\w*(?:%s|\{[^{}]*\}).*)?\Z", re.ASCII | re.DOTALL)
_FILES = 1024  # past this many files the rest would go uncounted: changed (`UNTOLD`)
# Names by which code runs a Python file by its path rather than importing a module
# (in this process, or in another: `subprocess.run([sys.executable, "tool.py"])`).
_RUNNERS = frozenset({"run_path", "spec_from_file_location", "SourceFileLoader", "exec", "subprocess", "executable", "Popen", "system"})


def package_parts(code: types.CodeType, objs: Iterable[object]) -> tuple[tuple[str, str], ...]:
    """("package-files:NAME", the digest of its files' texts) for each
    package of the user's that a string constant of the code names with a
    trailing dot (`"plugins."`), or a template of a module's name in it
    (`"tools.%s"`, `"tools.{}"`: `_TEMPLATE`), or that `objs` (what the code's names hold) are."""
    consts = [c for co in code_objects(code) for c in co.co_consts if isinstance(c, str)]
    named = [import_user_module(m.group(1)) for c in consts if (m := _TEMPLATE.match(c))]
    found = {}
    for package in (p for p in [*named, *objs] if isinstance(p, types.ModuleType)):
        texts = package_digest(package) if user_module(package) else None
        if texts is not None:
            found[package.__name__] = texts
    return tuple((f"package-files:{name}", digest) for name, digest in sorted(found.items()))


def package_digest(package: types.ModuleType) -> str | None:
    """The digest of the texts of a package's module files, imported or
    not; None for a plain module."""
    places = getattr(package, "__path__", None)
    return _texts([p for p in places if isinstance(p, str)]) if places else None


def _texts(places: list[str]) -> str:
    digest, count = hashlib.sha256(), 0
    for place in places:
        try:
            files = list(_folder(place)) if os.path.isdir(place) else _zipped(place)
        except OSError:  # gone meanwhile (a damaged archive too): as changed
            return UNTOLD
        for name, text in files if files is not None else ():
            count += 1
            if count > _FILES:
                return UNTOLD
            digest.update(f"{name}\0{len(text)}\0".encode() + text)
        if files is None:  # neither a folder nor in an archive: what it holds cannot be told
            return UNTOLD
    return digest.hexdigest()[:16]


def _folder(place: str) -> Iterator[tuple[str, bytes]]:
    for folder, dirs, files in sorted(os.walk(place)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                yield os.path.relpath(path, place), f.read()


def _zipped(place: str) -> list[tuple[str, bytes]] | None:
    """The module files of a package imported from a zip archive
    (`app.zip/plugins`, `zipimport`): `os.walk` finds no folder there, and
    its digest was that of no file at all, so an edited plugin replayed."""
    import zipfile  # only for a package in an archive: not loaded at each first step

    archive, inner = place, ""
    while archive and not os.path.exists(archive):
        archive, tail = os.path.split(archive)
        inner = f"{tail}/{inner}" if inner else tail
        archive = "" if not tail else archive
    if not (archive and os.path.isfile(archive) and zipfile.is_zipfile(archive)):
        return None
    prefix = f"{inner}/" if inner else ""
    try:
        with zipfile.ZipFile(archive) as z:
            names = sorted(n for n in z.namelist() if n.startswith(prefix) and n.endswith(".py"))
            return [(n[len(prefix) :], z.read(n)) for n in names]
    except zipfile.BadZipFile as e:  # changed meanwhile: as a file gone
        raise OSError(str(e)) from e


def script_parts(code: types.CodeType, objs: Iterable[object], home: str) -> tuple[tuple[str, str], ...]:
    """("code-file:PATH", the digest of its bytes) for each string constant
    of the code naming an existing `.py` file (from the working folder, or
    from `home`, its module's folder), when the code, or a function of the
    user's among `objs`, runs a file by its path."""
    helpers = [o.__code__ for o in objs if type(o) is types.FunctionType and is_user_code(o)]
    if not any(not _RUNNERS.isdisjoint(co.co_names) for c in (code, *helpers) for co in code_objects(c)):
        return ()
    found = {}
    for text in {c for co in code_objects(code) for c in co.co_consts if isinstance(c, str) and c.endswith(".py")}:
        for path in (os.path.join(base, text) for base in (os.getcwd(), home) if base):
            try:
                with open(path, "rb") as f:
                    found[text] = hashlib.sha256(f.read()).hexdigest()[:16]
                break
            except OSError:  # not there: another folder, or no file at all
                continue
    return tuple((f"code-file:{text}", digest) for text, digest in sorted(found.items()))
