"""The house layout (STYLE.md) holds: packages instead of name prefixes, modules of a
readable size, one pages and one API include per app."""

from pathlib import Path

import pytest
from django.urls import URLResolver, get_resolver

ROOT = Path(__file__).resolve().parent.parent.parent
APPS = ("annotation", "judging", "analysis", "flaskapp")
LAYERS = ("views", "selectors", "services", "urls", "api", "models", "exports", "tasks")
MAX_LINES = 600
# Modules allowed past MAX_LINES, each with the reason STYLE.md gives.
LONG_MODULES = {
    "judging/prompts.py": "every prompt text the judges see, reviewed in one place",
    "judging/fake_server.py": "a self-contained development server, run on its own",
    "judging/parsing.py": "every reply parser, each next to the format it reads",
    "analysis/exports/training.py": "the FLAMe training layout of every task kind, "
    "pointwise, pairwise, classification and critique, read as one format",
}


def _modules():
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def test_no_module_carries_a_layer_prefix_or_suffix():
    prefixed = [
        str(p.relative_to(ROOT))
        for p in _modules()
        for layer in LAYERS
        if p.stem.startswith(f"{layer}_") or p.stem.endswith(f"_{layer}")
    ]
    assert prefixed == []


def test_modules_stay_under_the_size_limit_unless_a_reason_is_written():
    long = {
        str(p.relative_to(ROOT)): n
        for p in _modules()
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert set(long) <= set(LONG_MODULES), long


@pytest.mark.parametrize("prefix", ["", "api/"])
def test_one_include_per_app(prefix):
    included = [
        p.urlconf_name
        for p in get_resolver().url_patterns
        if isinstance(p, URLResolver) and str(p.pattern) == prefix
    ]
    modules = [getattr(u, "__name__", u) for u in included]
    expected = [f"{app}.{prefix.replace('/', '.')}urls" for app in APPS[:3]]
    assert modules == expected
