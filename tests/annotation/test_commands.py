"""`manage.py import_flask` and `manage.py import_dataset`, as a user runs them."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.builtin_rubric import BUILTIN_SKILLS
from annotation.models import Dataset, Instruction, Response, Rubric

pytestmark = pytest.mark.django_db

EVAL = [
    {
        "idx": 1,
        "instruction": "What is 2 + 2?",
        "answer": "4",
        "task": "arithmetic",
        "skill": ["Logical Correctness", "Conciseness", "Readability"],
        "domain": ["Math"],
        "difficulty": "simple lifestyle knowledge",
    },
    {
        "idx": 2,
        "instruction": "Name a primary colour.",
        "answer": "Red",
        "task": "colours",
        "skill": ["Factuality", "Comprehension"],
        "domain": ["-1"],
        "difficulty": -1,
    },
]


def write_jsonl(path, *rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def counts() -> tuple[int, int, int, int]:
    return (
        Dataset.objects.count(),
        Instruction.objects.count(),
        Response.objects.count(),
        Rubric.objects.count(),
    )


@pytest.fixture
def release(tmp_path):
    """A small FLASK-shaped folder: eval set, two output files, a FLASK-Hard set."""
    eval_path = write_jsonl(tmp_path / "flask_evaluation.jsonl", *EVAL)
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    write_jsonl(
        outputs / "gpt4_review.jsonl",
        {"question_id": 1, "text": "4"},
        {"question_id": 2, "text": "Red"},
    )
    write_jsonl(outputs / "bard.jsonl", {"question_id": 1, "text": "Four"})
    (outputs / "README.txt").write_text("not an outputs file")
    hard = write_jsonl(
        tmp_path / "flask_hard_evaluation.jsonl",
        {**EVAL[1], "idx": 1},
        {**EVAL[0], "idx": 2, "instruction": "What is 2+2? (edited)"},
    )
    return {"eval": eval_path, "outputs": outputs, "hard": hard, "dir": tmp_path}


# --- import_flask ----------------------------------------------------------------------


def test_import_flask_with_an_outputs_directory_prints_the_summary(release):
    out, _ = run(
        "import_flask", str(release["eval"]), "--outputs", str(release["outputs"])
    )

    assert (
        "Dataset 'flask_evaluation' (rubric FLASK v1)" in out
    )  # default: the file's stem
    assert "rows read:     5" in out
    assert "created:       2 instructions, 3 responses" in out
    assert "unchanged:     0" in out
    assert "models:        2 (bard, gpt4)" in out
    assert "time:" in out
    assert Instruction.objects.filter(dataset__name="flask_evaluation").count() == 2
    assert sorted(Response.objects.values_list("model_name", flat=True)) == [
        "bard",
        "gpt4",
        "gpt4",
    ]


def test_import_flask_twice_reports_everything_unchanged(release):
    run("import_flask", str(release["eval"]), "--outputs", str(release["outputs"]))
    before = counts()

    out, _ = run(
        "import_flask", str(release["eval"]), "--outputs", str(release["outputs"])
    )

    assert "created:       0 instructions, 0 responses" in out
    assert "unchanged:     5" in out
    assert counts() == before


def test_import_flask_outputs_as_files_with_dataset_and_model(release):
    out, _ = run(
        "import_flask",
        str(release["eval"]),
        "--dataset",
        "mine",
        "--outputs",
        str(release["outputs"] / "bard.jsonl"),
        "--model",
        "bard-2023",
    )

    assert "Dataset 'mine'" in out
    assert list(Response.objects.values_list("model_name", flat=True)) == ["bard-2023"]


def test_import_flask_failure_names_the_line_and_writes_nothing(release):
    bad = release["dir"] / "bad.jsonl"
    bad.write_text(
        json.dumps(EVAL[0])
        + "\n"
        + json.dumps({"idx": 2, "instruction": "x", "skill": ["Logical"]})
        + "\n"
        + "{not json\n"
    )
    before = counts()
    err = io.StringIO()

    with pytest.raises(CommandError) as exc:
        call_command(
            "import_flask",
            str(bad),
            "--outputs",
            str(release["outputs"]),
            stdout=io.StringIO(),
            stderr=err,
        )

    message = str(exc.value)
    assert message.startswith(
        "the file was not imported (2 problems; all are listed above)"
    )
    assert f"{bad}, line 2, field `skill`: unknown skill 'Logical'" in message
    assert err.getvalue().splitlines() == [
        f"{bad}, line 2, field `skill`: unknown skill 'Logical'; it is not in the dataset's "
        "rubric",
        f"{bad}, line 3: invalid JSON (Expecting property name enclosed in double quotes at "
        "column 2)",
    ]
    assert counts() == before


def test_import_flask_bad_outputs_file_leaves_no_dataset(release):
    (release["outputs"] / "zz_broken.jsonl").write_text('{"question_id": 1}\n')
    before = counts()

    with pytest.raises(
        CommandError, match=r"zz_broken.jsonl, line 1, field `text`: is missing"
    ):
        run("import_flask", str(release["eval"]), "--outputs", str(release["outputs"]))

    assert counts() == before


def test_import_flask_dry_run_writes_nothing(release):
    before = counts()

    out, _ = run(
        "import_flask",
        str(release["eval"]),
        "--outputs",
        str(release["outputs"]),
        "--dry-run",
    )

    assert out.startswith("Dry run, nothing written.")
    assert "would create:  2 instructions, 3 responses" in out
    assert counts() == before


def test_import_flask_hard_set_marks_matches_and_lists_the_rest(release):
    out, _ = run(
        "import_flask", str(release["eval"]), "--hard-set", str(release["hard"])
    )

    assert "FLASK-Hard:    1 instructions marked" in out
    assert f"{release['hard']}, line 2 (id 2)" in out
    assert list(
        Instruction.objects.filter(is_hard=True).values_list("external_id", flat=True)
    ) == ["2"]


def test_import_flask_hard_flag_marks_everything(release):
    run("import_flask", str(release["hard"]), "--hard")

    assert Instruction.objects.filter(is_hard=True).count() == 2


def test_import_flask_rubric_file_only_for_a_new_dataset(release):
    rubric = release["dir"] / "skillset_description.json"
    rubric.write_text(
        json.dumps(
            [
                {
                    "Skill": name,
                    "Criteria": criteria,
                    "Scoring": {str(i + 1): a for i, a in enumerate(anchors)},
                }
                for _, name, _, criteria, anchors in BUILTIN_SKILLS
            ]
        )
    )

    out, _ = run("import_flask", str(release["eval"]), "--rubric", str(rubric))

    assert "(rubric FLASK (imported) v1)" in out
    before = counts()
    with pytest.raises(
        CommandError, match="a rubric file can only be given for a new dataset"
    ):
        run("import_flask", str(release["eval"]), "--rubric", str(rubric))
    assert counts() == before


def test_import_flask_missing_file_and_empty_directory_are_refused(release, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()

    with pytest.raises(CommandError, match="no such file"):
        run("import_flask", str(tmp_path / "nope.jsonl"))
    with pytest.raises(CommandError, match="the directory has no \\*.jsonl file"):
        run("import_flask", str(release["eval"]), "--outputs", str(empty))
    with pytest.raises(
        CommandError, match="--model names the model of one outputs file"
    ):
        run(
            "import_flask",
            str(release["eval"]),
            "--outputs",
            str(release["outputs"]),
            "--model",
            "x",
        )


def test_import_flask_refuses_an_oversized_file_before_reading_it(release, settings):
    settings.IMPORT_MAX_BYTES = 10

    with pytest.raises(CommandError, match="over the import limit of 10 bytes"):
        run("import_flask", str(release["eval"]))

    assert counts()[0] == 0


# --- import_dataset --------------------------------------------------------------------

CSV = (
    "prompt,system,output\n"
    "Name a colour.,m1,Red\n"
    "Name a colour.,m2,Blue\n"
    "Say hi.,m1,Hi!\n"
)


def test_import_dataset_csv_with_mapping(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text(CSV)

    out, _ = run(
        "import_dataset",
        str(path),
        "--dataset",
        "gen",
        "--map",
        "instruction=prompt",
        "--map",
        "model=system",
        "--map",
        "response=output",
    )

    assert "created:       2 instructions, 3 responses" in out
    assert "models:        2 (m1, m2)" in out
    assert Response.objects.filter(instruction__dataset__name="gen").count() == 3


def test_import_dataset_jsonl_with_a_default_model(tmp_path):
    path = tmp_path / "rows.jsonl"
    write_jsonl(path, {"instruction": "Say hi.", "response": "Hi!"})

    run("import_dataset", str(path), "--dataset", "gen", "--model", "solo")

    assert list(Response.objects.values_list("model_name", "text")) == [("solo", "Hi!")]


def test_import_dataset_dry_run_writes_nothing(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text(CSV)

    out, _ = run(
        "import_dataset",
        str(path),
        "--dataset",
        "gen",
        "--dry-run",
        "--map",
        "instruction=prompt",
        "--map",
        "model=system",
        "--map",
        "response=output",
    )

    assert "would create:  2 instructions, 3 responses" in out
    assert counts()[:3] == (0, 0, 0)


def test_import_dataset_missing_column_fails_naming_it(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text(CSV)
    err = io.StringIO()

    with pytest.raises(CommandError) as exc:
        call_command(
            "import_dataset",
            str(path),
            "--dataset",
            "gen",
            "--map",
            "instruction=question",
            stdout=io.StringIO(),
            stderr=err,
        )

    expected = (
        f"{path}, line 1: the CSV header has no column `question` (for field `instruction`); "
        "its columns are: prompt, system, output"
    )
    assert str(exc.value) == f"the file was not imported: {expected}"
    assert err.getvalue().strip() == expected
    assert counts()[:3] == (0, 0, 0)


def test_import_dataset_format_comes_from_the_extension_or_the_option(tmp_path):
    path = tmp_path / "rows.txt"
    write_jsonl(path, {"instruction": "Say hi."})

    with pytest.raises(CommandError, match="pass --format jsonl or --format csv"):
        run("import_dataset", str(path), "--dataset", "gen")
    out, _ = run("import_dataset", str(path), "--dataset", "gen", "--format", "jsonl")

    assert "created:       1 instructions, 0 responses" in out


def test_import_dataset_bad_mapping_is_refused(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text(CSV)

    with pytest.raises(
        CommandError, match="--map prompt=instruction: unknown field 'prompt'"
    ):
        run(
            "import_dataset",
            str(path),
            "--dataset",
            "gen",
            "--map",
            "prompt=instruction",
        )
