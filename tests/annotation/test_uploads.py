"""The one upload page (issue 35): every import kind from the browser, the guess shown
and changeable, a check that writes nothing, then a confirm (all or nothing)."""

from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import (
    Dataset,
    GoldItem,
    HumanPreference,
    ImportJob,
    Instruction,
    Rubric,
)
from annotation.services.import_jobs import import_job_confirm
from annotation.services.imports import dataset_import_files
from flaskapp.optional import PARQUET
from judging.models import JudgeRun, JudgeScore
from tests.factories import dataset_with_responses

URL = "/upload/"


def page_text(response) -> str:
    text = re.sub(r"<[^>]+>", " ", response.content.decode())
    return re.sub(r"\s+", " ", text)


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


EVAL_SET = jsonl(
    {
        "idx": 1,
        "instruction": "Why is the sky blue?",
        "answer": "Rayleigh scattering.",
        "task": "qa",
        "skill": ["Factuality", "Comprehension", "Readability"],
        "domain": ["Natural Science"],
        "difficulty": "simple lifestyle knowledge",
    },
    {
        "idx": 2,
        "instruction": "What is 17 times 23?",
        "answer": "391.",
        "task": "math",
        "skill": ["Logical Correctness", "Readability", "Conciseness"],
        "domain": ["Math"],
        "difficulty": "formal education knowledge",
    },
)
RUBRIC_YAML = b"""name: Support quality
criteria:
  - key: helpful
    name: Helpful
    scale: {min: 1, max: 3}
    anchors: {1: "Not at all.", 3: "Fully."}
  - key: polite
    name: Polite
    kind: categorical
    labels: [{key: "yes", name: "Yes"}, {key: "no", name: "No"}]
"""


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


def sniff(client, name, data, **extra):
    return client.post(
        URL, {"step": "sniff", "file": SimpleUploadedFile(name, data), **extra}
    )


def token_of(response) -> str:
    return re.search(r'name="token" value="([0-9a-f]{32})"', response.content.decode())[
        1
    ]


def step(client, step_name, token, **fields):
    return client.post(URL, {"step": step_name, "token": token, **fields}, **{})


# --- The page and who may use it ----------------------------------------------------------


def test_the_page_has_a_drop_zone_and_a_plain_file_input(client_for, researcher):
    response = client_for(researcher).get(URL)
    body = response.content.decode()
    assert response.status_code == 200
    assert "data-drop-zone" in body and 'type="file" name="file"' in body
    assert 'enctype="multipart/form-data"' in body  # works without JavaScript
    assert "js/upload.js" in body
    for label in ("Dataset", "Rubric", "Gold items", "Preference set", "Judge results"):
        assert label in page_text(response)


def test_raters_are_refused_and_anonymous_users_sent_to_log_in(client_for, rater):
    refused = client_for(rater).get(URL)
    assert refused.status_code == 403 and "researcher" in page_text(refused)
    posted = sniff(client_for(rater), "e.jsonl", EVAL_SET)
    assert posted.status_code == 403
    anonymous = client_for(None).get(URL)
    assert anonymous.status_code == 302 and "/login/" in anonymous.url


def test_raters_see_no_upload_link_and_researchers_do(client_for, rater, researcher):
    assert URL not in client_for(rater).get(reverse("home")).content.decode()
    assert URL in client_for(researcher).get(reverse("home")).content.decode()


# --- Happy paths, one per kind ------------------------------------------------------------


def test_a_dataset_goes_guess_then_preview_then_confirm(client_for, researcher):
    client = client_for(researcher)
    guessed = sniff(client, "eval_set.jsonl", EVAL_SET)
    text = page_text(guessed)
    assert guessed.status_code == 200
    assert "Looks like dataset" in text and "FLASK evaluation set" in text
    assert "idx" in text and "instruction" in text  # the columns read
    assert re.search(r'<option value="flask"[^>]* selected>', guessed.content.decode())
    assert re.search(r'<option value="dataset" selected>', guessed.content.decode())

    checked = step(client, "check", token_of(guessed), kind="dataset", format="flask",
                   dataset_name="sky")  # fmt: skip
    job = ImportJob.objects.get(dataset_name="sky")
    assert checked.status_code == 302
    assert checked.url == reverse("annotation:import-detail", args=[job.pk])
    assert job.status == ImportJob.Status.VALIDATED and not Dataset.objects.exists()
    preview = client.get(checked.url)
    assert "Why is the sky blue?" in page_text(preview)
    assert "Confirm import" in page_text(preview)

    client.post(reverse("annotation:import-confirm", args=[job.pk]))
    assert Instruction.objects.filter(dataset__name="sky").count() == 2


