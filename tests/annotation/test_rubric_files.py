"""Rubric files with any scale or label set: our format (YAML or JSON) through the
service, the command, the upload page and the API; refusals name the line and field
and write nothing; rubrics that campaigns cannot use yet are refused, not broken."""

from __future__ import annotations

import html
import json
import re
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.builtin_rubric import BUILTIN_SKILLS
from annotation.models import FLASK_GROUPS, Dataset, Rubric, Skill
from annotation.services.campaign_spec import (
    CampaignSpec,
)
from annotation.services.campaigns import campaign_create
from annotation.services.imports import dataset_import_files
from annotation.services.rubrics import rubric_get_default, rubric_import
from flaskapp.errors import DomainError
from tests.factories import DatasetFactory, InstructionFactory, ResponseFactory

pytestmark = pytest.mark.django_db

HELPSTEER_YAML = b"""\
name: HelpSteer attributes
description: Five attributes scored 0-4.
groups:
  - {key: quality, name: Quality}
  - {key: style, name: Style}
criteria:
  - key: helpfulness
    name: Helpfulness
    group: quality
    kind: ordinal
    scale: {min: 0, max: 4}
    anchors: {0: "Not helpful at all.", 2: "Somewhat helpful.", 4: "Perfectly helpful."}
    allow_na: false
    description: How useful the response is for the request.
  - key: correctness
    name: Correctness
    group: quality
    scale: {min: 0, max: 4}
    anchors: {0: "Wrong.", 4: "All facts right."}
  - key: coherence
    name: Coherence
    group: style
    scale: {min: 0, max: 4}
    anchors: {0: "Incoherent.", 4: "Perfectly clear."}
  - key: complexity
    name: Complexity
    group: style
    scale: {min: 0, max: 4}
    anchors: {0: "Basic.", 4: "Expert."}
  - key: verbosity
    name: Verbosity
    group: style
    scale: {min: 0, max: 4}
    anchors: {0: "Terse.", 4: "Very verbose."}
  - key: consistent
    name: Consistent with the source
    group: quality
    kind: categorical
    labels:
      - {key: "yes", name: "Yes", description: "Nothing contradicts the source."}
      - {key: "no", name: "No"}
"""

TEN_POINT = {
    "name": "Overall 1-10",
    "criteria": [
        {
            "key": "overall",
            "name": "Overall quality",
            "scale": {"min": 1, "max": 10},
            "anchors": {"1": "Useless.", "10": "Could not be better."},
        }
    ],
}


def page_text(response) -> str:
    body = response.content.decode()
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", body, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body))).strip()


def skill_row(skill: Skill) -> dict:
    fields = [
        "key",
        "name",
        "ability",
        "criteria",
        "kind",
        "scale_min",
        "scale_max",
        "scale_anchors",
        "labels",
        "allow_na",
        "group",
        "position",
        *[f"anchor_{i}" for i in range(1, 6)],
    ]
    return {name: getattr(skill, name) for name in fields}


def ordinal(key, name, group, anchors, *, criteria="", allow_na=True, position):
    return {
        "key": key,
        "name": name,
        "ability": "",
        "criteria": criteria,
        "kind": "ordinal",
        "scale_min": 0,
        "scale_max": 4,
        "scale_anchors": anchors,
        "labels": [],
        "allow_na": allow_na,
        "group": group,
        "position": position,
        **{f"anchor_{i}": "" for i in range(1, 6)},
    }


def counts() -> tuple[int, int]:
    return Rubric.objects.count(), Skill.objects.count()


def refusal(data: bytes, file: str = "rubric.yaml") -> list[tuple]:
    """Import `data`, expecting a refusal that writes nothing; (line, field, message)."""
    before = counts()
    with pytest.raises(DomainError) as exc:
        rubric_import(data=data, file=file)
    assert counts() == before
    assert exc.value.message == "the rubric was not imported"
    return [(p.line, p.field, p.message) for p in exc.value.problems]


# --- Stored exactly ----------------------------------------------------------------------


