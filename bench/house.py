"""Figures of the house's shape, for the layout issues.

    .venv/bin/python bench/house.py [PATH ...]     (default: analysis)

``private_imports(paths)``: the imports, in the Python files under `paths`, that
pull a private name (one ``_underscore``, not a ``__dunder__``) out of another
module of ours (``from x import _name`` where x is not the importing module
itself); prints each and the count of imports and of names, and returns the names.
A module that needs another's private name is one concept cut in half: make the
name public or move the code.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the default paths' checkout
OURS = ("annotation", "judging", "analysis", "flaskapp", "demo")


def _module_name(path: Path) -> str:
    """The dotted name of a file in a checkout (from its first package of ours)."""
    parts = path.resolve().with_suffix("").parts
    parts = parts[next(i for i, p in enumerate(parts) if p in OURS) :]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, here: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = here.split(".") if is_package else here.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _is_module(path: Path, dotted: str) -> bool:
    """Whether `dotted` names a module (file or package) of the checkout of `path`."""
    parts = path.resolve().parts
    root = Path(*parts[: next(i for i, p in enumerate(parts) if p in OURS)])
    target = root.joinpath(*dotted.split("."))
    return target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(paths) -> list[tuple[str, str, str]]:
    """(importing module, imported module, name) for every private name one module
    of ours imports from another (``from x import _name``, or ``x._name`` on a
    module of ours it imported: counted as one import per module); prints them and
    the counts."""
    found = []
    statements = 0
    files = []
    for p in map(Path, paths):
        files += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    for path in files:
        if "migrations" in path.parts:
            continue
        here = _module_name(path)
        tree = ast.parse(path.read_text(), str(path))
        modules = {}  # local name -> a module of ours it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] in OURS and a.asname:
                        modules[a.asname] = a.name
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _absolute(node, here, path.name == "__init__.py")
            if source.split(".")[0] not in OURS or source == here:
                continue
            names = [a.name for a in node.names if _private(a.name)]
            statements += bool(names)
            found += [(here, source, n) for n in names]
            for a in node.names:  # `from pkg import module`: module._name below
                if _is_module(path, f"{source}.{a.name}"):
                    modules[a.asname or a.name] = f"{source}.{a.name}"
        # `module._name` on a module of ours bound by an import (each name once)
        used = {
            (modules[n.value.id], n.attr)
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name)
            and n.value.id in modules
            and _private(n.attr)
            and modules[n.value.id] != here
        }
        found += [(here, source, name) for source, name in sorted(used)]
        statements += len({source for source, _ in used})
    for here, source, name in found:
        print(f"{here} <- {source}.{name}")
    print(f"private imports across modules: {statements} imports, {len(found)} names")
    return found


def main() -> None:
    paths = sys.argv[1:] or [str(ROOT / "analysis")]
    private_imports(paths)


if __name__ == "__main__":
    main()