def test_a_generic_csv_takes_the_proposed_mapping(client_for, researcher):
    client = client_for(researcher)
    guessed = sniff(
        client, "rows.csv", b"question,output,model_name\nWhy?,Because.,m1\n"
    )
    assert "instruction=question" in page_text(guessed)
    mapping = "instruction=question\nresponse=output\nmodel=model_name"
    checked = step(client, "check", token_of(guessed), kind="dataset", format="csv",
                   dataset_name="rows", mapping=mapping)  # fmt: skip
    job = ImportJob.objects.get(dataset_name="rows")
    assert checked.status_code == 302 and job.status == "validated", job.errors
    import_job_confirm(job=job)
    assert (
        Dataset.objects.get(name="rows").instructions.get().responses.get().model_name
        == "m1"
    )


def test_a_rubric_is_checked_without_writing_then_created(client_for, researcher):
    client = client_for(researcher)
    before = Rubric.objects.count()
    guessed = sniff(client, "support.yaml", RUBRIC_YAML)
    assert "Looks like rubric" in page_text(guessed)
    token = token_of(guessed)
    checked = step(client, "check", token, kind="rubric", format="rubric")
    assert checked.status_code == 200
    assert "to create: rubric “Support quality” version 1" in page_text(checked)
    assert "2 criteria" in page_text(checked) and "Confirm import" in page_text(checked)
    assert Rubric.objects.count() == before

    confirmed = step(client, "confirm", token, kind="rubric", format="rubric")
    rubric = Rubric.objects.get(name="Support quality")
    assert confirmed.status_code == 302
    assert confirmed.url == reverse("annotation:rubric-detail", args=[rubric.pk])
    # The staged file is gone once imported: confirming again imports nothing more.
    again = step(client, "confirm", token, kind="rubric", format="rubric")
    assert again.status_code == 400 and "upload it again" in page_text(again)
    assert Rubric.objects.filter(name="Support quality").count() == 1


def test_gold_items_go_into_an_existing_dataset(client_for, researcher):
    dataset = dataset_with_responses(n_instructions=2)
    responses = list(dataset.instructions.first().responses.all())
    data = (
        "response_id,factuality,tolerance\n"
        f"{responses[0].pk},4,0\n{responses[1].pk},2,1\n"
    ).encode()
    client = client_for(researcher)
    guessed = sniff(client, "marks.csv", data)
    assert "Looks like gold items" in page_text(guessed)
    token = token_of(guessed)
    fields = {"kind": "gold", "format": "csv", "dataset_name": dataset.name}
    checked = step(client, "check", token, **fields)
    assert "2 gold items to create" in page_text(checked)
    assert not GoldItem.objects.exists()

    confirmed = step(client, "confirm", token, **fields)
    assert confirmed.url == reverse("annotation:dataset-gold", args=[dataset.pk])
    assert GoldItem.objects.filter(dataset=dataset).count() == 2


def test_a_preference_set_with_a_b_columns(client_for, researcher):
    data = jsonl(
        {
            "prompt": "Say hi",
            "response_a": "Hi!",
            "response_b": "Go away.",
            "winner": 1,
        },
        {"prompt": "Add 2+2", "response_a": "4", "response_b": "5", "winner": 1},
    )
    client = client_for(researcher)
    guessed = sniff(client, "arena.jsonl", data)
    assert "Looks like preference set" in page_text(guessed)
    token = token_of(guessed)
    fields = {
        "kind": "preferences",
        "format": "jsonl",
        "dataset_name": "arena",
        "mapping": "response_1=response_a\nresponse_2=response_b\nlabel=winner",
    }
    checked = step(client, "check", token, **fields)
    assert checked.status_code == 200, page_text(checked)
    assert "2 human preference(s) to create" in page_text(checked)
    assert not Dataset.objects.filter(name="arena").exists()

    confirmed = step(client, "confirm", token, **fields)
    dataset = Dataset.objects.get(name="arena")
    assert confirmed.url == reverse("annotation:dataset-detail", args=[dataset.pk])
    assert HumanPreference.objects.filter(pair__dataset=dataset).count() == 2