def test_a_helpsteer_yaml_rubric_is_stored_exactly():
    rubric = rubric_import(data=HELPSTEER_YAML, file="helpsteer.yaml")

    assert (rubric.name, rubric.version) == ("HelpSteer attributes", 1)
    assert rubric.description == "Five attributes scored 0-4."
    assert rubric.groups == [
        {"key": "quality", "name": "Quality"},
        {"key": "style", "name": "Style"},
    ]
    assert not rubric.is_builtin and not rubric.is_frozen
    rows = [skill_row(s) for s in rubric.skills.all()]
    assert rows == [
        ordinal(
            "helpfulness",
            "Helpfulness",
            "quality",
            {
                "0": "Not helpful at all.",
                "2": "Somewhat helpful.",
                "4": "Perfectly helpful.",
            },
            criteria="How useful the response is for the request.",
            allow_na=False,
            position=0,
        ),
        ordinal(
            "correctness",
            "Correctness",
            "quality",
            {"0": "Wrong.", "4": "All facts right."},
            position=1,
        ),
        ordinal(
            "coherence",
            "Coherence",
            "style",
            {"0": "Incoherent.", "4": "Perfectly clear."},
            position=2,
        ),
        ordinal(
            "complexity",
            "Complexity",
            "style",
            {"0": "Basic.", "4": "Expert."},
            position=3,
        ),
        ordinal(
            "verbosity",
            "Verbosity",
            "style",
            {"0": "Terse.", "4": "Very verbose."},
            position=4,
        ),
        {
            "key": "consistent",
            "name": "Consistent with the source",
            "ability": "",
            "criteria": "",
            "kind": "categorical",
            "scale_min": None,
            "scale_max": None,
            "scale_anchors": {},
            "labels": [
                {
                    "key": "yes",
                    "name": "Yes",
                    "description": "Nothing contradicts the source.",
                },
                {"key": "no", "name": "No", "description": ""},
            ],
            "allow_na": True,
            "group": "quality",
            "position": 5,
            **{f"anchor_{i}": "" for i in range(1, 6)},
        },
    ]
    assert rubric.flask_compatible is False


def test_a_ten_point_json_rubric_is_stored_exactly_in_the_default_group():
    rubric = rubric_import(
        data=json.dumps(TEN_POINT, indent=2).encode(), file="ten.json"
    )

    assert (rubric.name, rubric.version) == ("Overall 1-10", 1)
    assert rubric.description == "Imported from ten.json"
    assert rubric.groups == [{"key": "all", "name": "All criteria"}]
    (skill,) = rubric.skills.all()
    assert skill_row(skill) == {
        **ordinal(
            "overall",
            "Overall quality",
            "all",
            {"1": "Useless.", "10": "Could not be better."},
            position=0,
        ),
        "scale_min": 1,
        "scale_max": 10,
    }
    assert skill.scale_label == "1-10"
    assert not rubric.flask_compatible


def test_a_flask_shaped_criterion_of_our_file_fills_flasks_fields():
    data = {
        "name": "Mini FLASK",
        "groups": [{"key": "background_knowledge", "name": "Knowledge"}],
        "criteria": [
            {
                "key": "factuality",
                "name": "Factuality",
                "group": "background_knowledge",
                "scale": {"min": 1, "max": 5},
                "anchors": {"1": "All wrong.", "3": "Half right.", "5": "All right."},
            }
        ],
    }
    rubric = rubric_import(data=json.dumps(data).encode(), file="mini.json")

    skill = rubric.skills.get()
    assert skill.ability == "background_knowledge"
    assert [skill.anchor_1, skill.anchor_2, skill.anchor_3] == [
        "All wrong.",
        "",
        "Half right.",
    ]
    assert [skill.anchor_4, skill.anchor_5] == ["", "All right."]
    assert rubric.flask_compatible


def test_reimport_makes_version_two_and_name_overrides_the_files():
    first = rubric_import(data=HELPSTEER_YAML, file="h.yaml")
    second = rubric_import(data=HELPSTEER_YAML, file="h.yaml")
    other = rubric_import(name="Mine", data=HELPSTEER_YAML, file="h.yaml")

    assert (first.version, second.version) == (1, 2)
    assert (other.name, other.version) == ("Mine", 1)
    assert second.skills.count() == 6


