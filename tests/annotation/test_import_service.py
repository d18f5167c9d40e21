"""The import service: validate every row, write in one transaction, change nothing on error."""

from __future__ import annotations

import json

import pytest
from django.db import IntegrityError, connection, transaction

from annotation.builtin_rubric import BUILTIN_SKILLS
from annotation.models import (
    Dataset,
    ImportJob,
    Instruction,
    InstructionSkill,
    Response,
    Rubric,
    Skill,
)
from annotation.services.flask import dataset_import_flask
from annotation.services.hard import instruction_mark_hard
from annotation.services.import_jobs import (
    import_job_confirm,
    import_job_create,
    import_job_execute,
)
from annotation.services.imports import dataset_import_files
from annotation.services.rubrics import rubric_get_default, rubric_import
from flaskapp.errors import DomainError

pytestmark = pytest.mark.django_db

GOOD = [
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
        "skill": ["Factuality", "Comprehension", "Conciseness"],
        "domain": ["Culture", "-1"],
        "difficulty": -1,
    },
]


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def counts() -> dict[str, int]:
    """What a user would see change: datasets, instructions, responses, links, rubrics."""
    return {
        "datasets": Dataset.objects.count(),
        "instructions": Instruction.objects.count(),
        "responses": Response.objects.count(),
        "skill_links": InstructionSkill.objects.count(),
        "rubrics": Rubric.objects.count(),
        "hard": Instruction.objects.filter(is_hard=True).count(),
    }


def import_eval(name="ds", rows=GOOD, **kwargs):
    return dataset_import_files(
        dataset_name=name, fmt="flask", files=[("eval.jsonl", jsonl(*rows))], **kwargs
    )


def refused(**kwargs) -> list[str]:
    """Run `dataset_import_files(**kwargs)`, expecting a refusal; its problems as text."""
    with pytest.raises(DomainError) as exc:
        dataset_import_files(**kwargs)
    return [str(p) for p in exc.value.problems] or [exc.value.message]


def rubric_file(skills=BUILTIN_SKILLS, suffix="") -> bytes:
    """A FLASK `skillset_description.json` built from the given skills."""
    return json.dumps(
        [
            {
                "Skill": name,
                "Criteria": criteria + suffix,
                "Scoring": {str(i + 1): anchor for i, anchor in enumerate(anchors)},
            }
            for _, name, _, criteria, anchors in skills
        ]
    ).encode()


@pytest.fixture
def existing():
    """A dataset 'ds' with the two GOOD instructions and one model's responses."""
    import_eval()
    dataset_import_files(
        dataset_name="ds",
        fmt="flask_outputs",
        files=[
            (
                "m1.jsonl",
                jsonl(
                    {"question_id": 1, "text": "4"}, {"question_id": 2, "text": "Red"}
                ),
            )
        ],
    )
    return Dataset.objects.get(name="ds")


# --- A good import ---------------------------------------------------------------------


def test_import_writes_instructions_with_their_metadata_and_ordered_skills():
    report = import_eval()

    assert (report.created_instructions, report.created_responses, report.rows) == (
        2,
        0,
        2,
    )
    first, second = Instruction.objects.filter(dataset__name="ds").order_by("position")
    assert (first.external_id, first.text, first.reference_answer) == (
        "1",
        "What is 2 + 2?",
        "4",
    )
    assert (first.domains, first.difficulty, first.source_task) == (
        ["math"],
        1,
        "arithmetic",
    )
    assert [link.skill.key for link in first.skill_links.order_by("rank")] == [
        "logical_correctness",
        "conciseness",
        "readability",
    ]
    # The sentinels -1 mean "unknown": no domain for "-1", no difficulty.
    assert (second.domains, second.difficulty) == (["culture"], None)


def test_reimport_is_a_no_op(existing):
    before = counts()

    again = import_eval()
    outputs = dataset_import_files(
        dataset_name="ds",
        fmt="flask_outputs",
        files=[
            (
                "m1.jsonl",
                jsonl(
                    {"question_id": 1, "text": "4"}, {"question_id": 2, "text": "Red"}
                ),
            )
        ],
    )

    assert (again.created_instructions, again.unchanged) == (0, 2)
    assert (outputs.created_responses, outputs.unchanged) == (0, 2)
    assert counts() == before