def test_judge_results_become_an_imported_run(client_for, researcher):
    dataset = dataset_with_responses(n_instructions=2, models=("m-a",))
    ids = list(dataset.instructions.values_list("external_id", flat=True))
    data = "".join(
        f"{i},m-a,Factuality,{s}\n" for i, s in zip(ids, (4, 5), strict=True)
    )
    client = client_for(researcher)
    guessed = sniff(client, "scores.csv", ("id,model,skill,score\n" + data).encode())
    assert "Looks like judge results" in page_text(guessed)
    token = token_of(guessed)
    fields = {"kind": "judge_results", "format": "csv", "dataset_name": dataset.name}
    checked = step(client, "check", token, **fields)
    assert "to create: 2 judge calls" in page_text(checked)
    assert not JudgeRun.objects.exists() and not ImportJob.objects.exists()

    confirmed = step(client, "confirm", token, **fields)
    run = JudgeRun.objects.get()
    assert confirmed.url == reverse("judging:run-detail", args=[run.pk])
    assert JudgeScore.objects.filter(call__run=run).count() == 2


# --- Bad input: problems with their lines, nothing written --------------------------------


def test_a_bad_gold_file_lists_its_lines_and_writes_nothing(client_for, researcher):
    dataset = dataset_with_responses(n_instructions=1)
    response = dataset.instructions.get().responses.first()
    data = f"response_id,factuality\n{response.pk},4\n999999,9\n".encode()
    client = client_for(researcher)
    token = token_of(sniff(client, "gold.csv", data))
    for step_name in ("check", "confirm"):
        refused = step(client, step_name, token, kind="gold", format="csv",
                       dataset_name=dataset.name)  # fmt: skip
        text = page_text(refused)
        assert refused.status_code == 400
        assert 'id="upload-problems"' in refused.content.decode()
        assert "line 3" in text and "Nothing was written" in text
    assert not GoldItem.objects.exists()


def test_bad_judge_results_name_the_line_and_leave_no_run_nor_record(
    client_for, researcher
):
    dataset = dataset_with_responses(n_instructions=1, models=("m-a",))
    ext = dataset.instructions.get().external_id
    data = f"id,model,skill,score\n{ext},m-a,Factuality,4\n{ext},m-a,Telepathy,3\n"
    client = client_for(researcher)
    token = token_of(sniff(client, "scores.csv", data.encode()))
    refused = step(client, "check", token, kind="judge_results", format="csv",
                   dataset_name=dataset.name)  # fmt: skip
    assert refused.status_code == 400
    assert "line 3" in page_text(refused) and "Telepathy" in page_text(refused)
    assert not JudgeRun.objects.exists() and not ImportJob.objects.exists()


def test_a_bad_dataset_file_shows_the_problems_on_its_import_page(
    client_for, researcher
):
    client = client_for(researcher)
    bad = EVAL_SET + b"{not json\n"
    token = token_of(sniff(client, "eval_set.jsonl", bad))
    checked = step(client, "check", token, kind="dataset", format="flask",
                   dataset_name="broken")  # fmt: skip
    job = ImportJob.objects.get(dataset_name="broken")
    assert job.status == ImportJob.Status.INVALID
    assert "line 3" in page_text(client.get(checked.url))
    assert not Dataset.objects.exists()


def test_the_choices_are_checked_naming_the_field(client_for, researcher):
    client = client_for(researcher)
    token = token_of(sniff(client, "support.yaml", RUBRIC_YAML))
    wrong_format = step(client, "check", token, kind="rubric", format="csv")
    assert wrong_format.status_code == 400
    assert "Rubric reads one of: rubric" in page_text(wrong_format)
    no_dataset = step(client, "check", token, kind="gold", format="csv",
                      dataset_name="nope")  # fmt: skip
    assert no_dataset.status_code == 400
    assert "no dataset named “nope”" in page_text(no_dataset)
    mapped = step(client, "check", token, kind="rubric", format="rubric",
                  mapping="instruction=q")  # fmt: skip
    assert "read fixed names" in page_text(mapped)
    assert not Rubric.objects.filter(name="Support quality").exists()


