"""`sniff_upload`: the upload page's guess of a file's import kind, format, columns and
field mapping (pure: no database)."""

from __future__ import annotations

import gzip
import io
import json

import pytest

from annotation.importers import generic, preferences
from annotation.importers.sniff import (
    ALIASES,
    DATASET,
    GOLD,
    JUDGE_RESULTS,
    KIND_FORMATS,
    PREFERENCES,
    RUBRIC,
    sniff_upload,
)
from flaskapp.optional import PARQUET
from judging.services.import_rows import GENERIC_FIELDS


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


EVAL_ROW = {
    "idx": 1,
    "instruction": "Why is the sky blue?",
    "answer": "Scattering.",
    "task": "qa",
    "skill": ["Factuality"],
    "domain": ["Natural Science"],
    "difficulty": "simple lifestyle knowledge",
}


@pytest.mark.parametrize(
    ("name", "data", "kind", "fmt"),
    [
        ("eval_set.jsonl", jsonl(EVAL_ROW), DATASET, "flask"),
        (
            "legacy.jsonl",
            jsonl({"question_id": 1, "text": "Hi", "metrics": ["Factuality"]}),
            DATASET,
            "flask",
        ),
        (
            "gpt4.jsonl",
            jsonl({"question_id": 1, "text": "Out."}),
            DATASET,
            "flask_outputs",
        ),
        (
            "rows.jsonl",
            jsonl({"instruction": "Hi", "response": "Yo"}),
            DATASET,
            "jsonl",
        ),
        ("rows.csv", b"instruction,response,model\nHi,Yo,m\n", DATASET, "csv"),
        ("r.yaml", b"name: R\ncriteria:\n  - key: a\n    name: A\n", RUBRIC, "rubric"),
        (
            "r.json",
            json.dumps({"name": "R", "criteria": []}, indent=2).encode(),
            RUBRIC,
            "rubric",
        ),
        (
            "skillset_description.json",
            json.dumps(
                [{"Skill": "A", "Criteria": "c", "Scoring": {"1": "x"}}]
            ).encode(),
            RUBRIC,
            "rubric",
        ),
        ("marks.csv", b"response_id,factuality,tolerance\n1,4,0\n", GOLD, "csv"),
        (
            "prefs.jsonl",
            jsonl({"prompt": "p", "response_1": "a", "response_2": "b", "label": 1}),
            PREFERENCES,
            "jsonl",
        ),
        (
            "scores.csv",
            b"id,model,skill,score\n1,m,Factuality,4\n",
            JUDGE_RESULTS,
            "csv",
        ),
        (
            "gpt4_review.jsonl",
            jsonl({"question_id": 1, "text": "q", "review": "r", "score": [4]}),
            JUDGE_RESULTS,
            "flask_review",
        ),
    ],
)
def test_each_kind_and_format_is_recognised(name, data, kind, fmt):
    guess = sniff_upload(name=name, data=data)
    assert (guess.kind, guess.fmt) == (kind, fmt), guess.reason
    assert not guess.ambiguous and guess.reason
    assert fmt in KIND_FORMATS[kind]


def test_columns_are_listed_in_file_order_and_usual_names_are_mapped():
    guess = sniff_upload(
        name="export.csv", data=b"question,output,model_name\nWhy?,Because.,m\n"
    )
    assert guess.kind == DATASET and guess.fmt == "csv"
    assert guess.columns == ["question", "output", "model_name"]
    assert guess.mapping == {
        "instruction": "question",
        "response": "output",
        "model": "model_name",
    }
    assert guess.mapping_lines() == [
        "instruction=question",
        "response=output",
        "model=model_name",
    ]


def test_a_preference_file_with_a_b_columns_gets_its_mapping():
    guess = sniff_upload(
        name="arena.jsonl",
        data=jsonl({"prompt": "p", "response_a": "x", "response_b": "y", "winner": 1}),
    )
    assert guess.kind == PREFERENCES
    assert guess.mapping == {
        "response_1": "response_a",
        "response_2": "response_b",
        "label": "winner",
    }


def test_a_gzip_file_is_read_inside():
    guess = sniff_upload(name="rows.jsonl.gz", data=gzip.compress(jsonl(EVAL_ROW)))
    assert guess.container == "gzip jsonl"
    assert (guess.kind, guess.fmt) == (DATASET, "flask")


@pytest.mark.skipif(not PARQUET.available(), reason="pyarrow is not installed")
def test_a_parquet_file_is_read_by_its_content_with_the_mapping():
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table({"prompt": ["Why?"], "completion": ["Because."]}), buffer)
    guess = sniff_upload(name="train-00000.parquet", data=buffer.getvalue())
    assert guess.container == "parquet"
    assert (guess.kind, guess.fmt) == (DATASET, "jsonl")
    assert guess.mapping == {"instruction": "prompt", "response": "completion"}


def test_an_ambiguous_file_asks_and_names_both_kinds():
    # An instruction and a model, a criterion column, no response text: gold items'
    # expected scores, or a dataset's instructions? The page must ask.
    guess = sniff_upload(
        name="sheet.csv", data=b"instruction,model,factuality\n1,m,4\n"
    )
    assert guess.ambiguous and guess.kind is None and guess.fmt is None
    assert set(guess.candidates) == {GOLD, DATASET}
    assert "gold" in guess.reason and "dataset" in guess.reason
    # The file's name settles it when it says which.
    assert (
        sniff_upload(
            name="gold.csv", data=b"instruction,model,factuality\n1,m,4\n"
        ).kind
        == GOLD
    )


def test_a_file_of_unknown_columns_asks_with_no_candidate():
    guess = sniff_upload(name="x.csv", data=b"a,b,c\n1,2,3\n")
    assert guess.ambiguous and guess.candidates == []
    assert guess.columns == ["a", "b", "c"]
    assert "no column" in guess.reason


def test_unreadable_files_say_why():
    assert sniff_upload(name="e.csv", data=b"").problems
    broken = sniff_upload(name="x.gz", data=b"\x1f\x8bnot gzip")
    assert broken.ambiguous and "gzip" in broken.reason
    yaml_only = sniff_upload(name="notes.yaml", data=b"title: x\n")
    assert yaml_only.ambiguous and "criteria" in yaml_only.reason


def test_the_aliases_name_fields_the_importers_read():
    """One rule, one home: the proposed mapping names only fields of each kind's own
    importer (a renamed field there fails here)."""
    assert set(ALIASES[DATASET]) <= set(generic.FIELDS)
    assert set(ALIASES[PREFERENCES]) <= set(preferences.FIELDS)
    assert set(ALIASES[JUDGE_RESULTS]) <= set(GENERIC_FIELDS)
