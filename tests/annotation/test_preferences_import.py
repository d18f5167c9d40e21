"""Importing pairwise preferences (human votes and judge verdicts): what is stored, what
is reused on a second import, and that every bad input is refused with nothing written."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.importers.preferences import anonymous_model_name
from annotation.models import (
    Dataset,
    HumanPreference,
    Instruction,
    PreferencePair,
    Response,
)
from annotation.selectors.preferences import (
    human_labels_by_pair,
    pair_categories,
    pairs_for_dataset,
)
from annotation.services.preference_imports import preferences_import
from flaskapp.errors import DomainError
from judging.models import JudgeConfig, JudgeRun, PairwiseVerdict
from judging.services.verdicts import imported_verdicts
from tests.factories import DatasetFactory, InstructionFactory, ResponseFactory

pytestmark = pytest.mark.django_db

ALL_MODELS = (
    Dataset,
    Instruction,
    Response,
    PreferencePair,
    HumanPreference,
    JudgeConfig,
    JudgeRun,
    PairwiseVerdict,
)


def counts() -> dict[str, int]:
    return {m.__name__: m.objects.count() for m in ALL_MODELS}


def jsonl(*rows) -> bytes:
    return "".join(
        (r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows
    ).encode()


def row(n: int = 1, **overrides) -> dict:
    out = {
        "prompt": f"Prompt {n}: name a prime number.",
        "response_1": f"Seven ({n}).",
        "response_2": f"Nine ({n}).",
        "label": 1,
        "model_1": "alpha",
        "model_2": "beta",
    }
    out.update(overrides)
    return {k: v for k, v in out.items() if v is not ...}


def run_import(data: bytes, fmt: str = "jsonl", **kwargs):
    kwargs.setdefault("dataset_name", "prefs")
    kwargs.setdefault("file", f"votes.{fmt}")
    kwargs.setdefault("verdict_writer", imported_verdicts)
    return preferences_import(data=data, fmt=fmt, **kwargs)


def refused(data: bytes, fmt: str = "jsonl", **kwargs) -> DomainError:
    """Import `data`, expect a refusal, and check that nothing was written."""
    before = counts()
    with pytest.raises(DomainError) as info:
        run_import(data, fmt, **kwargs)
    assert counts() == before
    return info.value


def problem_texts(error: DomainError) -> list[str]:
    return [str(p) for p in error.problems]


# --- What a good file stores ---------------------------------------------------------------


def test_import_creates_dataset_instructions_responses_pairs_and_votes():
    data = jsonl(
        row(1, label=1, category="math", source="arena", voter="v1", id="q1"),
        row(1, label="tie", category="math", source="arena", voter="v2"),
        row(2, label=2, model_1=..., model_2=..., rationale="Nine is not prime."),
    )
    report = run_import(data)

    dataset = Dataset.objects.get(name="prefs")
    assert report.dataset_created
    assert (report.rows, report.created_instructions, report.created_responses) == (
        3,
        2,
        4,
    )
    assert (report.created_pairs, report.created_preferences) == (2, 3)
    assert report.labels == {"1": 1, "2": 1, "tie": 1}

    first = Instruction.objects.get(dataset=dataset, text=row(1)["prompt"])
    assert first.external_id == "q1"
    second = Instruction.objects.get(dataset=dataset, text=row(2)["prompt"])
    assert second.external_id.startswith("pref-")

    pair_1 = PreferencePair.objects.get(instruction=first)
    assert (pair_1.response_1.model_name, pair_1.response_2.model_name) == (
        "alpha",
        "beta",
    )
    assert pair_1.response_1.text == "Seven (1)."
    assert (pair_1.category, pair_1.source, pair_1.external_id) == (
        "math",
        "arena",
        "q1",
    )
    votes = list(pair_1.human_preferences.order_by("id"))
    assert [(v.label, v.voter, v.origin) for v in votes] == [
        ("1", "v1", "imported"),
        ("tie", "v2", "imported"),
    ]
    assert all(v.source_key and v.assignment_id is None for v in votes)

    # Without model names, each response gets a stable name from its text.
    pair_2 = PreferencePair.objects.get(instruction=second)
    assert pair_2.response_1.model_name == anonymous_model_name("Seven (2).")
    assert pair_2.response_1.model_name.startswith("anon-")
    assert len(pair_2.response_1.model_name) == len("anon-") + 8
    assert pair_2.human_preferences.get().rationale == "Nine is not prime."


def test_reimporting_the_same_file_adds_nothing():
    data = jsonl(row(1), row(1, label=2, voter="v9"), row(2, label="tie"))
    run_import(data)
    before = counts()

    again = run_import(data)

    assert counts() == before
    assert (again.created_instructions, again.created_responses) == (0, 0)
    assert (again.created_pairs, again.created_preferences) == (0, 0)
    assert (again.reused_instructions, again.reused_responses) == (2, 4)
    assert (again.reused_pairs, again.unchanged_preferences) == (2, 3)
    assert not again.dataset_created


def test_rows_appended_to_a_file_import_only_the_new_rows():
    run_import(jsonl(row(1), row(2)))
    report = run_import(jsonl(row(1), row(2), row(2, label=2, voter="late")))
    assert (report.created_preferences, report.unchanged_preferences) == (1, 2)
    assert HumanPreference.objects.count() == 3


def test_several_voters_on_one_pair_make_one_pair_with_each_vote():
    data = jsonl(
        row(1, label=1, voter="ann"),
        row(1, label=2, voter="bob"),
        row(1, label="tie", voter="cy"),
        # Two anonymous identical votes on different lines are two votes.
        row(1, label=1),
        row(1, label=1),
    )
    report = run_import(data)
    assert (report.created_pairs, report.created_preferences) == (1, 5)
    pair = PreferencePair.objects.get()
    assert sorted(pair.human_preferences.values_list("voter", "label")) == [
        ("", "1"),
        ("", "1"),
        ("ann", "1"),
        ("bob", "2"),
        ("cy", "tie"),
    ]
    assert human_labels_by_pair(pair.dataset) == {pair.pk: ["1", "2", "tie", "1", "1"]}
    listed = pairs_for_dataset(pair.dataset).get()
    assert (listed.votes, listed.ties) == (5, 1)


def test_existing_instruction_with_the_same_prompt_is_reused():
    instruction = InstructionFactory(text="What is 2 + 2?", external_id="flask-7")
    ResponseFactory(instruction=instruction, model_name="alpha", text="Four.")
    data = jsonl(
        row(
            prompt="What is 2 + 2?",
            response_1="Four.",
            response_2="Five.",
            id="other-id",
        )
    )
    report = run_import(data, dataset_name=instruction.dataset.name)
    assert (report.created_instructions, report.reused_instructions) == (0, 1)
    assert (report.created_responses, report.reused_responses) == (1, 1)
    pair = PreferencePair.objects.get()
    assert pair.instruction == instruction
    assert Instruction.objects.filter(dataset=instruction.dataset).count() == 1


def test_zero_based_labels():
    data = jsonl(
        row(1, label=0), row(2, label="1"), row(3, label=2), row(4, label="tie")
    )
    run_import(data, label_scheme="zero-based")
    labels = dict(
        HumanPreference.objects.values_list("pair__instruction__text", "label")
    )
    assert labels == {
        row(1)["prompt"]: "1",
        row(2)["prompt"]: "2",
        row(3)["prompt"]: "tie",
        row(4)["prompt"]: "tie",
    }


def test_one_based_file_with_a_zero_label_is_refused_with_a_hint():
    error = refused(jsonl(row(1), row(2, label=0)))
    (text,) = problem_texts(error)
    assert "line 2" in text and "field `label`" in text
    assert "--label-scheme zero-based" in text


def test_csv_with_field_mapping():
    data = (
        b"question,chosen,rejected,winner,subset,m_a,m_b\n"
        b"What is 1+1?,Two.,Three.,1,easy,gpt,llama\n"
        b'"Say ""hi"".",hi,Hello there,tie,chat,gpt,llama\n'
    )
    report = run_import(
        data,
        fmt="csv",
        mapping=[
            "prompt=question",
            "response_1=chosen",
            "response_2=rejected",
            "label=winner",
            "category=subset",
            "model_1=m_a",
            "model_2=m_b",
        ],
    )
    assert (report.created_pairs, report.created_preferences) == (2, 2)
    pair = PreferencePair.objects.get(instruction__text='Say "hi".')
    assert (pair.category, pair.response_2.text, pair.response_1.model_name) == (
        "chat",
        "Hello there",
        "gpt",
    )
    assert pair.human_preferences.get().label == "tie"
    assert pair_categories(pair.dataset) == [("chat", 1), ("easy", 1)]


def test_dry_run_reports_counts_and_writes_nothing():
    before = counts()
    report = run_import(jsonl(row(1), row(2)), dry_run=True, judge=None)
    assert counts() == before
    assert report.dry_run and report.dataset_created
    assert (report.created_pairs, report.created_preferences) == (2, 2)


def test_blank_category_of_a_stored_pair_is_filled_in():
    run_import(jsonl(row(1)))
    run_import(jsonl(row(1, category="math", voter="x")))
    assert PreferencePair.objects.get().category == "math"


# --- Bad input: a clear error and nothing written ------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "the file is empty"),
        (b"   \n\n", "the file is empty"),
        (b'[{"prompt": "x"}]\n', "line 1, field `response_1`: is missing"),
        (jsonl(row(1), "{not json"), "line 2: invalid JSON"),
        (jsonl(row(1), "[1, 2]"), "line 2: expected a JSON object"),
        (jsonl(row(1, prompt=...)), "line 1, field `prompt`: is missing"),
        (jsonl(row(1, prompt="  ")), "line 1, field `prompt`: is empty"),
        (jsonl(row(1, response_2=...)), "line 1, field `response_2`: is missing"),
        (jsonl(row(1, response_1=7)), "field `response_1`: must be a string"),
        (jsonl(row(1, label=...)), "line 1, field `label`: is missing or empty"),
        (jsonl(row(1, label=3)), "line 1, field `label`: label 3 is not one of"),
        (jsonl(row(1, label="A")), "field `label`: label 'A' is not one of"),
        (jsonl(row(1, label=1.5)), "field `label`: label 1.5 is not one of"),
        (jsonl(row(1, label=True)), "field `label`"),
        (jsonl(row(1, label=[1])), "field `label`: must be 1, 2 or tie, got array"),
        (
            jsonl(row(1, model_2="alpha")),
            "line 1, field `model_2`: names the same model as model_1",
        ),
        (
            jsonl(row(1), row(1, response_1="Eight.")),
            "line 2, field `model_1`: model 'alpha' has a different response to the "
            "same prompt on line 1",
        ),
        (
            jsonl(row(1, id="x"), row(2, id="x")),
            "line 2, field `id`: id 'x' was used on line 1 for a different prompt",
        ),
        (
            jsonl(row(1, category="a"), row(1, category="b")),
            "line 2, field `category`: the same pair has category 'a' on line 1",
        ),
        (jsonl(row(1, prompt="a\x00b")), "NUL character"),
        (jsonl(row(1, model_1="m" * 201)), "field `model_1`: is 201 characters long"),
        (b"\xff\xfe\n", "not valid UTF-8"),
    ],
)
def test_bad_jsonl_is_refused_and_nothing_is_written(data, expected):
    error = refused(data)
    assert any(expected in text for text in problem_texts(error)), problem_texts(error)


def test_every_problem_is_reported_not_only_the_first():
    error = refused(
        jsonl(
            row(1, label=5, response_2=7),
            row(2),
            "{bad",
            row(3, prompt=...),
        )
    )
    assert [(p.line, p.field) for p in error.problems] == [
        (1, "response_2"),
        (1, "label"),
        (3, None),
        (4, "prompt"),
    ]


@pytest.mark.parametrize(
    ("data", "kwargs", "expected"),
    [
        (
            b"prompt,response_1,label\nQ,a,1\n",
            {},
            "line 1: the CSV header has no column `response_2` (for field `response_2`)",
        ),
        (
            b"prompt,response_1,response_2\nQ,a,b\n",
            {},
            "the CSV header has no column `label`",
        ),
        (
            b"prompt,response_1,response_2,label\nQ,a,b,1\n",
            {"mapping": ["category=subset"]},
            "no column `subset` (for field `category`)",
        ),
        (
            b"prompt,response_1,response_2,label\nQ,a,b,1,extra\n",
            {},
            "line 2: has more cells than the header's 4 columns",
        ),
        (b"prompt,response_1,response_2,label\n", {}, "the file has no rows"),
        (b"prompt,response_1,response_2,label\nQ,a,b,\n", {}, "line 2, field `label`"),
    ],
)
def test_bad_csv_is_refused_and_nothing_is_written(data, kwargs, expected):
    error = refused(data, "csv", **kwargs)
    assert any(expected in text for text in problem_texts(error)), problem_texts(error)


@pytest.mark.parametrize(
    ("kwargs", "field", "expected"),
    [
        ({"mapping": ["colour=x"]}, "map", "unknown field 'colour'"),
        ({"mapping": ["prompt"]}, "map", "expected FIELD=COLUMN"),
        ({"mapping": ["prompt=label"]}, "map", "same column 'label'"),
        ({"label_scheme": "two-based"}, "label_scheme", "must be one of"),
        ({"swapped_mapped_back": True}, "swapped_mapped_back", "name the judge"),
        ({"dataset_name": "  "}, "dataset", "is empty"),
        ({"judge": "j" * 101}, "judge", "101 characters"),
    ],
)
def test_bad_options_are_refused(kwargs, field, expected):
    error = refused(jsonl(row(1)), **kwargs)
    assert [p.field for p in error.problems] == [field]
    assert expected in error.problems[0].message


def test_response_text_that_differs_from_the_stored_one_is_refused():
    run_import(jsonl(row(1)))
    error = refused(jsonl(row(1, response_2="Nine, no: eleven.", voter="z")))
    (problem,) = error.problems
    assert (problem.line, problem.field) == (1, "model_2")
    assert "model 'beta' already has a different response" in problem.message


def test_instruction_id_taken_by_another_prompt_is_refused():
    instruction = InstructionFactory(external_id="q1", text="Something else.")
    error = refused(jsonl(row(1, id="q1")), dataset_name=instruction.dataset.name)
    (problem,) = error.problems
    assert (problem.line, problem.field) == (1, "id")
    assert "already has an instruction with id 'q1'" in problem.message


def test_stored_pair_category_conflict_is_refused():
    run_import(jsonl(row(1, category="math")))
    error = refused(jsonl(row(1, category="code", voter="b")))
    assert "already stored with category 'math'" in str(error)


# --- Judge verdicts ------------------------------------------------------------------------


def verdicts_by_prompt(run: JudgeRun) -> dict[tuple[int, str], tuple[str, str]]:
    """{(prompt number, order): (verdict_raw, verdict)}; prompts are "Prompt N: ..."."""
    return {
        (int(v.pair.instruction.text.split()[1].rstrip(":")), v.order): (
            v.verdict_raw,
            v.verdict,
        )
        for v in PairwiseVerdict.objects.filter(run=run).select_related(
            "pair__instruction"
        )
    }


def test_judge_verdicts_in_presented_order_are_mapped_back():
    data = jsonl(
        row(1, verdict="A", verdict_swapped="A"),  # order-inconsistent: first position
        row(2, verdict="B", verdict_swapped="a"),  # consistent: response 2 both times
        row(3, verdict="tie", verdict_swapped="1"),  # a number names the position
        row(4, verdict="none", verdict_swapped=None),  # no verdict; not run swapped
        row(5, verdict=2),
        row(6, verdict="", verdict_swapped="B"),
    )
    report = run_import(data, judge="gpt-judge")

    run = JudgeRun.objects.get()
    assert run.pk == report.run_id
    assert (run.kind, run.status, run.config.name) == (
        "imported",
        "completed",
        "gpt-judge",
    )
    assert run.dataset.name == "prefs"
    assert report.judge_config_created and report.run_created
    assert verdicts_by_prompt(run) == {
        (1, "ab"): ("A", "1"),
        (1, "ba"): ("A", "2"),
        (2, "ab"): ("B", "2"),
        (2, "ba"): ("A", "2"),
        (3, "ab"): ("tie", "tie"),
        (3, "ba"): ("A", "2"),
        (4, "ab"): ("", ""),
        (5, "ab"): ("B", "2"),
        (6, "ab"): ("", ""),
        (6, "ba"): ("B", "1"),
    }
    assert (report.created_verdicts, report.unusable_verdicts) == (10, 2)
    assert all(v.call_id is None for v in PairwiseVerdict.objects.all())
    # The rows also carry human labels.
    assert HumanPreference.objects.count() == 6


def test_swapped_verdicts_already_mapped_back_keep_their_numbering():
    data = jsonl(
        row(1, verdict="A", verdict_swapped="1"),  # response 1 in both orders
        row(2, verdict="B", verdict_swapped=2),
        row(3, verdict="A", verdict_swapped="tie"),
        row(4, verdict="A", verdict_swapped="none"),
    )
    run_import(data, judge="j", swapped_mapped_back=True)
    assert verdicts_by_prompt(JudgeRun.objects.get()) == {
        (1, "ab"): ("A", "1"),
        (1, "ba"): ("B", "1"),  # response 1 was shown second, as B
        (2, "ab"): ("B", "2"),
        (2, "ba"): ("A", "2"),
        (3, "ab"): ("A", "1"),
        (3, "ba"): ("tie", "tie"),
        (4, "ab"): ("A", "1"),
        (4, "ba"): ("", ""),
    }


@pytest.mark.parametrize("word", ["none", "N/A", "null"])
def test_an_na_word_is_no_usable_verdict_in_either_order(word):
    data = jsonl(row(1, verdict=word, verdict_swapped="B"), row(2, verdict="A"))
    report = run_import(data, judge="j")
    assert verdicts_by_prompt(JudgeRun.objects.get()) == {
        (1, "ab"): ("", ""),
        (1, "ba"): ("B", "1"),
        (2, "ab"): ("A", "1"),
    }
    assert report.unusable_verdicts == 1


def test_zero_based_scheme_applies_to_numeric_verdicts():
    data = jsonl(row(1, label=0, verdict=0, verdict_swapped=1))
    run_import(data, judge="j", label_scheme="zero-based")
    assert verdicts_by_prompt(JudgeRun.objects.get()) == {
        (1, "ab"): ("A", "1"),
        (1, "ba"): ("B", "1"),
    }
    assert HumanPreference.objects.get().label == "1"


def test_verdicts_without_a_judge_are_not_imported_and_are_counted(tmp_path, capsys):
    data = jsonl(row(1, verdict="A"), row(2, verdict_swapped="B"), row(3))
    report = run_import(data)
    assert (report.created_preferences, report.ignored_verdicts) == (3, 2)
    assert counts()["PairwiseVerdict"] == counts()["JudgeRun"] == 0
    path = tmp_path / "v.jsonl"
    path.write_bytes(data)
    call_command("import_preferences", str(path), "--dataset", "other")
    assert "2 rows have judge verdicts, which were not imported" in (
        capsys.readouterr().out
    )


def test_letters_in_a_mapped_back_swapped_column_are_refused():
    error = refused(
        jsonl(row(1, verdict="A", verdict_swapped="B")),
        judge="j",
        swapped_mapped_back=True,
    )
    (problem,) = error.problems
    assert (problem.line, problem.field) == (1, "verdict_swapped")
    assert "original numbering" in problem.message


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([row(1)], "line 1, field `verdict`: is missing"),
        ([row(1, verdict="C")], "verdict 'C' is not one of A, B, tie"),
        ([row(1, verdict="A", verdict_swapped=3)], "field `verdict_swapped`"),
        (
            [row(1, verdict="A"), row(1, verdict="B", voter="v2")],
            "line 2, field `verdict`: the same pair has different judge verdicts",
        ),
    ],
)
def test_bad_verdicts_are_refused(rows, expected):
    error = refused(jsonl(*rows), judge="j")
    assert any(expected in t for t in problem_texts(error)), problem_texts(error)


def test_judge_only_file_without_labels_adds_verdicts_to_the_same_pairs():
    run_import(jsonl(row(1), row(2), row(3)))
    data = jsonl(
        row(1, label=..., verdict="A", verdict_swapped="B"),
        row(2, label=None, verdict="B"),
        row(3, label="", verdict=""),  # the judge gave no usable verdict
    )
    report = run_import(data, judge="j", file="judge.jsonl")
    assert (report.created_pairs, report.reused_pairs) == (0, 3)
    assert report.created_preferences == 0
    assert HumanPreference.objects.count() == 3
    assert PairwiseVerdict.objects.count() == 4
    assert report.unusable_verdicts == 1


def test_reimporting_judge_verdicts_reuses_config_and_run():
    data = jsonl(row(1, verdict="A", verdict_swapped="B"), row(2, verdict="B"))
    first = run_import(data, judge="j")
    before = counts()

    again = run_import(data, judge="j")

    assert counts() == before
    assert (again.run_id, again.run_created, again.judge_config_created) == (
        first.run_id,
        False,
        False,
    )
    assert (again.created_verdicts, again.unchanged_verdicts) == (0, 3)


def test_an_existing_judge_config_is_used_and_other_options_make_a_new_run():
    config = JudgeConfig.objects.create(
        name="house-judge", base_url="http://x/v1", model="m", model_family="gpt"
    )
    data = jsonl(row(1, verdict="A", verdict_swapped="1"))
    run_import(data, judge="house-judge")
    run_import(data, judge="house-judge", swapped_mapped_back=True)
    runs = list(JudgeRun.objects.order_by("id"))
    assert [r.config_id for r in runs] == [config.pk, config.pk]
    assert JudgeConfig.objects.count() == 1
    swapped = [PairwiseVerdict.objects.get(run=r, order="ba").verdict for r in runs]
    assert swapped == ["2", "1"]


# --- Command line ---------------------------------------------------------------------------


def test_command_imports_csv_with_map_and_judge(tmp_path, capsys):
    path = tmp_path / "rb.csv"
    path.write_text(
        "q,r1,r2,pref,v,vs\n"
        "Why is the sky blue?,Rayleigh scattering.,Because of the sea.,0,0,0\n",
        encoding="utf-8",
    )
    call_command(
        "import_preferences",
        str(path),
        "--dataset",
        "rb",
        "--map",
        "prompt=q",
        "--map",
        "response_1=r1",
        "--map",
        "response_2=r2",
        "--map",
        "label=pref",
        "--map",
        "verdict=v",
        "--map",
        "verdict_swapped=vs",
        "--label-scheme",
        "zero-based",
        "--judge",
        "j",
    )
    out = capsys.readouterr().out
    assert "1 pairs, 1 human preferences" in out
    assert "2 created" in out
    pair = PreferencePair.objects.get(dataset__name="rb")
    assert pair.human_preferences.get().label == "1"
    assert dict(
        PairwiseVerdict.objects.filter(pair=pair).values_list("order", "verdict")
    ) == {"ab": "1", "ba": "2"}


def test_command_refuses_a_bad_file_naming_the_line(tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(jsonl(row(1), row(2, label="maybe")))
    with pytest.raises(CommandError, match="line 2, field `label`"):
        call_command("import_preferences", str(path), "--dataset", "d")
    assert counts()["Dataset"] == 0


def test_command_needs_a_known_extension_or_format(tmp_path):
    path = tmp_path / "votes.txt"
    path.write_bytes(jsonl(row(1)))
    with pytest.raises(CommandError, match="--format"):
        call_command("import_preferences", str(path), "--dataset", "d")
    call_command("import_preferences", str(path), "--dataset", "d", "--format", "jsonl")
    assert HumanPreference.objects.count() == 1


def test_command_dry_run_writes_nothing(tmp_path, capsys):
    path = tmp_path / "v.jsonl"
    path.write_bytes(jsonl(row(1)))
    call_command("import_preferences", str(path), "--dataset", "d", "--dry-run")
    assert "Dry run, nothing written" in capsys.readouterr().out
    assert counts()["Dataset"] == 0


# --- API ------------------------------------------------------------------------------------

URL = "/api/datasets/{}/preferences/"


def upload(data: bytes, name: str = "votes.jsonl") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


@pytest.mark.parametrize("role", ["researcher", "admin_user"])
def test_api_import_by_researcher_and_admin(api_client_for, request, role):
    user = request.getfixturevalue(role)
    response = api_client_for(user).post(
        URL.format("api-prefs"),
        {
            "file": upload(jsonl(row(1, verdict="A", verdict_swapped="A"))),
            "judge": "j",
        },
        format="multipart",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["created_pairs"], body["created_preferences"]) == (1, 1)
    assert body["created_verdicts"] == 2
    assert JudgeRun.objects.get().created_by == user
    assert Dataset.objects.get(name="api-prefs").created_by == user


def test_api_csv_with_map_and_zero_based_labels(api_client_for, researcher):
    DatasetFactory(name="api-prefs")
    data = b"q,a,b,w\nQ?,yes,no,1\n"
    response = api_client_for(researcher).post(
        URL.format("api-prefs"),
        {
            "file": upload(data, "votes.csv"),
            "map": ["prompt=q", "response_1=a", "response_2=b", "label=w"],
            "label_scheme": "zero-based",
        },
        format="multipart",
    )
    assert response.status_code == 201, response.json()
    assert HumanPreference.objects.get().label == "2"


def test_api_dry_run_answers_200_and_writes_nothing(api_client_for, admin_user):
    response = api_client_for(admin_user).post(
        URL.format("api-prefs"),
        {"file": upload(jsonl(row(1))), "dry_run": "true"},
        format="multipart",
    )
    assert response.status_code == 200
    assert response.json()["dry_run"] is True
    assert counts()["Dataset"] == 0


def test_api_bad_file_is_400_with_problems_and_writes_nothing(
    api_client_for, researcher
):
    before = counts()
    response = api_client_for(researcher).post(
        URL.format("api-prefs"),
        {"file": upload(jsonl(row(1), "{oops"))},
        format="multipart",
    )
    assert response.status_code == 400
    problems = response.json()["problems"]
    assert [(p["line"], p["message"][:12]) for p in problems] == [(2, "invalid JSON")]
    assert counts() == before


def test_api_needs_a_file_and_a_known_format(api_client_for, researcher):
    client = api_client_for(researcher)
    response = client.post(URL.format("d"), {}, format="multipart")
    assert response.status_code == 400
    assert "file" in response.json()
    response = client.post(
        URL.format("d"), {"file": upload(jsonl(row(1)), "v.txt")}, format="multipart"
    )
    assert response.status_code == 400
    assert "format" in response.json()


@pytest.mark.parametrize(
    ("who", "expected"), [("rater", 403), ("no_role_user", 403), (None, 401)]
)
def test_api_refuses_raters_users_without_role_and_anonymous(
    api_client_for, request, who, expected
):
    user = request.getfixturevalue(who) if who else None
    response = api_client_for(user).post(
        URL.format("d"), {"file": upload(jsonl(row(1)))}, format="multipart"
    )
    assert response.status_code == expected
    assert counts()["Dataset"] == 0


def test_service_refuses_a_rater_too(rater):
    with pytest.raises(PermissionDenied):
        run_import(jsonl(row(1)), user=rater)
    assert counts()["Dataset"] == 0


def test_verdicts_without_a_writer_are_refused_naming_the_judge_field(db):
    """The annotation app stores no verdicts itself: a caller that names a judge must
    pass the judging app's writer, otherwise nothing is written."""
    error = refused(jsonl(row(1)), judge="j", verdict_writer=None)
    assert any(p.field == "judge" for p in error.problems)
