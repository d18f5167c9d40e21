"""The score export's CSV written by PostgreSQL (`analysis.exports.scores_sql`) is the
Python encoder's, byte for byte: on hostile text (formula starts behind every kind of
whitespace, quotes, commas, CR/LF, backslashes), N/A scores, timestamps with and
without microseconds, missing metadata, and every filter."""

from __future__ import annotations

import csv
import io
import random
from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import Group
from django.db import connection

from analysis.exports import scores_sql
from analysis.exports.scores import export_chunks
from annotation.models import Adjudication, HumanScore, Instruction, Response
from flaskapp import roles
from judging.models import JudgeScore
from tests.analysis.test_exports import judge_all, make_dataset, rate_all
from tests.factories import UserFactory

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the SQL encoder is PostgreSQL's"
    ),
]

WHITESPACE = [chr(c) for c in range(0x10000) if chr(c).isspace()]
HOSTILE = [
    "",
    "plain",
    "=1+1",
    "+1",
    "-1",
    "@SUM(A1)",
    "\t=1",
    "\r=1",
    " =1",
    "\u3000=HYPERLINK()",
    "\u2028@x",
    "\x1c-3",
    "\x85+2",
    " \t \u00a0=x",
    "  plain with spaces  ",
    "a,b",
    'say "hi"',
    '"=quoted"',
    "line\nbreak",
    "cr\rreturn",
    "crlf\r\nend",
    "back\\slash \\n not a newline",
    "it's",
    "'=already",
    "trailing =",
    "café, naïve; 日本語",
    "x" * 5000,
]


def random_texts(n: int, seed: int = 20261203) -> list[str]:
    alphabet = WHITESPACE + list("=+-@\"',;\\\r\nab Z09é日") + ["\u2603"]
    rng = random.Random(seed)
    return ["".join(rng.choices(alphabet, k=rng.randint(1, 12))) for _ in range(n)]


def both(settings, **kwargs) -> tuple[str, str, int, int]:
    settings.EXPORT_FAST_SQL = True
    fast_count = [0]
    fast = b"".join(export_chunks(fmt="csv", counter=fast_count, **kwargs)).decode()
    settings.EXPORT_FAST_SQL = False
    slow_count = [0]
    slow = b"".join(export_chunks(fmt="csv", counter=slow_count, **kwargs)).decode()
    return fast, slow, fast_count[0], slow_count[0]


@pytest.fixture
def hostile(researcher, rater):
    """A dataset whose every text cell is hostile somewhere, scored by a rater with a
    hostile name and by a judge run with two samples."""
    dataset = make_dataset(4, name="=cmd|' /C calc'!A0, \"quoted\"")
    texts = HOSTILE + random_texts(400)
    instructions = list(Instruction.objects.filter(dataset=dataset).order_by("pk"))
    for k, instruction in enumerate(instructions):
        instruction.external_id = ["\u3000=ext", "a,b", 'q"1', "plain"][k]
        instruction.source_task = ["-task", "", "t\nx", "ok"][k]
        instruction.difficulty = [None, 1, 5, 3][k]
        instruction.domain_1 = ["", "math", "coding", "math"][k]
        instruction.domain_2 = ["", "", "math", ""][k]
        instruction.is_hard = k % 2 == 0
        instruction.save()
    for k, response in enumerate(
        Response.objects.filter(instruction__dataset=dataset).order_by("pk")
    ):
        response.model_name = ["+model", 'm"q', "m,c", " @m"][k]
        response.save()
    odd = UserFactory(username="@rater-2", role="rater")
    # a synthetic account: its lines end in `true`, every other line in `false`
    odd.groups.add(Group.objects.get_or_create(name=roles.SYNTHETIC)[0])
    campaign = rate_all(dataset, researcher, rater, name="first")
    second = rate_all(dataset, researcher, odd, name="second")
    run = judge_all(dataset, samples=2)
    scores = list(JudgeScore.objects.filter(run=run).order_by("pk"))
    humans = list(
        HumanScore.objects.filter(assignment__campaign__dataset=dataset).order_by("pk")
    )
    rows = scores + humans
    # Every hostile text lands in some rationale: spread over the rows, several per row
    # when there are more texts than rows.
    for k, row in enumerate(rows):
        row.rationale = " ".join(texts[k :: len(rows)])[:20000] or ""
    for k, text in enumerate(texts[: len(rows)]):
        rows[k].rationale = text  # and each of the first ones alone, as the whole cell
    JudgeScore.objects.bulk_update(scores, ["rationale"])
    HumanScore.objects.bulk_update(humans, ["rationale"])
    # Adjudications ("human, adjudicated"): two in the first campaign (one N/A), one
    # in the second, by a reviewer with a formula-like name, with hostile notes.
    reviewer = UserFactory(username="=reviewer", role="reviewer")
    for k, (c, human) in enumerate([(campaign, humans[0]), (campaign, humans[1]),
                                    (second, humans[-1])]):  # fmt: skip
        Adjudication.objects.create(
            campaign=c, response_id=human.assignment.response_id,
            skill_id=human.skill_id, score=None if k == 1 else 2,
            note=texts[k], created_by=reviewer, updated_by=reviewer,
        )  # fmt: skip
    whole = datetime(2026, 12, 3, 20, 0, 0, tzinfo=UTC)
    JudgeScore.objects.filter(pk=scores[0].pk).update(created_at=whole)
    HumanScore.objects.filter(pk=humans[0].pk).update(
        created_at=whole, updated_at=whole.replace(microsecond=1)
    )
    return dataset, campaign, second, run


