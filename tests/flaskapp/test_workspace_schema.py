"""The ``workspace`` query parameter in the OpenAPI schema (issue 35): every operation
whose view reads it (the create operations that take their workspace from it, the
lists it filters) documents it, with what it does, so clients and the Python client
see where an object is made."""

from __future__ import annotations

import inspect

import pytest
from drf_spectacular.generators import SchemaGenerator

CREATES = [
    ("/api/rubrics/import/", "post"),
    ("/api/datasets/{dataset_name}/imports/", "post"),
    ("/api/datasets/{dataset_name}/preferences/", "post"),
    ("/api/judges/", "post"),
]


@pytest.fixture
def schema(api_client_for, researcher):
    response = api_client_for(researcher).get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return response.json()


def _workspace_parameter(schema, path, method):
    operation = schema["paths"][path][method]
    found = [
        p
        for p in operation.get("parameters", [])
        if p["name"] == "workspace" and p["in"] == "query"
    ]
    return found[0] if found else None


def _operations_reading_the_parameter():
    """(path, method) of every API operation whose view method reads
    ``query_params.get("workspace")``, found from the code, not listed by hand."""
    generator = SchemaGenerator()
    generator._initialise_endpoints()
    found = set()
    for path, _regex, method, callback in generator.endpoints:
        handler = getattr(getattr(callback, "cls", None), method.lower(), None)
        if handler is None:
            continue
        if 'query_params.get("workspace")' in inspect.getsource(handler):
            found.add((path, method.lower()))
    return found


@pytest.mark.parametrize(("path", "method"), CREATES)
def test_create_operations_document_the_workspace_they_create_in(schema, path, method):
    parameter = _workspace_parameter(schema, path, method)
    assert parameter is not None, f"{method.upper()} {path} does not list it"
    assert parameter["schema"]["type"] == "integer"
    assert parameter.get("required", False) is False
    assert "create in" in parameter["description"]


def test_every_operation_that_reads_the_parameter_documents_it(schema):
    readers = _operations_reading_the_parameter()
    assert set(CREATES) <= readers  # the scan sees the known ones
    undocumented = sorted(
        f"{m.upper()} {p}"
        for p, m in readers
        if _workspace_parameter(schema, p, m) is None
    )
    assert undocumented == []
    # A list filters by it: its description says so.
    judges_list = _workspace_parameter(schema, "/api/judges/", "get")
    assert "Only this workspace" in judges_list["description"]
