"""A dataset's taxonomy everywhere after its import (issue 35's follow-up): the API's
instruction filters take the dataset's domains, levels and facets (a value it does
not declare is a 400 naming the parameter and listing the allowed ones), a dataset
declares whatever levels it has, and owners and researchers edit the taxonomy on
the dataset page and in the API without orphaning an instruction, audited."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Dataset, Instruction
from flaskapp.errors import DomainError
from flaskapp.models import AuditEvent
from tests.annotation.support_data import (
    TAXONOMY,
    support_rows,
    write_jsonl,
    write_taxonomy,
)
from tests.annotation.test_api import small_dataset
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def support(tmp_path) -> Dataset:
    """The support tickets: domains billing/shipping/account, levels 1-3, facets
    channel (declared values) and language (inferred: en, de, fr)."""
    path = write_jsonl(tmp_path / "tickets.jsonl", support_rows())
    taxonomy = write_taxonomy(tmp_path / "taxonomy.json")
    call_command(
        "import_dataset", str(path), "--dataset", "support",
        "--taxonomy", str(taxonomy), "--facet", "language", stdout=io.StringIO(),
    )  # fmt: skip
    return Dataset.objects.get(name="support")


def _instructions(client, dataset, query: str):
    url = reverse("annotation_api:instruction-list", args=[dataset.pk])
    return client.get(f"{url}?{query}")


def _ids(resp) -> list[str]:
    return sorted(i["external_id"] for i in resp.json()["results"])


# --- The API's instruction filters ------------------------------------------------------


def test_api_filters_by_the_dataset_own_domain_level_and_facet(
    support, researcher, api_client_for
):
    client = api_client_for(researcher)

    assert _ids(_instructions(client, support, "domain=account")) == ["t3", "t5"]
    assert _ids(_instructions(client, support, "difficulty=3")) == ["t4"]
    assert _ids(_instructions(client, support, "difficulty=unknown")) == ["t6"]
    assert _ids(_instructions(client, support, "facet.channel=chat")) == ["t2", "t5"]
    assert _ids(_instructions(client, support, "facet.language=de&domain=billing")) == [
        "t4"
    ]


@pytest.mark.parametrize(
    "query, field, allowed",
    [
        ("domain=math", "domain", "allowed: billing, shipping, account"),
        ("difficulty=4", "difficulty", "allowed: 1, 2, 3, unknown"),
        ("facet.channel=fax", "facet.channel", "allowed: email, chat, phone"),
        ("facet.region=north", "facet.region", "facet.channel, facet.language"),
    ],
)
def test_api_filter_value_the_dataset_does_not_declare_is_400_naming_it(
    support, researcher, api_client_for, query, field, allowed
):
    resp = _instructions(api_client_for(researcher), support, query)

    assert resp.status_code == 400, resp.content
    problems = resp.json()["problems"]
    assert [p["field"] for p in problems] == [field]
    assert allowed in problems[0]["message"]


def test_api_filters_of_flask_data_keep_flask_taxonomy(researcher, api_client_for):
    dataset = small_dataset()
    client = api_client_for(researcher)

    assert _instructions(client, dataset, "domain=math").status_code == 200
    assert _instructions(client, dataset, "difficulty=5").status_code == 200
    resp = _instructions(client, dataset, "domain=billing")
    assert resp.status_code == 400
    assert resp.json()["problems"][0]["field"] == "domain"
    assert "natural_science" in resp.json()["problems"][0]["message"]
    assert _instructions(client, dataset, "difficulty=6").status_code == 400


# --- Levels beyond 1-5 ------------------------------------------------------------------


def test_a_dataset_declares_levels_beyond_five_with_labels(
    tmp_path, researcher, api_client_for, client_for
):
    rows = support_rows()
    for row in rows:
        row["difficulty"] = {"t1": 7, "t2": "expert", "t3": 10}.get(row["id"], 1)
    taxonomy = {**TAXONOMY, "difficulty": {"1": "first line", "7": "expert",
                                            "10": "engineering"}}  # fmt: skip
    path = write_jsonl(tmp_path / "tickets.jsonl", rows)
    call_command(
        "import_dataset", str(path), "--dataset", "deep",
        "--taxonomy", str(write_taxonomy(tmp_path / "t.json", taxonomy)),
        stdout=io.StringIO(),
    )  # fmt: skip
    dataset = Dataset.objects.get(name="deep")

    levels = dict(
        Instruction.objects.filter(dataset=dataset).values_list("external_id",
                                                                "difficulty")
    )  # fmt: skip
    assert levels == {"t1": 7, "t2": 7, "t3": 10, "t4": 1, "t5": 1, "t6": 1}
    client = api_client_for(researcher)
    detail = client.get(reverse("annotation_api:dataset-detail", args=[dataset.pk]))
    assert [(d["level"], d["label"]) for d in detail.json()["stats"]["difficulties"]] \
        == [(1, "first line"), (7, "expert"), (10, "engineering")]  # fmt: skip
    assert _ids(_instructions(client, dataset, "difficulty=10")) == ["t3"]
    page = client_for(researcher).get(
        reverse("annotation:dataset-detail", args=[dataset.pk]) + "?difficulty=7"
    )
    assert page.status_code == 200
    assert "7 · expert" in page.content.decode()


def test_a_level_over_99_is_refused_naming_the_taxonomy():
    from annotation.importers.taxonomy import taxonomy_parse
    from flaskapp.errors import DomainError

    with pytest.raises(DomainError) as exc:
        taxonomy_parse({"difficulty": {"100": "beyond"}})
    assert exc.value.problems[0].field == "taxonomy"
    assert "not a whole number from 1 to 99" in str(exc.value)


# --- Editing the taxonomy: the API ------------------------------------------------------


def _put(client, dataset, taxonomy):
    return client.put(
        reverse("annotation_api:dataset-taxonomy", args=[dataset.pk]),
        {"taxonomy": taxonomy},
        format="json",
    )


def _renamed() -> dict:
    edited = json.loads(json.dumps(TAXONOMY))
    edited["domains"][0] = {"key": "billing", "label": "Payments"}
    edited["difficulty"] = {"1": "routine", "2": "tricky", "3": "escalation",
                            "4": "legal"}  # fmt: skip
    edited["facets"].append({"name": "language", "values": ["en", "de", "fr"]})
    return edited


def test_api_renames_a_label_adds_a_level_and_declares_a_facet_audited(
    support, researcher, api_client_for
):
    client = api_client_for(researcher)
    before = support.taxonomy

    resp = _put(client, support, _renamed())

    assert resp.status_code == 200, resp.content
    support.refresh_from_db()
    taxonomy = support.declared_taxonomy
    assert taxonomy.domain_labels()["billing"] == "Payments"
    assert taxonomy.difficulty_labels()[4] == "legal"
    assert taxonomy.facet("language").values == ("en", "de", "fr")
    event = AuditEvent.objects.get(action="dataset.taxonomy_changed")
    assert event.actor == researcher and event.target_id == str(support.pk)
    assert event.workspace_id == support.workspace_id
    assert event.before == {"taxonomy": before}
    assert event.after == {"taxonomy": support.taxonomy}
    # The new level and label are what the filters and the stats now use.
    assert _instructions(client, support, "difficulty=4").status_code == 200
    detail = client.get(reverse("annotation_api:dataset-detail", args=[support.pk]))
    labels = {d["key"]: d["label"] for d in detail.json()["stats"]["domains"]}
    assert labels["billing"] == "Payments"

    again = _put(client, support, _renamed())  # the same: nothing to record
    assert again.status_code == 200
    assert AuditEvent.objects.filter(action="dataset.taxonomy_changed").count() == 1


@pytest.mark.parametrize(
    "change, field, words",
    [
        (lambda t: t.update(domains=["billing", "shipping"]), "taxonomy.domains",
         "domain 'account' is used by 2 instruction(s)"),
        (lambda t: t.update(difficulty={"1": "routine", "2": "tricky"}),
         "taxonomy.difficulty", "difficulty level 3 is used by 1 instruction(s)"),
        (lambda t: t["facets"].append({"name": "language", "values": ["en", "de"]}),
         "taxonomy.facets", "facet 'language': 1 value(s) the instructions hold "
         "are not declared, e.g. 'fr'"),
        (lambda t: t.update(difficulty={"0": "none"}), "taxonomy",
         "`difficulty` level '0' is not a whole number from 1 to 99"),
    ],
)  # fmt: skip
def test_api_refuses_an_edit_that_orphans_instructions_naming_the_field(
    support, researcher, api_client_for, change, field, words
):
    edited = json.loads(json.dumps(TAXONOMY))
    change(edited)
    before = Dataset.objects.get(pk=support.pk).taxonomy

    resp = _put(api_client_for(researcher), support, edited)

    assert resp.status_code == 400, resp.content
    problem = resp.json()["problems"][0]
    assert problem["field"] == field
    assert words in problem["message"]
    assert Dataset.objects.get(pk=support.pk).taxonomy == before
    assert not AuditEvent.objects.filter(action="dataset.taxonomy_changed").exists()


def test_api_drops_an_unused_domain_and_level(support, researcher, api_client_for):
    edited = json.loads(json.dumps(TAXONOMY))
    edited["domains"].append("returns")
    client = api_client_for(researcher)
    assert _put(client, support, edited).status_code == 200

    resp = _put(client, support, TAXONOMY)  # "returns" is used by no instruction

    assert resp.status_code == 200, resp.content
    support.refresh_from_db()
    assert "returns" not in support.declared_taxonomy.domain_labels()


def test_api_edit_refused_to_rater_and_reviewer_and_body_checked(
    support, rater, researcher, api_client_for
):
    reviewer = UserFactory(username="reviewer-user", role="reviewer")
    assert _put(api_client_for(rater), support, _renamed()).status_code == 403
    assert _put(api_client_for(reviewer), support, _renamed()).status_code == 403
    resp = api_client_for(researcher).put(
        reverse("annotation_api:dataset-taxonomy", args=[support.pk]), {},
        format="json",
    )  # fmt: skip
    assert resp.status_code == 400
    assert resp.json()["problems"][0]["field"] == "taxonomy"
    assert Dataset.objects.get(pk=support.pk).taxonomy["domains"][0]["label"] == (
        "billing"
    )


# --- Editing the taxonomy: the page -----------------------------------------------------


def test_page_shows_the_taxonomy_and_saves_an_edit(support, researcher, client_for):
    client = client_for(researcher)
    url = reverse("annotation:dataset-taxonomy", args=[support.pk])

    page = client.get(url)
    assert page.status_code == 200
    assert "Account access" in page.content.decode()

    resp = client.post(url, {"taxonomy": json.dumps(_renamed())})

    assert resp.status_code == 302
    assert resp["Location"] == reverse("annotation:dataset-detail", args=[support.pk])
    support.refresh_from_db()
    assert support.declared_taxonomy.domain_labels()["billing"] == "Payments"
    detail = client.get(resp["Location"]).content.decode()
    assert "Payments" in detail


def test_page_refuses_an_orphaning_edit_and_bad_json_naming_the_field(
    support, researcher, client_for
):
    client = client_for(researcher)
    url = reverse("annotation:dataset-taxonomy", args=[support.pk])
    before = support.taxonomy

    resp = client.post(url, {"taxonomy": json.dumps({"domains": ["billing"]})})
    assert resp.status_code == 400
    text = resp.content.decode()
    assert "Nothing was saved" in text and "field `taxonomy.domains`" in text

    resp = client.post(url, {"taxonomy": "{not json"})
    assert resp.status_code == 400
    assert "taxonomy: This is not valid JSON" in resp.content.decode()
    assert Dataset.objects.get(pk=support.pk).taxonomy == before


def test_page_is_refused_to_a_rater(support, rater, client_for):
    url = reverse("annotation:dataset-taxonomy", args=[support.pk])
    assert client_for(rater).get(url).status_code == 403
    assert client_for(rater).post(url, {"taxonomy": "{}"}).status_code == 403


# --- The dataset page's instruction browser ---------------------------------------------


def test_dataset_page_offers_and_applies_facet_filters(support, researcher, client_for):
    client = client_for(researcher)
    url = reverse("annotation:dataset-detail", args=[support.pk])

    page = client.get(url).content.decode()
    assert 'name="facet.channel"' in page and 'name="facet.language"' in page
    assert '<option value="chat">chat (2)</option>' in page
    assert '<option value="fr">fr (1)</option>' in page

    fragment = client.get(
        url, {"facet.channel": "chat"}, headers={"HX-Request": "true"}
    ).content.decode()
    shown = {t for t in ("t1", "t2", "t3", "t4", "t5", "t6") if f">{t}<" in fragment}
    assert shown == {"t2", "t5"}


def test_an_import_checked_before_an_edit_that_drops_its_value_is_refused(
    support, researcher
):
    from annotation.services.imports import (
        dataset_parse_files,
        import_parsed,
        skill_lookup,
    )
    from annotation.services.score_imports import rubric_scales
    from annotation.services.taxonomy import dataset_taxonomy_update

    with_returns = json.loads(json.dumps(TAXONOMY))
    with_returns["domains"].append("returns")
    dataset_taxonomy_update(
        user=researcher, dataset_id=support.pk, taxonomy=with_returns
    )
    stale = Dataset.objects.get(pk=support.pk)  # what the import reads first
    row = {**support_rows()[0], "id": "t7", "domains": ["returns"]}
    parsed = dataset_parse_files(
        fmt="jsonl",
        files=[("more.jsonl", (json.dumps(row) + "\n").encode())],
        skill_lookup=skill_lookup(stale.rubric),
        options={},
        scales=rubric_scales(stale.rubric),
        taxonomy=stale.declared_taxonomy,
    )
    assert not parsed.problems
    # Meanwhile "returns", used by no instruction yet, is dropped.
    dataset_taxonomy_update(user=researcher, dataset_id=support.pk, taxonomy=TAXONOMY)

    with pytest.raises(DomainError) as exc:
        import_parsed(dataset_name="support", dataset=stale, rubric=stale.rubric,
                      parsed=parsed, options={}, user=researcher, dry_run=False)  # fmt: skip

    assert exc.value.problems[0].field == "taxonomy"
    assert "changed during this import" in str(exc.value)
    assert not Instruction.objects.filter(dataset=support, external_id="t7").exists()
