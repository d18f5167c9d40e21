"""A dataset's own slicing taxonomy (issue 35): declared at its first import
(`import_dataset --taxonomy FILE --facet COLUMN`, the import API's `taxonomy` and
`facets`), every row checked against it with its line and field named, and kept for
later imports."""

from __future__ import annotations

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotation.models import Dataset, ImportJob, Instruction, Response
from tests.annotation.support_data import (
    TAXONOMY,
    support_rows,
    write_jsonl,
    write_taxonomy,
)

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue()


def refused(*args) -> str:
    with pytest.raises(CommandError) as exc:
        run(*args)
    return str(exc.value)


def import_support(tmp_path, rows=None, *extra) -> str:
    path = write_jsonl(tmp_path / "tickets.jsonl", rows or support_rows())
    taxonomy = write_taxonomy(tmp_path / "taxonomy.json")
    return run(
        "import_dataset", str(path), "--dataset", "support",
        "--taxonomy", str(taxonomy), "--facet", "language", *extra,
    )  # fmt: skip


def test_import_with_a_taxonomy_stores_its_keys_levels_and_facets(tmp_path):
    out = import_support(tmp_path)

    assert "created:       6 instructions, 12 responses" in out
    dataset = Dataset.objects.get(name="support")
    assert [d["label"] for d in dataset.taxonomy["domains"]] == [
        "billing", "shipping", "Account access",
    ]  # fmt: skip
    assert dataset.taxonomy["difficulty"] == TAXONOMY["difficulty"]
    assert [f["name"] for f in dataset.taxonomy["facets"]] == ["channel", "language"]
    stored = {
        i.external_id: (i.domains, i.difficulty, i.metadata)
        for i in Instruction.objects.filter(dataset=dataset)
    }
    # Names and labels matched whatever their case; the declared spelling stored.
    assert stored["t3"] == (["account"], 1, {"channel": "phone", "language": "de"})
    assert stored["t4"] == (["billing", "shipping"], 3, {"channel": "email",
                                                         "language": "de"})  # fmt: skip
    assert stored["t5"][:2] == (["account"], 2)
    assert stored["t6"][1] is None


def test_a_domain_not_declared_is_refused_naming_its_line_and_field(tmp_path):
    rows = support_rows()
    rows[2]["domains"] = ["math"]  # FLASK's, not this dataset's

    message = refused(*_args(tmp_path, rows))

    assert "line 3, field `domains`: unknown domain 'math'; this dataset's domains " \
        "are: billing, shipping, Account access" in message  # fmt: skip
    assert not Dataset.objects.filter(name="support").exists()


@pytest.mark.parametrize(
    "field, value, expected",
    [
        ("difficulty", 4, "line 5, field `difficulty`: difficulty 4 is not a level "
         "of this dataset (1 = routine; 2 = tricky; 3 = escalation)"),
        ("difficulty", "hard", "line 5, field `difficulty`: unknown difficulty "
         "'hard'; this dataset's levels are: 1 = routine"),
        ("channel", "fax", "line 5, field `channel`: unknown channel 'fax'; "
         "expected one of: email, chat, phone"),
        ("language", ["en", "de"], "line 5, field `language`: facet 'language' "
         "must be one value (text or a number), got array"),
    ],
)  # fmt: skip
def test_a_value_outside_the_taxonomy_names_its_line_and_field(
    tmp_path, field, value, expected
):
    rows = support_rows()
    rows[4][field] = value

    assert expected in refused(*_args(tmp_path, rows))
    assert Instruction.objects.count() == 0


def _args(tmp_path, rows) -> list[str]:
    path = write_jsonl(tmp_path / "tickets.jsonl", rows)
    taxonomy = write_taxonomy(tmp_path / "taxonomy.json")
    return ["import_dataset", str(path), "--dataset", "support",
            "--taxonomy", str(taxonomy), "--facet", "language"]  # fmt: skip


@pytest.mark.parametrize(
    "taxonomy, expected",
    [
        (
            {"difficulty": {"100": "x"}},
            "level '100' is not a whole number from 1 to 99",
        ),
        ({"domains": "billing"}, "`domains` must be a non-empty list"),
        ({"facets": ["model"]}, "`facets` item 1: 'model' is a field of the import"),
        ({"domain": []}, "unknown key 'domain'"),
        ({"domains": ["billing", "Billing"]}, "'billing' is also item 1"),
    ],
)
def test_a_bad_taxonomy_is_refused_naming_the_field(tmp_path, taxonomy, expected):
    path = write_jsonl(tmp_path / "tickets.jsonl", support_rows())
    bad = write_taxonomy(tmp_path / "taxonomy.json", taxonomy)

    message = refused("import_dataset", str(path), "--dataset", "support",
                      "--taxonomy", str(bad))  # fmt: skip

    assert "field `taxonomy`" in message and expected in message
    assert not Dataset.objects.exists()


