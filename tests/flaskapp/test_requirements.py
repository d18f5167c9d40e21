"""The product imports only what requirements.txt installs (issue 33).

`make run`, the Dockerfile and docker-compose install requirements.txt alone; the test
tools and the reference libraries live in requirements-dev.txt. Every import of the
app packages (at module top or inside a function, migrations and template tag
libraries included), every dotted path in the settings, every `{% load %}` library
and every `python -m MODULE` the launcher runs is mapped to the distribution that
installs it (importlib.metadata, in the development environment); each must be listed
in requirements.txt itself, not only in requirements-dev.txt nor merely pulled in by
another package."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
# demo: `make run` loads it (flaskapp/launcher.py imports it), so it is product code too
APP_PACKAGES = ("annotation", "judging", "analysis", "flaskapp", "demo")
DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def normalized(name: str) -> str:
    """PEP 503's form of a distribution name: `Django`, `factory_boy` ->
    `django`, `factory-boy`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def listed(path: Path) -> set[str]:
    """The distributions a requirements file lists itself (not through `-r`)."""
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            names.add(normalized(re.split(r"[\[=<>!~; ]", line, maxsplit=1)[0]))
    return names


def imported_modules(source: str) -> set[str]:
    """Top-level names of every absolute import in `source` (any depth of the tree)
    and of every module a list runs with `-m` (the launcher's gunicorn, celery)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.List | ast.Tuple):
            items = [
                e.value if isinstance(e, ast.Constant) else None for e in node.elts
            ]
            for flag, module in zip(items, items[1:], strict=False):
                if flag == "-m" and isinstance(module, str):
                    found.add(module.split(".")[0])
    return found


def settings_modules() -> set[str]:
    """Top-level names of the dotted paths among the settings' string values
    (INSTALLED_APPS, MIDDLEWARE, backends, DRF classes...)."""
    found = set()

    def walk(value):
        if type(value) is str:  # not a lazy object standing for one
            if DOTTED.fullmatch(value):
                found.add(value.split(".")[0])
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple | set):
            for item in value:
                walk(item)

    for name in dir(settings):
        if name.isupper():
            walk(getattr(settings, name))
    return found


def template_library_modules() -> set[str]:
    """Top-level names of the modules behind every `{% load %}` library."""
    from django.template.backends.django import get_installed_libraries
    from django.template.engine import Engine

    libraries = {**get_installed_libraries(), **Engine.get_default().libraries}
    return {path.split(".")[0] for path in libraries.values()}


@functools.cache
def _packages_distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()  # reads every RECORD: slow


def distributions_of(modules: set[str], *, strict: bool) -> dict[str, set[str]]:
    """{distribution: modules it provides} for the third-party names in `modules`;
    with `strict`, a name no installed distribution provides is an error (a dotted
    setting value may be a plain word, so settings are not strict)."""
    provides = _packages_distributions()
    ours_or_std = set(APP_PACKAGES) | set(sys.stdlib_module_names) | {"__future__"}
    out: dict[str, set[str]] = {}
    for module in sorted(modules - ours_or_std):
        if module not in provides:
            assert not strict, f"no installed distribution provides `{module}`"
            continue
        for dist in provides[module]:
            out.setdefault(normalized(dist), set()).add(module)
    return out


def app_sources(root: Path):
    for package in APP_PACKAGES:
        yield from sorted((root / package).rglob("*.py"))


def app_distributions(root: Path = ROOT) -> dict[str, set[str]]:
    """{distribution: where it is imported} for the whole app."""
    where: dict[str, set[str]] = {}
    for path in app_sources(root):
        modules = imported_modules(path.read_text())
        for dist in distributions_of(modules, strict=True):
            where.setdefault(dist, set()).add(str(path.relative_to(root)))
    for source, modules in (
        ("settings", settings_modules()),
        ("templates' {% load %}", template_library_modules()),
    ):
        for dist in distributions_of(modules, strict=False):
            where.setdefault(dist, set()).add(source)
    return where


def optional_distributions() -> set[str]:
    """The distributions of `flaskapp.optional.PACKAGES`, each listed in its own
    requirements file."""
    from flaskapp.optional import PACKAGES

    out = set()
    for package in PACKAGES:
        dists = distributions_of({package.module}, strict=True)
        assert set(dists) <= listed(ROOT / package.requirements), package
        out |= set(dists)
    return out


def test_every_distribution_the_app_imports_is_a_runtime_requirement():
    runtime = listed(ROOT / "requirements.txt") | optional_distributions()
    missing = {
        dist: sorted(paths)[:3]
        for dist, paths in app_distributions().items()
        if dist not in runtime
    }
    assert not missing, (
        "imported by the app but not listed in requirements.txt (add them there; "
        f"requirements-dev.txt is not installed by `make run`): {missing}"
    )


def test_optional_packages_are_imported_only_inside_functions():
    """A module that imported pyarrow at its top would fail to load on a `make run`
    server; inside a function, the import runs after `PARQUET.available()`."""
    from flaskapp.optional import PACKAGES

    optional = {package.module for package in PACKAGES}
    at_top = []
    for path in app_sources(ROOT):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            if any(n.split(".")[0] in optional for n in names):
                at_top.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not at_top, f"optional packages imported at module top: {at_top}"


def test_the_two_requirement_files_split_runtime_from_development():
    runtime = listed(ROOT / "requirements.txt")
    dev = listed(ROOT / "requirements-dev.txt")
    assert "-r requirements.txt" in (ROOT / "requirements-dev.txt").read_text()
    assert not runtime & dev, f"listed in both files: {sorted(runtime & dev)}"
    # the test tools and reference libraries stay out of the product
    for name in ("pytest", "playwright", "ruff", "crowd-kit", "ppi-python", "choix",
                 "statsmodels", "pandas"):  # fmt: skip
        assert name in dev and name not in runtime, name
    assert {"django", "numpy", "scipy"} <= runtime
    # Parquet's 174 MB stay out of `make run` (flaskapp/optional.py), in CI's install
    parquet = listed(ROOT / "requirements-parquet.txt")
    assert parquet == {"pyarrow"} and not parquet & runtime
    assert "-r requirements-parquet.txt" in (ROOT / "requirements-dev.txt").read_text()


@pytest.mark.parametrize(
    "source",
    [
        "import crowdkit\n",
        "def fit():\n    from crowdkit.aggregation import MACE\n",
        "class A:\n    def f(self):\n        import sklearn.isotonic as iso\n",
        "CMD = [sys.executable, '-m', 'pytest', '-q']\n",
    ],
)
def test_the_scan_sees_a_development_package_imported_anywhere(tmp_path, source):
    for package in APP_PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "judging" / "leak.py").write_text(source)
    dists = app_distributions(tmp_path)
    leaked = set(dists) & listed(ROOT / "requirements-dev.txt")
    assert leaked and all("judging/leak.py" in dists[d] for d in leaked), (
        "the scan missed the import"
    )
    assert not leaked & listed(ROOT / "requirements.txt")
