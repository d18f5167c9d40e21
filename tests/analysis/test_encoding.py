"""CSV injection: every CSV the app writes neutralises formula-like text cells with a
leading apostrophe (OWASP), keeps numbers as numbers, and JSON Lines stays unchanged."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.urls import reverse

from analysis.exports.encoding import (
    FORMULA_STARTS,
    ROWS_PER_WRITE,
    csv_cell,
    csv_text,
    jsonl,
)
from annotation.models import HumanPreference, HumanScore, PreferencePair
from judging.models import JudgeScore
from tests.analysis.agreement_data import make_agreement_setup

# One model name, id and rationale per dangerous first character.
EVIL = [f"{c}cmd|' /C calc'!A0" for c in FORMULA_STARTS]
SAFE = ["alpha", "'quoted", "1+1", "a=b", " plain", ""]
HIDDEN = [" =1+1", "\u00a0@SUM(A1)", "\n-2+3"]


@pytest.mark.parametrize("text", EVIL)
def test_each_formula_character_gets_a_leading_apostrophe(text):
    assert csv_cell(text) == "'" + text
    assert csv_text([[text]]).startswith("\"'" if text[0] in "\r" else "'")


@pytest.mark.parametrize("text", HIDDEN)
def test_whitespace_before_a_formula_character_is_neutralised(text):
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("text", SAFE)
def test_other_text_is_written_as_it_is(text):
    assert csv_cell(text) == text


@pytest.mark.parametrize("number", [0, 3, -1, -2.5, 1e-9, Decimal("-0.25")])
def test_numbers_stay_numbers(number):
    assert csv_cell(number) == number
    assert csv_text([[number]]) == f"{number}\r\n"


def test_other_values_follow_the_contract():
    assert csv_cell(None) == ""
    assert csv_cell(True) == "true" and csv_cell(False) == "false"
    assert csv_cell(["-a", "b"]) == "'-a;b"
    assert csv_cell({}) == ""
    assert csv_cell({"b": 1, "a": "x"}) == '{"a": "x", "b": 1}'
    assert csv_cell(["math", "coding"]) == "math;coding"


def test_jsonl_is_unchanged():
    rows = [{"model": t, "score": -1} for t in EVIL]
    lines = "".join(jsonl(rows)).splitlines()
    assert [json.loads(x) for x in lines] == rows


# --- Every CSV the app writes ------------------------------------------------------------


@pytest.fixture
def evil_setup(researcher):
    """Two models whose names start with a formula character; every human and judge
    rationale starts with one too; one instruction id does."""
    models = ('=HYPERLINK("http://x")', "-2+3")
    s = make_agreement_setup(
        researcher,
        human={(i, m, "factuality"): [3, 4, 2] for i in range(4) for m in models},
        judges=[{(i, m, "factuality"): 4 for i in range(4) for m in models}],
        n_instructions=4,
        models=models,
        name="evil-set",
    )
    HumanScore.objects.filter(assignment__campaign=s.campaign).update(
        rationale="@SUM(A1:A9)"
    )
    JudgeScore.objects.filter(call__run=s.runs[0]).update(rationale="+cmd")
    s.dataset.instructions.filter(external_id="q0").update(external_id="=q0")
    return s


def rows_of(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def assert_neutralised(rows: list[dict], columns: list[str]):
    seen = 0
    for row in rows:
        for column in columns:
            value = row[column]
            assert not (value and value[0] in FORMULA_STARTS), (column, value)
            seen += value.startswith("'")
    assert seen, "no neutralised cell was checked"


def body(response) -> str:
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def test_scores_export_api_and_command(evil_setup, api_client_for, researcher):
    url = reverse("analysis_api:dataset-export", args=[evil_setup.dataset.pk])
    response = api_client_for(researcher).get(url)
    assert response.status_code == 200
    text = body(response)
    rows = rows_of(text)
    assert_neutralised(rows, ["model", "rationale", "instruction_external_id"])
    assert {r["model"] for r in rows} == {'\'=HYPERLINK("http://x")', "'-2+3"}
    assert {r["score"] for r in rows} == {"2", "3", "4"}

    out = io.StringIO()
    call_command("export", "--dataset", evil_setup.dataset.name, stdout=out)
    assert out.getvalue() == text

    as_jsonl = api_client_for(researcher).get(url, {"format": "jsonl"})
    models = {json.loads(x)["model"] for x in body(as_jsonl).splitlines()}
    assert models == {'=HYPERLINK("http://x")', "-2+3"}


def test_agreement_csvs(evil_setup, client_for, researcher):
    s = evil_setup
    params = {"campaign": [s.campaign.pk], "run": [s.runs[0].pk], "n_boot": 0}
    models_csv = client_for(researcher).get(
        reverse("analysis:agreement-csv", args=[s.dataset.pk, "models"]), params
    )
    assert models_csv.status_code == 200
    assert_neutralised(rows_of(body(models_csv)), ["model"])

    drill = client_for(researcher).get(
        reverse("analysis:agreement-skill-csv", args=[s.dataset.pk, "factuality"]),
        {**params, "judge": s.runs[0].pk},
    )
    assert drill.status_code == 200
    rows = rows_of(body(drill))
    columns = [c for c in rows[0] if "rationale" in c or c in ("model", "instruction")]
    assert_neutralised(rows, columns)


def test_preferences_export(evil_setup, api_client_for, researcher):
    s = evil_setup
    instruction = s.dataset.instructions.get(position=0)
    r1, r2 = instruction.responses.order_by("model_name")
    pair = PreferencePair.objects.create(
        dataset=s.dataset, instruction=instruction, response_1=r1, response_2=r2
    )
    HumanPreference.objects.create(
        pair=pair,
        label="1",
        origin=HumanPreference.Origin.IMPORTED,
        source_key="k1",
        rationale="=1+1",
    )
    url = reverse("analysis_api:dataset-preferences-export", args=[s.dataset.pk])
    rows = rows_of(body(api_client_for(researcher).get(url)))
    assert len(rows) == 1
    columns = [c for c in rows[0] if "model" in c or c in ("rationale",)]
    assert_neutralised(rows, columns)
    assert rows[0]["rationale"] == "'=1+1"


def test_json_lines_are_json_dumps_of_each_row_unchanged():
    """One reused encoder writes what `json.dumps(row, ensure_ascii=False)` writes,
    across chunk boundaries (no escaping of non-ASCII text, formulas untouched)."""
    rows = [
        {"text": "é — ☃ \u2028", "n": i, "x": 0.1 * i, "ok": i % 2 == 0,
         "none": None, "list": ["a", i], "formula": "=1+1"}
        for i in range(ROWS_PER_WRITE + 3)
    ]  # fmt: skip
    out = "".join(jsonl(rows))
    expected = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    assert out == expected