def test_a_taxonomy_file_that_is_not_json_is_refused_naming_the_option(tmp_path):
    path = write_jsonl(tmp_path / "tickets.jsonl", support_rows())
    bad = tmp_path / "taxonomy.json"
    bad.write_text("{domains: [")

    message = refused("import_dataset", str(path), "--dataset", "support",
                      "--taxonomy", str(bad))  # fmt: skip

    assert "not valid JSON (--taxonomy)" in message


def test_a_later_import_uses_the_taxonomy_and_cannot_change_it(tmp_path):
    import_support(tmp_path)
    more = write_jsonl(
        tmp_path / "more.jsonl",
        [{"id": "t7", "instruction": "Where is my refund?", "domains": "Billing",
          "difficulty": "tricky", "channel": "Chat", "model": "helper-a",
          "response": "On its way."}],
    )  # fmt: skip

    run("import_dataset", str(more), "--dataset", "support")
    t7 = Instruction.objects.get(external_id="t7")
    assert (t7.domains, t7.difficulty, t7.metadata["channel"]) == (
        ["billing"], 2, "chat",
    )  # fmt: skip

    other = write_taxonomy(tmp_path / "other.json", {"domains": ["returns"]})
    message = refused("import_dataset", str(more), "--dataset", "support",
                      "--taxonomy", str(other))  # fmt: skip
    assert "field `taxonomy`: dataset 'support' declared its own taxonomy" in message
    message = refused("import_dataset", str(more), "--dataset", "support",
                      "--facet", "region")  # fmt: skip
    assert "a later import cannot change it" in message


def test_a_dataset_without_a_taxonomy_keeps_flask_domains(tmp_path):
    path = write_jsonl(tmp_path / "tickets.jsonl", support_rows()[:1])

    message = refused("import_dataset", str(path), "--dataset", "plain")

    assert "line 1, field `domains`: unknown domain 'billing'; expected one of: " \
        "Coding, Culture" in message  # fmt: skip


def test_a_facet_with_too_many_values_is_refused(tmp_path):
    rows = [
        {"id": f"r{n}", "instruction": f"Ticket {n}", "ticket_no": f"#{n}"}
        for n in range(102)
    ]
    path = write_jsonl(tmp_path / "tickets.jsonl", rows)

    message = refused("import_dataset", str(path), "--dataset", "ids",
                      "--facet", "ticket_no")  # fmt: skip

    assert "line 101, field `ticket_no`: facet 'ticket_no' has more than 100 " \
        "different values" in message  # fmt: skip


def test_a_misspelt_facet_column_is_a_warning_and_strict_refuses_it(tmp_path):
    path = write_jsonl(tmp_path / "tickets.jsonl", support_rows())
    taxonomy = str(write_taxonomy(tmp_path / "taxonomy.json"))

    out = run("import_dataset", str(path), "--dataset", "w", "--taxonomy", taxonomy,
              "--facet", "chanel")  # fmt: skip
    assert "the file has no column 'chanel' for the facet 'chanel'" in out

    message = refused("import_dataset", str(path), "--dataset", "w2", "--taxonomy",
                      taxonomy, "--facet", "chanel", "--strict")  # fmt: skip
    assert "warnings are errors" in message


# --- The import API ---------------------------------------------------------------------


def _upload(client, name, rows, **data):
    body = "".join(json.dumps(r) + "\n" for r in rows).encode()
    upload = io.BytesIO(body)
    upload.name = "tickets.jsonl"
    return client.post(
        reverse("annotation_api:dataset-import", args=[name]),
        {"format": "jsonl", "file": upload, **data},
        format="multipart",
    )


def test_api_import_declares_the_taxonomy_and_detail_shows_its_labels(
    admin_user, api_client_for
):
    client = api_client_for(admin_user)

    resp = _upload(client, "support-api", support_rows(),
                   taxonomy=json.dumps(TAXONOMY), facets=["language"])  # fmt: skip

    assert resp.status_code == 201, resp.content
    dataset = Dataset.objects.get(name="support-api")
    assert Response.objects.filter(instruction__dataset=dataset).count() == 12
    detail = client.get(
        reverse("annotation_api:dataset-detail", args=[dataset.pk])
    ).json()
    assert detail["taxonomy"]["facets"][1] == {"name": "language", "values": None}
    assert {d["key"]: d["label"] for d in detail["stats"]["domains"]} == {
        "account": "Account access", "billing": "billing", "shipping": "shipping",
    }  # fmt: skip
    assert [d["label"] for d in detail["stats"]["difficulties"]] == [
        "routine", "tricky", "escalation", "Unknown",
    ]  # fmt: skip


