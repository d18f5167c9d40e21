"""The rubric editor's live preview (issue 37): the posted YAML checked by the save's
own validator, answered with the per-line problems (200, never a 500, nothing
written) or the raters' rating form (the rater loop's skill rows) and the rubric as
the form builder's model; researchers of the workspace only."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from django.urls import reverse

from annotation.models import Rubric
from annotation.selectors.rubric_files import NEW_RUBRIC_TEMPLATE
from annotation.services.rubrics import rubric_import
from flaskapp.models import Workspace
from tests.annotation.test_rubric_files import HELPSTEER_YAML
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

URL = "/rubrics/preview/"

YES_NO = """\
name: Checks
groups: [{key: checks, name: Checks}]
criteria:
  - key: grounded
    name: Grounded in the source
    group: checks
    kind: categorical
    labels: [{key: "yes", name: "Yes"}, {key: "no", name: "No"}]
    allow_na: false
  - key: tone
    name: Tone
    group: checks
    scale: {min: 0, max: 3}
    anchors: {0: "Rude.", 3: "Warm."}
"""


def _model(html: str) -> dict:
    raw = re.search(r'data-rubric-model="([^"]*)"', html).group(1)
    return json.loads(unescape(raw)) if raw else {}


def test_the_url_is_the_named_route():
    assert reverse("annotation:rubric-preview") == URL


def test_a_valid_text_previews_the_raters_form_and_the_builders_model(
    client_for, researcher
):
    before = Rubric.objects.count()
    resp = client_for(researcher).post(
        URL, {"text": YES_NO}, headers={"HX-Request": "true"}
    )
    assert resp.status_code == 200
    html = resp.content.decode()
    # The rater loop's rows: one fieldset per criterion, its buttons and N/A rule.
    assert 'id="row-grounded"' in html and 'id="row-tone"' in html
    assert 'id="s-grounded-yes"' in html and 'id="s-grounded-na"' not in html
    assert all(f'id="s-tone-{v}"' in html for v in range(4))
    assert 'id="s-tone-na"' in html  # N/A allowed by default
    assert "Rude." in html and "No problems: 2 criteria" in html
    model = _model(html)
    assert model["name"] == "Checks"
    assert [c["key"] for c in model["criteria"]] == ["grounded", "tone"]
    assert model["criteria"][1]["scale"] == {"min": 0, "max": 3}
    assert model["criteria"][0]["labels"][0] == {"key": "yes", "name": "Yes"}
    assert Rubric.objects.count() == before  # nothing written


def test_a_bad_text_lists_each_problem_with_its_line_and_writes_nothing(
    client_for, researcher
):
    bad = YES_NO.replace("max: 3}", "max: 30}").replace("key: tone", "key: to ne")
    before = Rubric.objects.count()
    resp = client_for(researcher).post(URL, {"text": bad})
    assert resp.status_code == 200
    html = resp.content.decode()
    assert "2 problems to fix" in html
    assert 'data-line="10"' in html and "line 10" in html  # key: to ne
    assert 'data-line="13"' in html and "has 31 points" in html
    assert 'data-problem-lines="10 13"' in html
    assert 'data-rubric-model=""' in html and "row-tone" not in html
    assert Rubric.objects.count() == before


@pytest.mark.parametrize(
    "text",
    ["", "criteria: [", "- a\n- b", "name: x\ncriteria: {a: 1}", "\x00", "a: *b"],
)
def test_broken_texts_answer_200_with_problems(client_for, researcher, text):
    resp = client_for(researcher).post(URL, {"text": text})
    assert resp.status_code == 200
    assert 'id="rubric-preview-problems"' in resp.content.decode()


def test_editing_a_rubric_keeps_its_name_and_refuses_anothers(client_for, researcher):
    mine = rubric_import(data=HELPSTEER_YAML, file="h.yaml")
    text = HELPSTEER_YAML.decode()
    nameless = "\n".join(
        line for line in text.splitlines() if not line.startswith("name:")
    )
    client = client_for(researcher)
    assert "name the rubric" in client.post(URL, {"text": nameless}).content.decode()
    resp = client.post(URL, {"text": nameless, "rubric_id": mine.pk})
    assert _model(resp.content.decode())["name"] == mine.name
    other = Workspace.objects.create(name="Elsewhere", slug="elsewhere")
    theirs = rubric_import(data=HELPSTEER_YAML, file="h.yaml", workspace=other)
    assert client.post(URL, {"text": nameless, "rubric_id": theirs.pk}).status_code == (
        404
    )
    assert client.post(URL, {"text": "x", "rubric_id": "1x"}).status_code == 400


def test_raters_and_anonymous_users_get_no_preview(client_for, client, rater):
    assert client_for(rater).post(URL, {"text": YES_NO}).status_code == 403
    assert client.post(URL, {"text": YES_NO}).status_code == 302
    assert client_for(UserFactory(role="researcher")).get(URL).status_code == 405


def test_the_editor_page_shows_the_preview_of_its_text(client_for, researcher):
    html = client_for(researcher).get(reverse("annotation:rubric-new")).content.decode()
    assert "data-rubric-builder" in html and "rubric_builder.js" in html
    assert 'id="row-overall"' in html and 'id="row-safe"' in html
    assert _model(html)["criteria"][0]["key"] == "overall"
    assert "key: overall" in NEW_RUBRIC_TEMPLATE
