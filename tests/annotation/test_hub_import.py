"""Hugging Face datasets in: `import_dataset DIR` reads a directory saved with
`datasets.Dataset.save_to_disk` / `DatasetDict.save_to_disk`, or the Parquet / JSON
Lines files a Hub dataset consists of, with the same --map field mapping and the
same line-named problems as a file (issue 35). The directories are made by the real
`datasets` library (requirements-dev.txt)."""

from __future__ import annotations

import io
import json

import datasets
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Dataset, Instruction, Response
from tests.annotation.support_data import TICKETS, support_rows, write_taxonomy

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue()


def refused(*args) -> str:
    with pytest.raises(CommandError) as exc:
        run(*args)
    return str(exc.value)


def hf_rows(rows=None) -> list[dict]:
    """The support rows with one type per column, as a `datasets.Dataset` needs."""
    out = []
    for row in rows or support_rows():
        row = dict(row)
        row["difficulty"] = (
            None if row["difficulty"] is None else str(row["difficulty"])
        )
        out.append(row)
    return out


def stored(name: str) -> dict:
    """What the dataset holds: instruction id -> (text, domains, level, metadata,
    {model: response})."""
    dataset = Dataset.objects.get(name=name)
    out = {
        i.external_id: (i.text, i.domains, i.difficulty, i.metadata, {})
        for i in Instruction.objects.filter(dataset=dataset)
    }
    for r in Response.objects.filter(instruction__dataset=dataset).select_related(
        "instruction"
    ):
        out[r.instruction.external_id][4][r.model_name] = r.text
    return out


def test_a_save_to_disk_directory_imports_as_the_same_dataset(tmp_path):
    saved = tmp_path / "support"
    datasets.Dataset.from_list(hf_rows()).save_to_disk(str(saved))
    taxonomy = write_taxonomy(tmp_path / "taxonomy.json")

    out = run("import_dataset", str(saved), "--dataset", "hf-support",
              "--taxonomy", str(taxonomy), "--facet", "language")  # fmt: skip

    assert "created:       6 instructions, 12 responses" in out
    got = stored("hf-support")
    assert sorted(got) == sorted(t[0] for t in TICKETS)
    for ext_id, text, _, _, channel, language in TICKETS:
        assert got[ext_id][0] == text
        assert got[ext_id][3] == {"channel": channel.lower(), "language": language}
        assert set(got[ext_id][4]) == {"helper-a", "helper-b"}
    assert got["t3"][1:3] == (["account"], 1)
    assert got["t4"][1:3] == (["billing", "shipping"], 3)


def test_a_dataset_dict_needs_a_split_when_it_has_several(tmp_path):
    saved = tmp_path / "dd"
    ds = datasets.Dataset.from_list(hf_rows())
    datasets.DatasetDict({"train": ds, "test": ds.select(range(4))}).save_to_disk(
        str(saved)
    )
    taxonomy = str(write_taxonomy(tmp_path / "taxonomy.json"))

    message = refused("import_dataset", str(saved), "--dataset", "dd",
                      "--taxonomy", taxonomy)  # fmt: skip
    assert "field `split`: it holds the splits train, test; choose one (--split)" \
        in message  # fmt: skip
    message = refused("import_dataset", str(saved), "--dataset", "dd",
                      "--taxonomy", taxonomy, "--split", "validation")  # fmt: skip
    assert "it has no split 'validation'; its splits are: train, test" in message

    out = run("import_dataset", str(saved), "--dataset", "dd", "--taxonomy", taxonomy,
              "--split", "test")  # fmt: skip
    assert "created:       2 instructions, 4 responses" in out


def test_hub_parquet_and_jsonl_files_import_with_a_field_mapping(tmp_path):
    renamed = [
        {"ticket": r["id"], "prompt": r["instruction"], "system": r["model"],
         "completion": r["response"]}
        for r in support_rows()
    ]  # fmt: skip
    repo = tmp_path / "repo"
    (repo / "data").mkdir(parents=True)
    ds = datasets.Dataset.from_list(renamed)
    ds.select(range(8)).to_parquet(str(repo / "data" / "train-00000-of-00002.parquet"))
    ds.select(range(8, 12)).to_parquet(
        str(repo / "data" / "train-00001-of-00002.parquet")
    )
    ds.select(range(2)).to_json(str(repo / "data" / "test-00000-of-00001.jsonl"))
    (repo / "README.md").write_text("---\nlicense: cc-by-4.0\n---\n# tickets\n")

    out = run("import_dataset", str(repo), "--dataset", "hub", "--split", "train",
              "--map", "id=ticket", "--map", "instruction=prompt",
              "--map", "model=system", "--map", "response=completion")  # fmt: skip

    assert "created:       6 instructions, 12 responses" in out
    assert (
        Response.objects.get(instruction__external_id="t6", model_name="helper-b").text
        == "Please contact support about ticket t6."
    )


def test_a_bad_row_in_an_arrow_file_names_its_row_and_field(tmp_path):
    rows = hf_rows()
    rows[2]["domains"] = ["astrology"]
    saved = tmp_path / "bad"
    datasets.Dataset.from_list(rows).save_to_disk(str(saved))

    message = refused("import_dataset", str(saved), "--dataset", "bad",
                      "--taxonomy", str(write_taxonomy(tmp_path / "t.json")))  # fmt: skip

    assert f"{saved}, line 3, field `domains`: unknown domain 'astrology'" in message
    assert not Dataset.objects.filter(name="bad").exists()


def test_a_mapped_column_missing_from_the_arrow_file_is_named(tmp_path):
    saved = tmp_path / "support"
    datasets.Dataset.from_list(hf_rows()).save_to_disk(str(saved))

    message = refused("import_dataset", str(saved), "--dataset", "x",
                      "--map", "instruction=prompt")  # fmt: skip

    assert "the Arrow file has no column `prompt` (for field `instruction`)" in message
    assert "data-00000-of-00001.arrow" in message


def test_a_directory_without_a_dataset_is_refused(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("hello")

    message = refused("import_dataset", str(empty), "--dataset", "x")

    assert "field `file`: no state.json (Dataset.save_to_disk)" in message


def test_a_state_json_naming_a_file_outside_is_refused(tmp_path):
    saved = tmp_path / "evil"
    saved.mkdir()
    (saved / "state.json").write_text(
        json.dumps({"_data_files": [{"filename": "../../etc/passwd"}]})
    )

    message = refused("import_dataset", str(saved), "--dataset", "x")

    assert "state.json names '../../etc/passwd', not a file in it" in message


def test_split_is_refused_for_a_plain_file(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"instruction": "Hi"}) + "\n")

    message = refused("import_dataset", str(path), "--dataset", "x", "--split", "a")

    assert message.startswith("--split: ")