def test_api_import_refuses_a_bad_taxonomy_naming_it(admin_user, api_client_for):
    client = api_client_for(admin_user)

    resp = _upload(client, "bad-api", support_rows(), taxonomy="{not json")
    assert resp.status_code == 400
    assert "taxonomy" in resp.json()["problems"][0]["field"]

    resp = _upload(client, "bad-api", support_rows(),
                   taxonomy=json.dumps({"difficulty": ["a", "a"]}))  # fmt: skip
    assert resp.status_code == 400
    assert any(p["field"] == "taxonomy" for p in resp.json()["errors"])
    assert not Dataset.objects.filter(name="bad-api").exists()


def test_api_import_with_a_taxonomy_is_refused_to_a_rater(rater, api_client_for):
    resp = _upload(api_client_for(rater), "support-api", support_rows(),
                   taxonomy=json.dumps(TAXONOMY))  # fmt: skip

    assert resp.status_code == 403
    assert not Dataset.objects.exists()


# --- The upload page --------------------------------------------------------------------


def _post_page(client, rows, **extra):
    body = "".join(json.dumps(r) + "\n" for r in rows).encode()
    return client.post(
        reverse("annotation:import-new"),
        {
            "dataset_name": "support-page",
            "format": "jsonl",
            "files": SimpleUploadedFile("tickets.jsonl", body),
            **extra,
        },
    )


def test_upload_page_declares_the_taxonomy_and_facets(client_for, admin_user):
    client = client_for(admin_user)

    response = _post_page(
        client, support_rows(), taxonomy=json.dumps(TAXONOMY), facets="language"
    )

    job = ImportJob.objects.get()
    assert response.status_code == 302 and job.status == ImportJob.Status.VALIDATED
    client.post(reverse("annotation:import-confirm", args=[job.pk]))
    dataset = Dataset.objects.get(name="support-page")
    assert [f["name"] for f in dataset.taxonomy["facets"]] == ["channel", "language"]
    url = reverse("annotation:dataset-detail", args=[dataset.pk])
    assert "Account access" in client.get(url).content.decode()
    # The instruction browser filters by the dataset's own domains and levels.
    filtered = client.get(url, {"domain": "account"}).content.decode()
    assert "cannot log in after resetting" in filtered
    assert "charged twice" not in filtered
    fragment = client.get(
        url, {"difficulty": "3"}, headers={"HX-Request": "true"}
    ).content.decode()
    assert "Refund the duplicate charge" in fragment
    assert "cannot log in after resetting" not in fragment


def test_upload_page_names_a_row_outside_the_taxonomy(client_for, admin_user):
    client = client_for(admin_user)
    rows = support_rows()
    rows[1]["channel"] = "fax"

    response = _post_page(client, rows, taxonomy=json.dumps(TAXONOMY))

    job = ImportJob.objects.get()
    assert job.status == ImportJob.Status.INVALID
    detail = client.get(response.url).content.decode()
    assert "unknown channel &#x27;fax&#x27;; expected one of: email, chat, phone" in (
        detail
    )
    assert "<code>channel</code>" in detail
    assert not Dataset.objects.exists()


def test_upload_page_refuses_taxonomy_that_is_not_json(client_for, admin_user):
    response = _post_page(client_for(admin_user), support_rows(), taxonomy="{oops")

    assert response.status_code == 400
    assert "This is not valid JSON" in response.content.decode()
    assert not ImportJob.objects.exists()


def test_upload_page_with_a_taxonomy_is_open_to_researchers_not_raters(
    client_for, researcher, rater
):
    """Researchers bring their own data, taxonomy included (self-service); a rater
    does not."""
    refused = _post_page(
        client_for(rater), support_rows(), taxonomy=json.dumps(TAXONOMY)
    )
    assert refused.status_code == 403
    assert not ImportJob.objects.exists()

    response = _post_page(
        client_for(researcher), support_rows(), taxonomy=json.dumps(TAXONOMY)
    )
    assert response.status_code == 302
    assert ImportJob.objects.count() == 1