def test_reimport_adds_only_new_rows(existing):
    third = {**GOOD[0], "idx": 3, "instruction": "What is 3 + 3?"}

    report = import_eval(rows=[*GOOD, third])

    assert (report.created_instructions, report.unchanged) == (1, 2)
    assert Instruction.objects.get(dataset=existing, external_id="3").position == 2


def test_dry_run_counts_but_writes_nothing():
    before = counts()

    report = import_eval(dry_run=True)

    assert (report.created_instructions, report.dry_run) == (2, True)
    assert counts() == before


# --- Bad input: every problem named, nothing written -----------------------------------


def good_rows(offset: int) -> list[dict]:
    """The GOOD rows under ids and texts shifted by `offset` (new to `existing`)."""
    return [
        {
            **row,
            "idx": row["idx"] + offset,
            "instruction": f"{row['instruction']} #{offset}",
        }
        for row in GOOD
    ]


# Each case: (file made from two good rows, the problem expected). The good rows come
# first so that a partial write would show.
BAD_EVAL_FILES = {
    "invalid JSON on one line": (
        lambda good: jsonl(*good) + b'{"idx": 3, "instruction": "x",\n',
        "eval.jsonl, line 3: invalid JSON",
    ),
    "missing instruction": (
        lambda good: jsonl(*good, {"idx": 3, "answer": "x"}),
        "eval.jsonl, line 3, field `instruction`: is missing",
    ),
    "missing id": (
        lambda good: jsonl(*good, {"instruction": "x"}),
        "eval.jsonl, line 3, field `idx`: is missing or empty",
    ),
    "instruction is a number": (
        lambda good: jsonl(*good, {"idx": 3, "instruction": 17}),
        "eval.jsonl, line 3, field `instruction`: must be a string, got number",
    ),
    "skill is a string of a dict": (
        lambda good: jsonl(
            *good, {"idx": 3, "instruction": "x", "skill": '{"Factuality": 1}'}
        ),
        "eval.jsonl, line 3, field `skill`: must be a list of strings, got a string "
        "holding an object",
    ),
    "skill is a dict": (
        lambda good: jsonl(
            *good, {"idx": 3, "instruction": "x", "skill": {"Factuality": 1}}
        ),
        "eval.jsonl, line 3, field `skill`: must be a list of strings, got object",
    ),
    "unknown skill": (
        lambda good: jsonl(*good, {"idx": 3, "instruction": "x", "skill": ["Factual"]}),
        "eval.jsonl, line 3, field `skill`: unknown skill 'Factual'",
    ),
    "difficulty 0": (
        lambda good: jsonl(*good, {"idx": 3, "instruction": "x", "difficulty": 0}),
        "eval.jsonl, line 3, field `difficulty`: difficulty 0 is out of range 1-5",
    ),
    "difficulty 6": (
        lambda good: jsonl(*good, {"idx": 3, "instruction": "x", "difficulty": 6}),
        "eval.jsonl, line 3, field `difficulty`: difficulty 6 is out of range 1-5",
    ),
    "difficulty '7'": (
        lambda good: jsonl(*good, {"idx": 3, "instruction": "x", "difficulty": "7"}),
        "eval.jsonl, line 3, field `difficulty`: difficulty 7 is out of range 1-5",
    ),
    "duplicate id": (
        lambda good: jsonl(*good, {**good[0], "instruction": "Another text"}),
        "eval.jsonl, line 3: duplicate instruction id '{id}' (first seen on line 1)",
    ),
    "empty file": (lambda good: b"", "eval.jsonl: the file is empty"),
    "non-UTF-8 bytes": (
        lambda good: jsonl(*good) + b'{"idx": 3, "instruction": "na\xefve"}\n',
        "eval.jsonl, line 3: not valid UTF-8 (byte 0xef",
    ),
    "JSON array with a non-object row": (
        lambda good: json.dumps([*good, [1, 2]]).encode(),
        "eval.jsonl, line 3: expected a JSON object, got list",
    ),
    "NUL character": (
        lambda good: jsonl(*good, {"idx": 3, "instruction": "a\u0000b"}),
        "eval.jsonl, line 3, field `instruction`: contains a NUL character",
    ),
    "task longer than the column": (
        lambda good: jsonl(*good, {"idx": 3, "instruction": "x", "task": "t" * 201}),
        "eval.jsonl, line 3, field `task`: is 201 characters long; the limit is 200",
    ),
}