def test_flasks_file_still_imports_with_its_abilities_as_groups():
    items = [
        {
            "Skill": name,
            "Criteria": f"Criteria of {name}.",
            "Scoring": {str(i): f"{name} {i}" for i in range(1, 6)},
        }
        for _key, name, _ability, _criteria, _anchors in BUILTIN_SKILLS
    ]
    rubric = rubric_import(
        data=json.dumps(items).encode(), file="skillset_description.json"
    )

    assert (rubric.name, rubric.version) == ("FLASK official", 1)
    assert rubric.groups == FLASK_GROUPS
    skill = rubric.skills.get(key="factuality")
    assert (skill.kind, skill.scale_min, skill.scale_max) == ("ordinal", 1, 5)
    assert skill.group == skill.ability == "background_knowledge"
    assert skill.scale_anchors == {str(i): f"Factuality {i}" for i in range(1, 6)}
    assert skill.allow_na and skill.labels == []
    assert rubric.flask_compatible


def test_the_builtin_rubric_got_the_values_its_fields_imply():
    rubric = rubric_get_default()

    assert rubric.groups == FLASK_GROUPS
    assert rubric.flask_compatible
    for skill in rubric.skills.all():
        assert skill.group == skill.ability
        assert skill.scale_anchors == {str(p): t for p, t in skill.anchors}
        assert (skill.kind, skill.scale_min, skill.scale_max) == ("ordinal", 1, 5)


# --- Refused with line and field, nothing written ----------------------------------------


def test_a_duplicate_key_in_yaml_is_refused_with_its_line():
    data = b"name: A\nname: B\ncriteria: []\n"
    problems = refusal(data)
    assert (2, "name", "the key 'name' appears twice in this mapping") in problems


def test_a_duplicate_key_in_json_is_refused_with_the_line_of_its_object():
    text = (
        '{"name": "A",\n "criteria": [\n  {"key": "q", "name": "Q",\n'
        '   "scale": {"min": 1, "max": 3}, "anchors": {"1": "a", "3": "c"},\n'
        '   "name": "again"}\n ]\n}\n'
    )
    problems = refusal(text.encode(), "r.json")
    assert problems == [(3, "name", "the key 'name' appears twice in this object")]


CRITERION = "  - key: {key}\n    name: N\n    scale: {{min: 1, max: 3}}\n    anchors: {{1: a, 3: c}}\n"


