"""The public surface stays put: URL paths, API operations and command flags.

``url_inventory.json`` was recorded before the layout refactoring (issue 10) from the
running URL resolver, drf-spectacular's schema generator and each command's parser.
A change to any of them must be deliberate: update the file in the same commit and
say why in its message.
"""

import json
from pathlib import Path

from django.core.management import get_commands, load_command_class
from django.urls import URLResolver, get_resolver
from drf_spectacular.generators import SchemaGenerator

INVENTORY = json.loads((Path(__file__).parent / "url_inventory.json").read_text())
# Every app whose commands the inventory pins (`demo` holds `load_demo`).
OUR_APPS = ("annotation", "judging", "analysis", "demo")


def _routes(patterns, prefix=""):
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, route)
        else:
            yield route


def test_url_paths_are_unchanged():
    paths = sorted(
        {
            route
            for route in _routes(get_resolver().url_patterns)
            if not route.startswith("django-admin/")
        }
    )
    assert paths == INVENTORY["url_paths"]


def test_api_operations_are_unchanged():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    operations = sorted(
        f"{method.upper()} {path} {operation.get('operationId')}"
        for path, item in schema["paths"].items()
        for method, operation in item.items()
    )
    assert operations == INVENTORY["api_operations"]


def test_management_commands_and_flags_are_unchanged():
    commands = {}
    for name, app in sorted(get_commands().items()):
        if app not in OUR_APPS:
            continue
        parser = load_command_class(app, name).create_parser("manage.py", name)
        commands[name] = sorted(
            option
            for action in parser._actions
            for option in (action.option_strings or [action.dest])
        )
    assert commands == INVENTORY["commands"]