@pytest.mark.parametrize("case", list(BAD_EVAL_FILES))
def test_bad_eval_file_into_a_new_dataset_names_the_problem_and_creates_nothing(case):
    make, expected = BAD_EVAL_FILES[case]
    before = counts()

    problems = refused(
        dataset_name="new", fmt="flask", files=[("eval.jsonl", make(GOOD))]
    )

    assert any(p.startswith(expected.format(id=1)) for p in problems), problems
    assert counts() == before


@pytest.mark.parametrize("case", list(BAD_EVAL_FILES))
def test_bad_eval_file_into_an_existing_dataset_adds_not_even_its_good_lines(
    existing, case
):
    make, expected = BAD_EVAL_FILES[case]
    before = counts()

    problems = refused(
        dataset_name="ds", fmt="flask", files=[("eval.jsonl", make(good_rows(100)))]
    )

    assert any(p.startswith(expected.format(id=101)) for p in problems), problems
    assert counts() == before


def test_all_problems_of_a_file_are_reported_at_once():
    data = jsonl(
        {"idx": 1, "instruction": 5},
        {"idx": 2, "instruction": "x", "skill": ["Logical"], "difficulty": 9},
    )

    problems = refused(dataset_name="ds", fmt="flask", files=[("e.jsonl", data)])

    assert problems == [
        "e.jsonl, line 1, field `instruction`: must be a string, got number",
        "e.jsonl, line 2, field `skill`: unknown skill 'Logical'; it is not in the dataset's "
        "rubric",
        "e.jsonl, line 2, field `difficulty`: difficulty 9 is out of range 1-5",
    ]


def test_file_over_the_size_limit_is_refused(settings):
    settings.IMPORT_MAX_BYTES = 100
    before = counts()

    problems = refused(
        dataset_name="ds", fmt="flask", files=[("eval.jsonl", jsonl(*GOOD))]
    )

    assert len(problems) == 1
    assert problems[0].startswith("eval.jsonl: the file is ")
    assert "over the import limit of 100 bytes" in problems[0]
    assert counts() == before


def test_csv_with_a_missing_column_names_it_and_lists_the_header():
    before = counts()

    problems = refused(
        dataset_name="ds",
        fmt="csv",
        files=[("d.csv", b"question,gold\nWhy?,Because\n")],
        options={"mapping": ["instruction=prompt", "reference=gold"]},
    )

    assert problems == [
        "d.csv, line 1: the CSV header has no column `prompt` (for field `instruction`); "
        "its columns are: question, gold"
    ]
    assert counts() == before


def test_response_for_an_unknown_instruction_id_names_the_id(existing):
    before = counts()
    data = jsonl({"question_id": 1, "text": "a"}, {"question_id": 999, "text": "b"})

    problems = refused(
        dataset_name="ds", fmt="flask_outputs", files=[("m2.jsonl", data)]
    )

    assert problems == [
        "m2.jsonl: 1 responses name instruction ids that are not in the dataset "
        "(first on line 2): 999"
    ]
    assert counts() == before


def test_outputs_into_a_dataset_that_does_not_exist_are_refused():
    before = counts()

    problems = refused(
        dataset_name="nope",
        fmt="flask_outputs",
        files=[("m1.jsonl", jsonl({"question_id": 1, "text": "a"}))],
    )

    assert problems == ["field `dataset`: no such dataset"]
    assert counts() == before


def test_changed_instruction_text_under_an_existing_id_is_refused(existing):
    before = counts()
    changed = [GOOD[0], {**GOOD[1], "instruction": "Name a secondary colour."}]

    with pytest.raises(DomainError) as exc:
        import_eval(rows=changed)

    assert [str(p) for p in exc.value.problems] == [
        "eval.jsonl, line 2: instruction '2' already exists in the dataset with different "
        "text or metadata; imported instructions are immutable (import into a new dataset "
        "instead)"
    ]
    assert counts() == before