@pytest.mark.parametrize(
    ("yaml_text", "line", "field", "message"),
    [
        (
            "name: R\ncriteria:\n"
            + CRITERION.format(key="a")
            + CRITERION.format(key="a"),
            7,
            "criteria[1].key",
            "criterion 'a' is used twice",
        ),
        (
            "name: R\ngroups:\n  - {key: g}\n  - {key: g}\ncriteria:\n"
            "  - {key: a, name: A, group: g, scale: {min: 1, max: 2}, anchors: {1: x, 2: y}}\n",
            4,
            "groups[1].key",
            "group 'g' is used twice",
        ),
        (
            "name: R\ncriteria:\n" + CRITERION.format(key="not a slug"),
            3,
            "criteria[0].key",
            "'not a slug' is not a slug (letters, digits, - and _, at most 64)",
        ),
        (
            "name: R\ncriteria:\n  - key: a\n    name: A\n    scale: {min: 2, max: 2}\n"
            "    anchors: {2: x}\n",
            5,
            "criteria[0].scale",
            "min (2) must be below max (2): a scale has at least 2 points",
        ),
        (
            "name: R\ncriteria:\n  - key: a\n    name: A\n    scale: {min: 0, max: 11}\n"
            "    anchors: {0: x, 11: y}\n",
            5,
            "criteria[0].scale",
            "has 12 points; the limit is 11",
        ),
        (
            "name: R\ncriteria:\n  - key: a\n    name: A\n    scale: {min: 1.5, max: 4}\n"
            "    anchors: {1: x, 4: y}\n",
            5,
            "criteria[0].scale.min",
            "must be a whole number",
        ),
        (
            "name: R\ncriteria:\n  - key: a\n    name: A\n    scale: {min: 1, max: 4}\n"
            "    anchors:\n      1: x\n      4: y\n      7: z\n",
            9,
            "criteria[0].anchors",
            "7 is not a point of the scale 1-4",
        ),
        (
            "name: R\ncriteria:\n  - key: a\n    name: A\n    scale: {min: 1, max: 4}\n"
            "    anchors: {1: x}\n",
            6,
            "criteria[0].anchors",
            "needs an anchor for point 4 (both ends of the scale)",
        ),
        (
            "name: R\ncriteria:\n  - key: a\n    name: A\n    kind: categorical\n"
            "    labels: [{key: only}]\n",
            6,
            "criteria[0].labels",
            "has 1 label; give 2 to 10",
        ),
        (
            "name: R\ncriteria:\n  - key: a\n    name: A\n    kind: categorical\n"
            "    labels: [{key: x}, {key: x}]\n",
            6,
            "criteria[0].labels[1].key",
            "label 'x' is used twice",
        ),
        (
            "name: R\ncriteria:\n  - key: a\n    name: A\n    kind: categorical\n"
            "    labels:\n" + "".join(f"      - {{key: l{i}}}\n" for i in range(11)),
            6,
            "criteria[0].labels",
            "has 11 labels; give 2 to 10",
        ),
        (
            "name: R\ngroups: [{key: g}]\ncriteria:\n  - key: a\n    name: A\n"
            "    group: h\n    scale: {min: 1, max: 2}\n    anchors: {1: x, 2: y}\n",
            6,
            "criteria[0].group",
            "'h' is not one of the groups (g)",
        ),
        (
            "name: R\ncriteria:\n  - key: a\n    name: A\n    group: quality\n"
            "    scale: {min: 1, max: 2}\n    anchors: {1: x, 2: y}\n",
            5,
            "criteria[0].group",
            "'quality' is not one of the groups (all)",
        ),
        (
            "name: R\ncriteria:\n" + CRITERION.format(key="a") + "    colour: red\n",
            7,
            "criteria[0].colour",
            "unknown field 'colour' (known: allow_na, anchors, description, group, "
            "key, kind, labels, name, scale)",
        ),
        (
            "name: R\nversion: 3\ncriteria:\n" + CRITERION.format(key="a"),
            2,
            "version",
            "unknown field 'version' (known: criteria, description, groups, name)",
        ),
        (
            "name: R\ncriteria:\n  - key: a\n    name: A\n    kind: categorical\n"
            "    labels: [{key: yes}, {key: no}]\n",
            6,
            "criteria[0].labels[0].key",
            "must be text, not True (quote it)",
        ),
    ],
    ids=[
        "duplicate-criterion",
        "duplicate-group",
        "not-a-slug",
        "one-point-scale",
        "twelve-points",
        "fractional-min",
        "anchor-off-the-scale",
        "anchor-missing-at-an-end",
        "one-label",
        "duplicate-label",
        "eleven-labels",
        "unknown-group",
        "group-without-groups",
        "unknown-criterion-field",
        "unknown-top-field",
        "unquoted-yes",
    ],
)
def test_a_bad_rubric_file_is_refused_with_line_and_field(
    yaml_text, line, field, message
):
    assert (line, field, message) in refusal(yaml_text.encode())


def test_every_problem_is_listed_not_only_the_first():
    data = (
        b"name: R\ncriteria:\n  - key: a b\n    name: A\n    scale: {min: 1, max: 1}\n"
        b"    anchors: {1: x}\n  - key: c\n    name: C\n    kind: colour\n"
    )
    fields = [field for _line, field, _message in refusal(data)]
    assert fields == ["criteria[0].key", "criteria[0].scale", "criteria[1].kind"]


def test_invalid_yaml_and_json_name_their_line():
    assert refusal(b"name: R\ncriteria: [\n") == [
        (3, None, "invalid YAML (expected the node content, but found '<stream end>')")
    ]
    assert refusal(b'{"name": "R",\n "criteria": [}\n', "r.json") == [
        (2, None, "invalid JSON (Expecting value)")
    ]


def test_a_nul_byte_or_bad_utf8_is_refused_not_a_server_error():
    (problem,) = refusal(b"\x00")
    assert problem[2].startswith("invalid YAML (")
    assert refusal(b"name: \xff\n") == [(None, None, "not valid UTF-8")]