def test_another_persons_token_is_no_upload(client_for, researcher, admin_user):
    token = token_of(sniff(client_for(admin_user), "support.yaml", RUBRIC_YAML))
    response = step(client_for(researcher), "confirm", token, kind="rubric",
                    format="rubric")  # fmt: skip
    assert response.status_code == 400
    assert "no longer here" in page_text(response)
    assert not Rubric.objects.filter(name="Support quality").exists()


def test_an_oversized_or_missing_file_is_refused_before_reading(
    client_for, researcher, settings
):
    settings.IMPORT_MAX_BYTES = 10
    client = client_for(researcher)
    big = sniff(client, "eval_set.jsonl", EVAL_SET)
    assert big.status_code == 400 and "over the import limit" in page_text(big)
    missing = client.post(URL, {"step": "sniff"})
    assert missing.status_code == 400 and "This field is required" in page_text(missing)
    nonsense = client.post(URL, {"step": "bogus"})
    assert nonsense.status_code == 400


def test_an_ambiguous_file_asks_which_kind(client_for, researcher):
    guessed = sniff(
        client_for(researcher), "sheet.csv", b"instruction,model,factuality\n1,m,4\n"
    )
    assert guessed.status_code == 200
    text = page_text(guessed)
    assert "Which kind of import is it?" in text
    assert "gold" in text and "dataset" in text


# --- htmx ------------------------------------------------------------------------------


def test_htmx_gets_the_step_fragment_and_redirects_by_header(client_for, researcher):
    client = client_for(researcher)
    htmx = {"HTTP_HX_REQUEST": "true"}
    guessed = client.post(
        URL,
        {"step": "sniff", "file": SimpleUploadedFile("e.jsonl", EVAL_SET)},
        **htmx,
    )
    body = guessed.content.decode()
    assert guessed.status_code == 200
    assert body.lstrip().startswith('<section id="upload-step"') and "<html" not in body
    assert "Looks like" in body

    token = token_of(guessed)
    refused = client.post(
        URL,
        {
            "step": "check",
            "token": token,
            "kind": "gold",
            "format": "jsonl",
            "dataset_name": "nope",
        },
        **htmx,  # fmt: skip
    )
    assert refused.status_code == 400 and "<html" not in refused.content.decode()

    checked = client.post(
        URL,
        {
            "step": "check",
            "token": token,
            "kind": "dataset",
            "format": "flask",
            "dataset_name": "sky",
        },
        **htmx,  # fmt: skip
    )
    job = ImportJob.objects.get(dataset_name="sky")
    assert checked["HX-Redirect"] == reverse("annotation:import-detail", args=[job.pk])


# --- The first-run checklist on the home page ---------------------------------------------


def checklist_of(response) -> dict[str, str]:
    """step key -> its classes ("is-done", "is-next"), in the page's order."""
    found = re.findall(
        r'<li class="([^"]*)" data-step="(\w+)"', response.content.decode()
    )
    return {key: classes for classes, key in found}


def test_the_checklist_starts_at_import_and_links_the_upload_page(
    client_for, researcher
):
    response = client_for(researcher).get(reverse("home"))
    steps = checklist_of(response)
    assert list(steps) == ["data", "rubric", "campaign", "judge", "run", "compare"]
    assert steps["data"] == "step is-next"
    assert not any("is-done" in c for c in steps.values())
    assert "0 of 6 done" in page_text(response)
    assert f'href="{URL}"' in response.content.decode()


def test_the_checklist_marks_what_is_done_and_the_next_step(client_for, researcher):
    dataset_with_responses(n_instructions=1)
    response = client_for(researcher).get(reverse("home"))
    steps = checklist_of(response)
    assert "is-done" in steps["data"] and "is-done" in steps["rubric"]
    assert "is-next" in steps["campaign"]
    assert "1 dataset imported" in page_text(response)
    assert "2 of 6 done" in page_text(response)