def test_changed_response_text_is_refused(existing):
    before = counts()
    data = jsonl({"question_id": 1, "text": "Five"})

    problems = refused(
        dataset_name="ds", fmt="flask_outputs", files=[("m1.jsonl", data)]
    )

    assert problems == [
        "m1.jsonl, line 1: the response of model 'm1' to instruction '1' already exists "
        "with different text; imported responses are immutable"
    ]
    assert counts() == before


def test_two_output_files_for_the_same_model_are_refused_not_crashed(existing):
    before = counts()
    files = [
        ("out/gpt4.jsonl", jsonl({"question_id": 1, "text": "a"})),
        ("review/gpt4_review.jsonl", jsonl({"question_id": 1, "text": "b"})),
    ]

    problems = refused(dataset_name="ds", fmt="flask_outputs", files=files)

    assert problems == [
        "review/gpt4_review.jsonl, line 1: model 'gpt4' already has a response to "
        "instruction '1' on line 1 of out/gpt4.jsonl (two files for one model? name it "
        "with --model)"
    ]
    assert counts() == before


def test_same_id_in_two_eval_files_with_different_text_is_refused():
    files = [
        ("a.jsonl", jsonl(GOOD[0])),
        ("b.jsonl", jsonl({**GOOD[0], "instruction": "Z"})),
    ]
    before = counts()

    problems = refused(dataset_name="ds", fmt="flask", files=files)

    assert problems == [
        "b.jsonl, line 1: instruction '1' is also on line 1 of a.jsonl, with different text "
        "or metadata"
    ]
    assert counts() == before


# --- FLASK set and outputs in one transaction ------------------------------------------


def test_flask_import_writes_eval_set_and_outputs_together():
    report = dataset_import_flask(
        dataset_name="ds",
        eval_files=[("eval.jsonl", jsonl(*GOOD))],
        output_files=[
            (
                "gpt4_review.jsonl",
                jsonl(
                    {"question_id": 1, "text": "4"}, {"question_id": 2, "text": "Red"}
                ),
            ),
            ("bard.jsonl", jsonl({"question_id": 2, "text": "Blue"})),
        ],
    )

    assert (report.created_instructions, report.created_responses) == (2, 3)
    assert report.models == ["bard", "gpt4"]
    assert sorted(
        Response.objects.values_list("model_name", "instruction__external_id")
    ) == [("bard", "2"), ("gpt4", "1"), ("gpt4", "2")]


def test_flask_import_with_a_bad_outputs_file_leaves_no_dataset_behind():
    before = counts()

    with pytest.raises(DomainError) as exc:
        dataset_import_flask(
            dataset_name="ds",
            eval_files=[("eval.jsonl", jsonl(*GOOD))],
            output_files=[
                ("gpt4.jsonl", jsonl({"question_id": 1, "text": "4"}) + b"{oops\n")
            ],
        )

    assert [str(p) for p in exc.value.problems] == [
        "gpt4.jsonl, line 2: invalid JSON (Expecting property name enclosed in double quotes "
        "at column 2)"
    ]
    assert counts() == before


def test_flask_import_with_an_unknown_id_in_outputs_leaves_no_dataset_behind():
    before = counts()

    with pytest.raises(DomainError, match="not in the dataset"):
        dataset_import_flask(
            dataset_name="ds",
            eval_files=[("eval.jsonl", jsonl(*GOOD))],
            output_files=[("gpt4.jsonl", jsonl({"question_id": 3, "text": "?"}))],
        )

    assert counts() == before


def test_flask_hard_set_marks_matching_texts_and_reports_the_others(existing):
    hard = jsonl(
        {**GOOD[1], "idx": 1}, {**GOOD[0], "idx": 2, "instruction": "What is 2+2?"}
    )

    report = dataset_import_flask(
        dataset_name="ds",
        eval_files=[("eval.jsonl", jsonl(*GOOD))],
        hard_files=[("hard.jsonl", hard)],
    )

    assert report.hard_marked == 1
    assert report.hard_unmatched == ["hard.jsonl, line 2 (id 2)"]
    assert list(
        Instruction.objects.filter(is_hard=True).values_list("external_id", flat=True)
    ) == ["2"]