def test_unsafe_yaml_tags_and_alias_bombs_are_refused():
    assert refusal(b"name: !!python/object/apply:os.system [echo]\n") == [
        (
            1,
            None,
            "the YAML tag 'tag:yaml.org,2002:python/object/apply:os.system' "
            "is not allowed",
        )
    ]
    (problem,) = refusal(b"name: !!python/name:os.system x\n")
    assert problem[0] == 1 and "could not determine a constructor" in problem[2]
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(8)
    )
    (problem,) = refusal(bomb.encode())
    assert problem[2] == "is too large or nested too deep"


# --- The command, the page, the API --------------------------------------------------------


def test_the_command_imports_a_file_and_counts_versions(tmp_path):
    path = tmp_path / "helpsteer.yaml"
    path.write_bytes(HELPSTEER_YAML)
    out = StringIO()

    call_command("import_rubric", str(path), stdout=out)
    call_command("import_rubric", str(path), "--name", "Other", stdout=StringIO())
    call_command("import_rubric", str(path), stdout=StringIO())

    assert "Rubric 'HelpSteer attributes' version 1: 6 criteria" in out.getvalue()
    assert "helpfulness: ordinal 0-4" in out.getvalue()
    assert "consistent: categorical yes, no" in out.getvalue()
    assert "cannot use this rubric" not in out.getvalue()
    assert sorted(
        Rubric.objects.filter(name="HelpSteer attributes").values_list(
            "version", flat=True
        )
    ) == [1, 2]
    assert Rubric.objects.filter(name="Other", version=1).exists()


