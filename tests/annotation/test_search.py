"""Bug 4: word search in the instruction browser, on both database backends.

PostgreSQL uses its English full-text search; SQLite (`make run`) an FTS5 index kept
by triggers (migration 0008). Before the fix SQLite searched for the query as one
substring, so `sky blue` found nothing in "Explain why the sky is blue."."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from annotation.selectors import instruction_list
from annotation.selectors.datasets import sqlite_match_expression
from tests.factories import DatasetFactory, InstructionFactory

ROOT = Path(__file__).resolve().parent.parent.parent

TEXTS = {
    "sky": "Explain why the sky is blue.",
    "sea": "Blue whales swim in the sea; the sky above is grey.",
    "dusk": "Why are evening clouds red?",
    "maths": "Compute seventeen times twenty-three.",
}
# query -> the external ids it finds, on either backend
CASES = {
    "sky blue": ["sky", "sea"],
    "blue sky": ["sky", "sea"],
    "BLUE": ["sky", "sea"],
    "whale": ["sea"],  # stemmed: whale and whales are one word
    '"sky is blue"': ["sky"],
    "sky -whales": ["sky"],
    "whales or seventeen": ["sea", "maths"],
    "telescope": [],
    '"': [],
    "NEAR( sky": [],  # FTS5 syntax is read as words, and "near" occurs nowhere
}


def test_sqlite_match_expression_quotes_every_word():
    assert sqlite_match_expression("sky blue") == '"sky" "blue"'
    assert sqlite_match_expression('"sky is" -blue') == '"sky is" NOT "blue"'
    assert sqlite_match_expression("a or b") == '"a" OR "b"'
    assert sqlite_match_expression('NEAR(x) AND "y') == '"NEAR x" "AND" "y"'
    assert sqlite_match_expression("-alone") is None
    assert sqlite_match_expression(' " ; ') is None


@pytest.mark.postgres
@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL search")
@pytest.mark.django_db
@pytest.mark.parametrize(("query", "expected"), list(CASES.items()))
def test_postgresql_search_finds_every_word_anywhere(query, expected):
    dataset = DatasetFactory()
    for key, text in TEXTS.items():
        InstructionFactory(dataset=dataset, external_id=key, text=text)
    found = instruction_list(dataset=dataset, q=query).values_list(
        "external_id", flat=True
    )
    assert list(found) == expected


SQLITE_SCRIPT = """
import json
from annotation.models import Dataset, Instruction
from annotation.selectors import instruction_list
from annotation.services.rubrics import rubric_get_default

texts, cases = json.loads(INPUT)
dataset = Dataset.objects.create(name="search", rubric=rubric_get_default())
rows = {}
for position, (key, text) in enumerate(texts.items()):
    rows[key] = Instruction.objects.create(
        dataset=dataset, external_id=key, text=text, position=position
    )
def ids(q):
    return list(instruction_list(dataset=dataset, q=q).values_list("external_id", flat=True))
out = {"found": {q: ids(q) for q in cases}}
rows["maths"].text = "The sky is blue at noon."  # the triggers keep the index
rows["maths"].save()
rows["sea"].delete()
out["after_changes"] = ids("sky blue")
out["vendor"] = __import__("django.db").db.connection.vendor
# The response delete guard outlives every table rebuild SQLite migrations make.
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, connection, transaction
from annotation.models import Response
from annotation.services.campaigns import campaign_create
from annotation.services.campaign_spec import CampaignSpec
response = Response.objects.create(instruction=rows["sky"], model_name="m", text="t")
user = get_user_model().objects.create_user("guard-check")
user.groups.add(Group.objects.get(name="researcher"))
from flaskapp.models import Membership
from flaskapp.workspaces import default_workspace
Membership.objects.create(workspace=default_workspace(), user=user, role="researcher")
campaign_create(spec=CampaignSpec(name="guard", dataset=dataset), created_by=user)
try:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM annotation_response WHERE id = %s", [response.pk])
    out["guard"] = "deleted"
except IntegrityError as error:
    out["guard"] = str(error)
print(json.dumps(out))
"""


def test_sqlite_search_finds_every_word_anywhere(tmp_path):
    """The `make run` path: a fresh SQLite database migrated by `manage.py migrate`,
    searched through the same selector (Django's SQLite backend, the FTS5 table)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"))
    }
    env.update(FLASK_VAR_DIR=str(tmp_path), FLASK_DEV="1")
    migrate = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert migrate.returncode == 0, migrate.stderr
    script = f"INPUT = {json.dumps(json.dumps([TEXTS, list(CASES)]))}\n{SQLITE_SCRIPT}"
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["vendor"] == "sqlite"
    assert out["found"] == CASES
    assert out["after_changes"] == ["sky", "maths"]
    assert "campaign item refers to" in out["guard"]