def test_instruction_mark_hard_matches_exact_text_only_and_is_idempotent(existing):
    texts = [
        "Name a primary colour.",
        "name a primary colour.",
        "Name a primary colour. ",
    ]

    first = instruction_mark_hard(dataset=existing, texts=texts)
    second = instruction_mark_hard(dataset=existing, texts=texts)

    assert (first, second) == (1, 1)
    assert list(
        existing.instructions.filter(is_hard=True).values_list("external_id", flat=True)
    ) == ["2"]


def test_flask_hard_option_marks_every_instruction_even_already_imported_ones(existing):
    report = dataset_import_flask(
        dataset_name="ds",
        eval_files=[("eval.jsonl", jsonl(*GOOD))],
        options={"hard": True},
    )

    assert (report.created_instructions, report.hard_marked) == (0, 2)
    assert existing.instructions.filter(is_hard=True).count() == 2


# --- Generic JSONL and CSV -------------------------------------------------------------

CSV = (
    b"prompt,gold,system,output,skills,level\n"
    b"Name a colour.,Blue,m1,Red,Comprehension|Conciseness,1\n"
    b"Name a colour.,Blue,m2,Green,Comprehension|Conciseness,1\n"
    b"Name a colour.,Blue,m3,Pink,Comprehension|Conciseness,1\n"
    b"Why is the sky blue?,Rayleigh scattering,m1,Because.,\"['Factuality']\",3\n"
)
MAPPING = [
    "instruction=prompt",
    "reference=gold",
    "model=system",
    "response=output",
    "difficulty=level",
]


def test_generic_csv_with_mapping_imports_several_models_per_instruction():
    report = dataset_import_files(
        dataset_name="g",
        fmt="csv",
        files=[("d.csv", CSV)],
        options={"mapping": MAPPING},
    )

    assert (report.created_instructions, report.created_responses) == (2, 4)
    assert report.models == ["m1", "m2", "m3"]
    colour = Instruction.objects.get(text="Name a colour.")
    assert colour.reference_answer == "Blue"
    assert colour.difficulty == 1
    assert sorted(colour.responses.values_list("model_name", "text")) == [
        ("m1", "Red"),
        ("m2", "Green"),
        ("m3", "Pink"),
    ]
    sky = Instruction.objects.get(text="Why is the sky blue?")
    assert [link.skill.key for link in sky.skill_links.all()] == ["factuality"]


def test_generic_derived_ids_are_stable_so_a_reimport_adds_nothing():
    dataset_import_files(
        dataset_name="g",
        fmt="csv",
        files=[("d.csv", CSV)],
        options={"mapping": MAPPING},
    )
    ids = sorted(Instruction.objects.values_list("external_id", flat=True))
    before = counts()

    again = dataset_import_files(
        dataset_name="g",
        fmt="csv",
        files=[("d.csv", CSV)],
        options={"mapping": MAPPING},
    )

    assert (again.created_instructions, again.created_responses, again.unchanged) == (
        0,
        0,
        6,
    )
    assert counts() == before
    assert sorted(Instruction.objects.values_list("external_id", flat=True)) == ids
    assert all(i.startswith("sha1-") for i in ids)


def test_generic_jsonl_with_mapping_and_a_default_model():
    data = jsonl(
        {"qid": "a", "prompt": "Say hi.", "completion": "Hi!"},
        {"qid": "b", "prompt": "Say bye.", "completion": "Bye!", "topic": "greetings"},
    )

    report = dataset_import_files(
        dataset_name="g",
        fmt="jsonl",
        files=[("d.jsonl", data)],
        options={
            "mapping": {"id": "qid", "instruction": "prompt", "response": "completion"},
            "model": "tiny-llm",
        },
    )

    assert (report.created_instructions, report.created_responses) == (2, 2)
    assert sorted(
        Response.objects.values_list("instruction__external_id", "model_name")
    ) == [("a", "tiny-llm"), ("b", "tiny-llm")]
    assert Instruction.objects.get(external_id="b").metadata == {"topic": "greetings"}


def test_generic_jsonl_missing_mapped_field_names_line_and_column():
    before = counts()

    problems = refused(
        dataset_name="g",
        fmt="jsonl",
        files=[("d.jsonl", jsonl({"prompt": "a"}, {"question": "b"}))],
        options={"mapping": ["instruction=prompt"]},
    )

    assert problems == ["d.jsonl, line 2, field `prompt`: is missing"]
    assert counts() == before


