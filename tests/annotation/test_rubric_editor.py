"""Rubrics written and edited in the browser as our rubric file's YAML: the download
reads back as the same rubric, an edit saves the next version (the old one never
changes), a bad text names its line and field and saves nothing; admins only write."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.importers.rubric_file import parse_rubric_file
from annotation.models import Rubric
from annotation.selectors.rubric_files import NEW_RUBRIC_TEMPLATE, rubric_file_yaml
from annotation.services.rubrics import rubric_get_default, rubric_import
from tests.annotation.test_rubric_files import HELPSTEER_YAML

pytestmark = pytest.mark.django_db

FIELDS = ("key", "name", "group", "kind", "scale_min", "scale_max", "scale_anchors",
          "labels", "allow_na", "criteria")  # fmt: skip


def stored(rubric: Rubric) -> list[tuple]:
    return [tuple(getattr(s, f) for f in FIELDS) for s in rubric.skills.all()]


@pytest.mark.parametrize("make", ["builtin", "helpsteer"])
def test_the_yaml_reads_back_as_the_same_rubric(make):
    if make == "builtin":
        rubric = rubric_get_default()
    else:
        rubric = rubric_import(data=HELPSTEER_YAML, file="h.yaml")
    text = rubric_file_yaml(rubric)
    parsed, problems = parse_rubric_file(text.encode(), file="x.yaml")
    assert problems == [] and parsed.name == rubric.name
    again = rubric_import(data=text.encode(), file="x.yaml")
    assert again.version == rubric.version + 1
    assert stored(again) == stored(rubric)
    assert again.groups == rubric.groups


def test_editing_saves_the_next_version_and_leaves_the_old_one(client_for, admin_user):
    v1 = rubric_import(data=HELPSTEER_YAML, file="h.yaml")
    before = stored(v1)
    client = client_for(admin_user)
    page = client.get(reverse("annotation:rubric-edit", args=[v1.pk]))
    assert page.status_code == 200
    text = page.context["text"]
    assert "key: helpfulness" in text and "min: 0" in text
    edited = text.replace("name: Helpfulness", "name: Usefulness")
    response = client.post(
        reverse("annotation:rubric-edit", args=[v1.pk]), {"text": edited}
    )
    v2 = Rubric.objects.get(name="HelpSteer attributes", version=2)
    assert response.status_code == 302
    assert response["Location"] == reverse("annotation:rubric-detail", args=[v2.pk])
    assert v2.skills.get(key="helpfulness").name == "Usefulness"
    v1.refresh_from_db()
    assert stored(v1) == before  # the old version never changes


def test_a_bad_text_names_its_line_and_field_and_saves_nothing(client_for, admin_user):
    v1 = rubric_import(data=HELPSTEER_YAML, file="h.yaml")
    client = client_for(admin_user)
    text = rubric_file_yaml(v1).replace("max: 4", "max: 0", 1)
    count = Rubric.objects.count()
    response = client.post(
        reverse("annotation:rubric-edit", args=[v1.pk]), {"text": text}
    )
    assert response.status_code == 400 and Rubric.objects.count() == count
    problems = [str(p) for p in response.context["problems"]]
    # The problem points at the first criterion's scale, where its mapping begins.
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "min: 0" in t)
    assert problems == [
        f"the text below, line {line}, field `criteria[0].scale`: min (0) must be "
        "below max (0): a scale has at least 2 points"
    ]
    assert b'id="rubric-problems"' in response.content


def test_a_new_rubric_starts_from_an_example_that_is_valid(client_for, admin_user):
    parsed, problems = parse_rubric_file(NEW_RUBRIC_TEMPLATE.encode(), file="t.yaml")
    assert problems == [] and [c["kind"] for c in parsed.criteria] == [
        "ordinal",
        "categorical",
    ]
    client = client_for(admin_user)
    page = client.get(reverse("annotation:rubric-new"))
    assert page.status_code == 200 and page.context["text"] == NEW_RUBRIC_TEMPLATE
    response = client.post(
        reverse("annotation:rubric-new"), {"text": NEW_RUBRIC_TEMPLATE}
    )
    rubric = Rubric.objects.get(name="My rubric")
    assert response.status_code == 302 and rubric.version == 1
    assert rubric.skills.get(key="overall").scale_max == 7
    assert not rubric.flask_compatible


def test_the_download_is_a_yaml_attachment(client_for, researcher):
    rubric = rubric_get_default()
    response = client_for(researcher).get(
        reverse("annotation:rubric-file", args=[rubric.pk])
    )
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/yaml")
    assert "attachment" in response["Content-Disposition"]
    assert response.content.decode() == rubric_file_yaml(rubric)


def test_researchers_write_rubrics_raters_do_not(client_for, researcher, rater):
    """Issue 35: researchers create rubrics themselves; raters are refused."""
    assert (
        client_for(researcher).get(reverse("annotation:rubric-new")).status_code == 200
    )
    client = client_for(rater)
    rubric = rubric_get_default()
    count = Rubric.objects.count()
    for url in (
        reverse("annotation:rubric-new"),
        reverse("annotation:rubric-edit", args=[rubric.pk]),
    ):
        assert client.get(url).status_code == 403
        assert client.post(url, {"text": NEW_RUBRIC_TEMPLATE}).status_code == 403
    assert Rubric.objects.count() == count
    download = client.get(reverse("annotation:rubric-file", args=[rubric.pk]))
    assert download.status_code == 403


def test_anonymous_users_are_sent_to_log_in(client):
    rubric = rubric_get_default()
    for url in (
        reverse("annotation:rubric-new"),
        reverse("annotation:rubric-edit", args=[rubric.pk]),
        reverse("annotation:rubric-file", args=[rubric.pk]),
    ):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(
            "/login/"
        )