def test_sql_csv_is_the_python_csv_byte_for_byte(settings, hostile):
    dataset, *_ = hostile
    fast, slow, fast_n, slow_n = both(settings, dataset=dataset)
    assert (
        fast_n
        == slow_n
        == (
            JudgeScore.objects.count()
            + HumanScore.objects.count()
            + Adjudication.objects.count()
        )
    )
    assert fast.count("\r\n") >= fast_n + 1
    assert fast == slow
    # The hostile values did reach the export, neutralised.
    assert "'=cmd|" in fast and "'\u3000=ext" in fast and "'@rater-2" in fast
    assert "2026-12-03T20:00:00+00:00" in fast
    assert "2026-12-03T20:00:00.000001+00:00" in fast
    synthetic = [
        row for row in csv.DictReader(io.StringIO(fast)) if row["synthetic"] == "true"
    ]
    assert (
        len(synthetic)
        == HumanScore.objects.filter(assignment__rater__username="@rater-2").count()
        > 0
    )
    assert {row["source"] for row in synthetic} == {"'@rater-2"}
    settled = [
        row
        for row in csv.DictReader(io.StringIO(fast))
        if row["source_type"] == "human_adjudicated"
    ]
    assert [(r["source"], r["value"], r["excluded"]) for r in settled] == [
        ("adjudicated:=reviewer", "2", "false"),
        ("adjudicated:=reviewer", "N/A", "false"),
        ("adjudicated:=reviewer", "2", "false"),
    ]


@pytest.mark.parametrize("which", ["campaign", "run", "both", "none"])
def test_sql_csv_matches_under_every_filter(settings, hostile, which):
    dataset, campaign, second, run = hostile
    kwargs = {
        "campaign": {"campaign_ids": [second.pk]},
        "run": {"run_ids": [run.pk]},
        "both": {"campaign_ids": [campaign.pk], "run_ids": [run.pk]},
        "none": {"campaign_ids": [], "run_ids": []},
    }[which]
    fast, slow, fast_n, slow_n = both(settings, dataset=dataset, **kwargs)
    assert fast == slow and fast_n == slow_n
    # The campaigns' adjudications come with them: 1 in the second, 2 in the first.
    expected = {"campaign": 8 + 1, "run": 16, "both": 24 + 2, "none": 0}[which]
    assert fast_n == expected


def test_whitespace_class_is_pythons():
    body = scores_sql._whitespace_class()
    assert body.count("\\u") == len(WHITESPACE) > 20