def test_bad_mapping_is_refused_naming_it():
    problems = refused(
        dataset_name="g",
        fmt="csv",
        files=[("d.csv", CSV)],
        options={"mapping": ["prompt=instruction"]},
    )

    assert problems == [
        "field `map`: --map prompt=instruction: unknown field 'prompt'; fields are id, "
        "instruction, reference, response, model, task, domains, difficulty, skills, "
        "checklist, score_rubric, rater, rationale"
    ]


# --- Import jobs -----------------------------------------------------------------------


def test_import_job_create_validates_previews_and_writes_nothing(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path
    before = counts()

    job = import_job_create(
        dataset_name="ds", fmt="flask", uploads=[("e.jsonl", jsonl(*GOOD))]
    )

    assert job.status == ImportJob.Status.VALIDATED
    assert job.summary["created_instructions"] == 2
    assert job.total_rows == 2
    assert [row["id"] for row in job.preview] == ["1", "2"]
    assert counts() == before


def test_import_job_with_problems_is_invalid_with_every_error_and_writes_nothing(
    tmp_path, settings
):
    settings.MEDIA_ROOT = tmp_path
    before = counts()
    data = jsonl(GOOD[0], {"idx": 2, "instruction": "x", "difficulty": 6})

    job = import_job_create(dataset_name="ds", fmt="flask", uploads=[("e.jsonl", data)])

    assert job.status == ImportJob.Status.INVALID
    assert [e["text"] for e in job.errors] == [
        "e.jsonl, line 2, field `difficulty`: difficulty 6 is out of range 1-5"
    ]
    assert counts() == before
    with pytest.raises(DomainError, match="this import has problems"):
        import_job_confirm(job=job)
    assert counts() == before


def test_import_job_confirm_runs_a_small_import_inline(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path
    job = import_job_create(
        dataset_name="ds", fmt="flask", uploads=[("e.jsonl", jsonl(*GOOD))]
    )

    job = import_job_confirm(job=job)

    assert job.status == ImportJob.Status.SUCCEEDED
    assert job.dataset.name == "ds"
    assert job.summary["created_instructions"] == 2
    assert Instruction.objects.filter(dataset__name="ds").count() == 2


def test_import_job_above_the_inline_limit_is_queued_then_executed_once(
    tmp_path, settings
):
    settings.MEDIA_ROOT = tmp_path
    settings.IMPORT_INLINE_MAX_ROWS = 1
    job = import_job_create(
        dataset_name="ds", fmt="flask", uploads=[("e.jsonl", jsonl(*GOOD))]
    )

    job = import_job_confirm(job=job)

    assert job.status == ImportJob.Status.QUEUED
    assert Instruction.objects.count() == 0

    import_job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.SUCCEEDED
    assert job.processed_rows == 2
    finished, after = job.finished_at, counts()

    import_job_execute(job_id=job.pk)  # at-least-once delivery: a second run is a no-op
    job.refresh_from_db()
    assert (job.status, job.finished_at) == (ImportJob.Status.SUCCEEDED, finished)
    assert counts() == after


def test_queued_import_job_runs_through_celery_after_commit(
    tmp_path, settings, django_capture_on_commit_callbacks
):
    from flaskapp.celery import app

    settings.MEDIA_ROOT = tmp_path
    settings.IMPORT_INLINE_MAX_ROWS = 1
    job = import_job_create(
        dataset_name="ds", fmt="flask", uploads=[("e.jsonl", jsonl(*GOOD))]
    )
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            import_job_confirm(job=job)
    finally:
        app.conf.task_always_eager = eager

    job.refresh_from_db()
    assert len(callbacks) == 1
    assert job.status == ImportJob.Status.SUCCEEDED
    assert Instruction.objects.filter(dataset__name="ds").count() == 2


def test_import_job_failing_at_execution_records_the_problems(
    tmp_path, settings, existing
):
    settings.MEDIA_ROOT = tmp_path
    settings.IMPORT_INLINE_MAX_ROWS = 0
    data = jsonl({"question_id": 1, "text": "a different answer"})
    job = import_job_create(
        dataset_name="ds", fmt="flask_outputs", uploads=[("m1.jsonl", data)]
    )
    assert job.status == ImportJob.Status.INVALID  # caught at validation already
    job = import_job_create(
        dataset_name="ds",
        fmt="flask_outputs",
        uploads=[("m9.jsonl", jsonl({"question_id": 1, "text": "x"}))],
    )
    job = import_job_confirm(job=job)
    Response.objects.create(
        instruction=existing.instructions.get(external_id="1"),
        model_name="m9",
        text="written meanwhile",
    )
    before = counts()

    import_job_execute(job_id=job.pk)

    job.refresh_from_db()
    assert job.status == ImportJob.Status.FAILED
    assert "already exists with different text" in job.errors[0]["text"]
    assert counts() == before


# --- Rubrics ---------------------------------------------------------------------------


def test_rubric_import_of_the_official_file_creates_a_new_version(flask_data):
    path = (
        flask_data
        / "metadata_annotation"
        / "skillset"
        / "src"
        / "skillset_description.json"
    )

    first = rubric_import(
        name="FLASK (imported)", data=path.read_bytes(), file=path.name
    )
    second = rubric_import(
        name="FLASK (imported)", data=path.read_bytes(), file=path.name
    )

    assert (first.version, second.version) == (1, 2)
    skills = list(first.skills.order_by("position"))
    assert len(skills) == 12
    builtin = {s.key: s.ability for s in rubric_get_default().skills.all()}
    assert {s.key: s.ability for s in skills} == builtin
    assert skills[0].name == "Logical Robustness"
    assert (
        skills[0].anchor_1
        == "The logic of the model's response is completely incoherent."
    )


def test_dataset_on_a_new_rubric_version_links_that_versions_skills():
    rubric = rubric_import(
        name="Custom", data=rubric_file(suffix=" (v2)"), file="r.json"
    )

    import_eval(options={"rubric_id": rubric.pk})

    dataset = Dataset.objects.get(name="ds")
    assert dataset.rubric == rubric
    assert set(InstructionSkill.objects.values_list("skill__rubric_id", flat=True)) == {
        rubric.pk
    }


def test_dataset_on_a_partial_rubric_refuses_skills_it_lacks():
    rubric = rubric_import(
        name="Two skills", data=rubric_file(BUILTIN_SKILLS[:2]), file="r.json"
    )
    before = counts()

    with pytest.raises(DomainError) as exc:
        import_eval(options={"rubric_id": rubric.pk})

    assert "eval.jsonl, line 1, field `skill`: unknown skill 'Conciseness'" in str(
        exc.value
    )
    assert counts() == before


def test_flask_import_with_a_rubric_file_creates_the_rubric_and_uses_it():
    report = dataset_import_flask(
        dataset_name="ds",
        eval_files=[("eval.jsonl", jsonl(*GOOD))],
        rubric_file=("skillset_description.json", rubric_file()),
    )

    rubric = Rubric.objects.get(name="FLASK (imported)")
    assert report.rubric == "FLASK (imported) v1"
    assert Dataset.objects.get(name="ds").rubric == rubric
    assert set(InstructionSkill.objects.values_list("skill__rubric_id", flat=True)) == {
        rubric.pk
    }


def test_flask_import_refuses_a_rubric_file_for_an_existing_dataset(existing):
    before = counts()

    with pytest.raises(
        DomainError, match="a rubric file can only be given for a new dataset"
    ):
        dataset_import_flask(
            dataset_name="ds",
            eval_files=[("eval.jsonl", jsonl(*GOOD))],
            rubric_file=("skillset_description.json", rubric_file()),
        )

    assert counts() == before


def test_flask_import_refused_after_parsing_leaves_no_rubric_behind():
    before = counts()

    with pytest.raises(DomainError):
        dataset_import_flask(
            dataset_name="ds",
            eval_files=[("eval.jsonl", jsonl(*GOOD))],
            output_files=[("m.jsonl", jsonl({"question_id": 77, "text": "?"}))],
            rubric_file=("skillset_description.json", rubric_file()),
        )

    assert counts() == before


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL constraint trigger"
)
def test_database_refuses_a_relevant_skill_from_another_rubric(existing):
    other = rubric_import(name="Other", data=rubric_file(), file="r.json")
    instruction = existing.instructions.get(external_id="1")
    foreign = Skill.objects.get(rubric=other, key="factuality")

    with pytest.raises(IntegrityError, match="belongs to rubric"), transaction.atomic():
        InstructionSkill.objects.create(instruction=instruction, skill=foreign, rank=5)

    assert instruction.skill_links.count() == 3


# --- The real FLASK release (skipped when absent) --------------------------------------


def release_files(flask_data):
    eval_path = flask_data / "evaluation_set" / "flask_evaluation.jsonl"
    outputs = sorted((flask_data / "model_output" / "outputs").glob("*.jsonl"))
    return (
        [(eval_path.name, eval_path.read_bytes())],
        [(p.name, p.read_bytes()) for p in outputs],
    )


def test_real_release_imports_in_full_and_reimports_as_a_no_op(flask_data):
    eval_files, output_files = release_files(flask_data)

    report = dataset_import_flask(
        dataset_name="flask", eval_files=eval_files, output_files=output_files
    )

    assert (report.created_instructions, report.created_responses) == (1740, 25500)
    assert len(report.models) == 15
    instructions = Instruction.objects.filter(dataset__name="flask")
    assert instructions.count() == 1740
    assert Response.objects.filter(instruction__dataset__name="flask").count() == 25500
    # The 2 difficulty sentinels and the 11 domain sentinels became "unknown".
    assert instructions.filter(difficulty__isnull=True).count() == 2
    raw = {
        str(r["idx"]): r
        for r in map(json.loads, eval_files[0][1].decode().splitlines())
    }
    sentinel_ids = [i for i, r in raw.items() if "-1" in r["domain"]]
    assert len(sentinel_ids) == 11
    for instruction in instructions.filter(external_id__in=sentinel_ids):
        assert (
            len(instruction.domains) == len(raw[instruction.external_id]["domain"]) - 1
        )
    assert (
        instructions.filter(domain_1="").count() == 3
    )  # lines whose only domain is "-1"
    assert (
        InstructionSkill.objects.filter(instruction__dataset__name="flask").count()
        == 5219
    )

    before = counts()
    again = dataset_import_flask(
        dataset_name="flask", eval_files=eval_files, output_files=output_files
    )

    assert (again.created_instructions, again.created_responses) == (0, 0)
    assert again.unchanged == 1740 + 25500
    assert counts() == before


def test_real_flask_hard_set_imports_alone_and_matches_the_main_set(flask_data):
    eval_files, _ = release_files(flask_data)
    hard_path = flask_data / "evaluation_set" / "flask_hard_evaluation.jsonl"
    hard_files = [(hard_path.name, hard_path.read_bytes())]

    alone = dataset_import_flask(
        dataset_name="flask-hard", eval_files=hard_files, options={"hard": True}
    )
    matched = dataset_import_flask(
        dataset_name="flask", eval_files=eval_files, hard_files=hard_files
    )

    assert alone.created_instructions == 89
    hard_only = Instruction.objects.filter(dataset__name="flask-hard")
    assert hard_only.filter(is_hard=True, difficulty=5).count() == 89
    # 88 are exact copies of main-set instances; hard idx 82 was edited slightly.
    assert matched.hard_marked == 88
    assert matched.hard_unmatched == ["flask_hard_evaluation.jsonl, line 82 (id 82)"]
    assert Instruction.objects.filter(dataset__name="flask", is_hard=True).count() == 88


def test_real_legacy_v1_set_equals_the_current_set_for_ids_1_to_1700(flask_data):
    eval_files, _ = release_files(flask_data)
    legacy = (
        flask_data / "legacy_v1_612d031" / "evaluation_set" / "flask_evaluation.jsonl"
    )
    dataset_import_flask(dataset_name="current", eval_files=eval_files)

    report = dataset_import_flask(
        dataset_name="v1", eval_files=[(legacy.name, legacy.read_bytes())]
    )

    assert report.created_instructions == 1700

    def fields(name):
        rows = Instruction.objects.filter(dataset__name=name).prefetch_related(
            "skill_links__skill"
        )
        return {
            i.external_id: (
                i.text,
                i.reference_answer,
                i.source_task,
                i.domains,
                i.difficulty,
                [link.skill.key for link in i.skill_links.all()],
            )
            for i in rows
        }

    current, v1 = fields("current"), fields("v1")
    assert len(v1) == 1700
    assert v1 == {str(i): current[str(i)] for i in range(1, 1701)}