def test_the_command_prints_every_problem_and_writes_nothing(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_bytes(b"name: R\nname: S\ncriteria:\n  - key: a b\n    name: A\n")
    err = StringIO()
    before = counts()

    with pytest.raises(CommandError) as exc:
        call_command("import_rubric", str(path), stderr=err)

    assert counts() == before
    assert (
        "bad.yaml, line 2, field `name`: the key 'name' appears twice" in err.getvalue()
    )
    assert "line 4, field `criteria[0].key`" in err.getvalue()
    assert "all are listed above" in str(exc.value)


def test_the_upload_page_imports_our_file_for_admins(client_for, admin_user):
    client = client_for(admin_user)
    response = client.post(
        reverse("annotation:rubric-import"),
        {"name": "", "file": SimpleUploadedFile("helpsteer.yaml", HELPSTEER_YAML)},
    )

    rubric = Rubric.objects.get(name="HelpSteer attributes", version=1)
    assert response.status_code == 302
    assert response.url == reverse("annotation:rubric-detail", args=[rubric.pk])


def test_the_upload_page_shows_problems_and_refuses_raters(
    client_for, admin_user, researcher, rater
):
    url = reverse("annotation:rubric-import")
    bad = client_for(admin_user).post(
        url, {"file": SimpleUploadedFile("r.yaml", b"name: R\ncriteria: []\n")}
    )
    assert bad.status_code == 400
    assert "line 2, field `criteria`: needs at least one criterion" in page_text(bad)

    def upload():
        return {"name": "X", "file": SimpleUploadedFile("h.yaml", HELPSTEER_YAML)}

    assert client_for(rater).post(url, upload()).status_code == 403
    assert not Rubric.objects.filter(name__in=["X", "HelpSteer attributes"]).exists()
    # Issue 35: a workspace's researchers upload rubrics into it.
    assert client_for(researcher).post(url, upload()).status_code == 302
    assert Rubric.objects.get(name="X").workspace.slug == "default"


def test_the_rubric_page_shows_scales_labels_na_and_that_it_is_not_usable_yet(
    client_for, researcher
):
    rubric = rubric_import(data=HELPSTEER_YAML, file="h.yaml")

    text = page_text(
        client_for(researcher).get(
            reverse("annotation:rubric-detail", args=[rubric.pk])
        )
    )

    assert "Not yet usable" not in text  # campaigns and judge runs take any rubric
    assert "Quality" in text and "Style" in text
    assert "Helpfulness Ordinal, scale 0-4 · N/A not allowed" in text
    assert "0 Not helpful at all. 2 Somewhat helpful. 4 Perfectly helpful." in text
    assert "Categorical: one of 2 labels · N/A allowed" in text
    assert "yes Yes : Nothing contradicts the source. no No" in text


def test_the_builtin_rubric_page_has_no_warning(client_for, researcher):
    rubric = rubric_get_default()
    text = page_text(
        client_for(researcher).get(
            reverse("annotation:rubric-detail", args=[rubric.pk])
        )
    )
    assert "Not yet usable" not in text
    assert "Logical Thinking" in text and "Ordinal, scale 1-5" in text


def test_the_api_imports_for_researchers(api_client_for, admin_user, researcher, rater):
    def post(user, data=HELPSTEER_YAML, **fields):
        return api_client_for(user).post(
            "/api/rubrics/import/",
            {"file": SimpleUploadedFile("h.yaml", data), **fields},
            format="multipart",
        )

    created = post(admin_user)
    assert created.status_code == 201, created.json()
    body = created.json()
    assert (body["name"], body["version"], body["flask_compatible"]) == (
        "HelpSteer attributes",
        1,
        False,
    )
    assert body["groups"][1] == {"key": "style", "name": "Style"}
    helpfulness = body["skills"][0]
    assert helpfulness["kind"] == "ordinal"
    assert (helpfulness["scale_min"], helpfulness["scale_max"]) == (0, 4)
    assert helpfulness["scale_anchors"][0] == {
        "point": 0,
        "description": "Not helpful at all.",
    }
    assert helpfulness["anchors"] == [] and helpfulness["allow_na"] is False
    assert body["skills"][5]["labels"][1] == {
        "key": "no",
        "name": "No",
        "description": "",
    }
    assert post(admin_user, name="Named").json()["name"] == "Named"

    before = counts()
    bad = post(admin_user, data=b"name: R\ncriteria:\n  - key: a\n    name: A\n")
    assert bad.status_code == 400
    assert {"line": 3, "field": "criteria[0].scale"}.items() <= bad.json()["problems"][
        0
    ].items()
    for user in (rater, None):
        assert post(user).status_code in (401, 403)
    assert counts() == before
    assert post(researcher, name="By a researcher").status_code == 201


# --- Refused, not broken -----------------------------------------------------------------


def test_a_campaign_on_a_rubric_that_is_not_flask_compatible_is_created(researcher):
    rubric = rubric_import(data=HELPSTEER_YAML, file="h.yaml")
    dataset = DatasetFactory(rubric=rubric)
    ResponseFactory(instruction=InstructionFactory(dataset=dataset, skill_keys=[]))

    campaign = campaign_create(
        spec=CampaignSpec(name="c", dataset=dataset), created_by=researcher
    )

    assert campaign.items.count() == 1


def test_a_dataset_import_may_name_any_rubric():
    rubric = rubric_import(data=json.dumps(TEN_POINT).encode(), file="ten.json")
    row = json.dumps({"idx": 1, "instruction": "Why?", "skill": [], "domain": []})

    dataset_import_files(
        dataset_name="new-set",
        fmt="flask",
        files=[("eval.jsonl", row.encode() + b"\n")],
        options={"rubric_id": rubric.pk},
    )

    assert Dataset.objects.get(name="new-set").rubric == rubric


def test_a_judge_run_on_such_a_rubric_is_created(researcher):
    """Judge runs accept any rubric (the judges' part of issue 14 removed the
    refusal; tests/judging/test_any_rubric_runs.py runs them end to end)."""
    from judging.models import JudgeConfig
    from judging.services.runs import judge_run_create

    rubric = rubric_import(data=HELPSTEER_YAML, file="h.yaml")
    dataset = DatasetFactory(rubric=rubric)
    ResponseFactory(instruction=InstructionFactory(dataset=dataset, skill_keys=[]))
    config = JudgeConfig.objects.create(
        name="judge", base_url="http://127.0.0.1:9/v1", model="m"
    )

    run = judge_run_create(config=config, dataset=dataset, user=researcher)

    assert run.total_calls == 1 and run.calls.count() == 1
