"""Every API operation, fed the three hostile inputs of issue 34: no 500, a 4xx.

`test_api_fuzz` lets Schemathesis generate requests from the OpenAPI schema; random
generation almost never produces these three, so this test sends them on purpose,
in a loop over every operation of ``/api/schema/`` (in-process, through the WSGI
application, as an admin and as a rater, with the seeded ids of `test_api_fuzz`):

- an integer of more than 4,300 digits (Python's int-str limit): as the JSON body's
  value of every property, as every query parameter, and as every path id;
- JSON nested 10,000 levels deep: as the body, and as every query parameter;
- a string longer than the longest text limit (`flaskapp.limits`): as every string
  property of the body (every other property keeps a valid-looking value) and as
  every query parameter.

Never a 5xx. A hostile body, path id or whole-number query parameter is a 4xx (a
body that is not JSON, or is not what the operation reads, is refused too). Two
kinds of query parameter may answer 2xx: ``limit``, lenient by design
(`flaskapp.api.Pagination`: garbage means the default page), and text filters
(``q``, ``model``, ...), where any text is a question whose answer is "no match".
Run with ``-s`` to see the figures.
"""

from __future__ import annotations

import collections
import json
import time

import pytest
from django.test import Client

from flaskapp import limits
from flaskapp.untrusted import MAX_INT_DIGITS
from tests.factories import api_token
from tests.flaskapp.test_api_fuzz import celery_in_memory, seeded

__all__ = ["celery_in_memory", "seeded"]  # fixtures, used by name

LONG_INT = "9" * (MAX_INT_DIGITS + 700)
DEPTH = 10_000
DEEP = "[" * DEPTH + "]" * DEPTH
LONGEST_LIMIT = max(
    v for k, v in vars(limits).items() if k.isupper() and isinstance(v, int)
)
OVERSIZE = "x" * (LONGEST_LIMIT + 1)
METHODS = ("get", "post", "put", "patch", "delete")
LENIENT_PARAMS = {"limit"}  # flaskapp.api.Pagination: garbage is the default page


def _resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _is_text(param: dict) -> bool:
    """Whether a query parameter is text (a filter), in any of its schema's forms."""
    node = param.get("schema", {})
    options = node.get("oneOf") or node.get("anyOf") or [node]
    return all(option.get("type") == "string" for option in options)


def _properties(schema: dict, body: dict) -> dict[str, dict]:
    """The JSON body's top-level properties (name -> resolved schema)."""
    content = body.get("content", {})
    media = content.get("application/json") or next(iter(content.values()), {})
    node = _resolve(schema, media.get("schema", {}))
    return {
        name: _resolve(schema, prop)
        for name, prop in node.get("properties", {}).items()
    }


def _plain_value(prop: dict):
    """A value of the property's type that is not hostile (the other fields)."""
    kind = prop.get("type")
    if "enum" in prop and prop["enum"]:
        return prop["enum"][0]
    return {
        "integer": 1,
        "number": 1,
        "boolean": False,
        "array": [],
        "object": {},
    }.get(kind, "x")


def _bodies(schema: dict, op: dict) -> list[tuple[str, str]]:
    """(label, JSON text) of the hostile bodies of an operation with a body."""
    props = _properties(schema, op["requestBody"])
    long_ints = ", ".join(f'"{name}": {LONG_INT}' for name in props)
    bodies = [
        ("long int in every property", "{" + long_ints + "}"),
        ("deep array body", DEEP),
        ("deep property", "{" + ", ".join(f'"{n}": {DEEP}' for n in props) + "}"),
    ]
    strings = [n for n, p in props.items() if p.get("type", "string") == "string"]
    for name in strings:
        values = {n: _plain_value(p) for n, p in props.items()}
        values[name] = OVERSIZE
        bodies.append((f"oversize {name}", json.dumps(values)))
    if not props:
        bodies.append(("oversize body", json.dumps({"text": OVERSIZE})))
    return bodies


def _path(template: str, op: dict, known: dict, *, hostile: bool) -> str:
    path = template
    for param in op.get("parameters", []):
        if param["in"] != "path":
            continue
        name = param["name"]
        if hostile:
            value = LONG_INT
        elif "pairwise" in template and name == "campaign_id":
            value = known["pairwise_campaign_id"]
        else:
            value = known.get(name, 1)
        path = path.replace("{" + name + "}", str(value))
    return path


def _operations(schema: dict):
    ops = [
        (path, method, op)
        for path, item in schema["paths"].items()
        for method, op in item.items()
        if method in METHODS
    ]
    # Revoking tokens (DELETE /api/auth/token(s)/) ends the role's token: last.
    ops.sort(key=lambda o: o[0].startswith("/api/auth/"))
    return ops


def _send(client: Client, method: str, path: str, *, body=None, query=None):
    kwargs = {}
    if body is not None:
        kwargs = {"data": body, "content_type": "application/json"}
    if query is not None:
        path = path + "?" + query
    return getattr(client, method)(path, **kwargs)


@pytest.mark.django_db(transaction=True)
def test_every_operation_refuses_long_ints_deep_nesting_and_oversize_text(
    seeded, celery_in_memory, capsys
):
    from urllib.parse import urlencode

    users, known = seeded
    admin = Client()
    admin.defaults["HTTP_AUTHORIZATION"] = f"Token {api_token(users['admin'])}"
    schema = admin.get("/api/schema/", {"format": "json"}).json()
    operations = _operations(schema)
    assert len(operations) > 50
    started = time.monotonic()
    figures: dict[str, collections.Counter] = {}
    failures: list[str] = []
    for role in ("admin", "rater"):
        client = Client()
        client.defaults["HTTP_AUTHORIZATION"] = f"Token {api_token(users[role])}"
        tally = figures[role] = collections.Counter()

        def check(label, response, tally=tally, role=role, refused=True):
            tally["requests"] += 1
            tally[f"{response.status_code // 100}xx"] += 1
            status = response.status_code
            if status >= 500 or (refused and not 400 <= status < 500):
                failures.append(f"{role} {label}: {status}")

        for template, method, op in operations:
            where = f"{method.upper()} {template}"
            path = _path(template, op, known, hostile=False)
            if "{" in template:
                hostile = _path(template, op, known, hostile=True)
                check(f"{where} long int path", _send(client, method, hostile))
            if "requestBody" in op:
                for label, body in _bodies(schema, op):
                    check(f"{where} {label}", _send(client, method, path, body=body))
            for param in op.get("parameters", []):
                if param["in"] != "query":
                    continue
                name = param["name"]
                refused = not _is_text(param) and name not in LENIENT_PARAMS
                for label, value in (
                    ("long int", LONG_INT),
                    ("deep", DEEP),
                    ("oversize", OVERSIZE),
                ):
                    query = urlencode({name: value})
                    response = _send(client, method, path, query=query)
                    check(f"{where} ?{name}= {label}", response, refused=refused)
    seconds = time.monotonic() - started
    with capsys.disabled():
        print(f"\nAPI hostile inputs: {len(operations)} operations, {seconds:.1f} s")
        for role, tally in figures.items():
            print(f"  {role:<6} " + "  ".join(f"{k} {v}" for k, v in tally.items()))
        for failure in failures[:80]:
            print(f"  HOSTILE FAILURE {failure}")
    assert failures == [], "\n".join(failures[:60])