def test_the_checklist_reads_judge_runs_and_agreement(client_for, researcher):
    # Human scores come with a dataset file (a criterion column and a rater) ...
    row = {"id": "q1", "instruction": "Hi", "response": "Yo", "model": "m-a",
           "factuality": 4, "rater": "ann"}  # fmt: skip
    dataset_import_files(
        dataset_name="both",
        fmt="jsonl",
        files=[("h.jsonl", jsonl(row))],
        user=researcher,
    )
    client = client_for(researcher)
    steps = checklist_of(client.get(reverse("home")))
    assert "is-done" not in steps["run"] and "is-done" not in steps["compare"]
    # ... and judge scores of the same responses through the upload page.
    data = b"id,model,skill,score\nq1,m-a,Factuality,5\n"
    token = token_of(sniff(client, "s.csv", data))
    step(client, "confirm", token, kind="judge_results", format="csv",
         dataset_name="both")  # fmt: skip
    response = client.get(reverse("home"))
    steps = checklist_of(response)
    assert "is-done" in steps["run"] and "is-done" in steps["compare"]
    # Imported scores sit in a closed campaign; an imported run has no judge config.
    assert "is-done" in steps["campaign"] and "is-next" in steps["judge"]
    dataset = Dataset.objects.get(name="both")
    assert reverse("analysis:agreement", args=[dataset.pk]) in response.content.decode()
    assert "Agreement is ready for “both”" in page_text(response)


def test_the_checklist_says_what_the_role_may_not_do(
    client_for, researcher, admin_user
):
    note = "A new endpoint (base URL and key variable) needs an admin"
    assert note in page_text(client_for(researcher).get(reverse("home")))
    assert note not in page_text(client_for(admin_user).get(reverse("home")))


def test_raters_and_reviewers_get_no_checklist(client_for, rater):
    assert (
        'id="checklist"' not in client_for(rater).get(reverse("home")).content.decode()
    )


def test_a_datasets_page_links_the_upload_with_its_name(client_for, researcher):
    dataset = dataset_with_responses(n_instructions=1)
    client = client_for(researcher)
    detail = client.get(reverse("annotation:dataset-detail", args=[dataset.pk]))
    assert f"{URL}?dataset={dataset.name}" in detail.content.decode()
    page = client.get(URL, {"dataset": dataset.name})
    assert f'name="dataset" value="{dataset.name}"' in page.content.decode()
    guessed = sniff(
        client, "marks.csv", b"response_id,factuality\n1,4\n", dataset=dataset.name
    )
    assert f'name="dataset_name" id="id_dataset_name" value="{dataset.name}"' in (
        guessed.content.decode()
    )


@pytest.mark.skipif(not PARQUET.available(), reason="pyarrow is not installed")
def test_a_parquet_dataset_is_sniffed_mapped_and_imported(client_for, researcher):
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    table = pa.table({"prompt": ["Why?", "How?"], "completion": ["So.", "Thus."]})
    pq.write_table(table, buffer)
    client = client_for(researcher)
    guessed = sniff(client, "train-00000.parquet", buffer.getvalue())
    text = page_text(guessed)
    assert "read as parquet" in text and "instruction=prompt" in text
    checked = step(client, "check", token_of(guessed), kind="dataset", format="jsonl",
                   dataset_name="hub", model="m1",
                   mapping="instruction=prompt\nresponse=completion")  # fmt: skip
    job = ImportJob.objects.get(dataset_name="hub")
    assert checked.status_code == 302 and job.status == "validated", job.errors
    import_job_confirm(job=job)
    assert Instruction.objects.filter(dataset__name="hub").count() == 2


def test_the_home_page_reads_the_checklist_in_constant_queries(
    client_for, researcher, django_assert_max_num_queries
):
    client = client_for(researcher)
    client.get(reverse("home"))
    with django_assert_max_num_queries(20) as few:
        client.get(reverse("home"))
    for _ in range(3):
        dataset_with_responses(n_instructions=2)
    with django_assert_max_num_queries(len(few.captured_queries)):
        client.get(reverse("home"))
