"""`manage.py judge` and `manage.py import_judge_run`."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from judging.models import JudgeConfig, JudgeRun, JudgeScore
from tests.judging.data import KEY_ENV, SECRET, make_dataset

pytestmark = pytest.mark.django_db


def run_command(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def eager_tasks(settings):
    """Celery tasks run inline (the drive task included). The Celery app reads its
    config once, so the flag is set on the app itself, not only in settings."""
    from flaskapp.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.JUDGE_DRIVERS_PER_RUN = 1
    settings.REDIS_URL = ""  # the in-process rate limiter: no Redis needed
    yield
    app.conf.task_always_eager = before


@pytest.fixture
def dataset(admin_user):
    return make_dataset(name="cli-set", instructions=2, models=("alpha", "beta"))


# --- judge --------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_judge_baseline_rouge_wait_runs_to_completion(eager_tasks, admin_user):
    # The drive task runs inline; a transactional test lets on_commit enqueue it.
    make_dataset(name="cli-set", instructions=2, models=("alpha", "beta"))
    out, _ = run_command(
        "judge",
        "--dataset",
        "cli-set",
        "--baseline",
        "rouge",
        "--models",
        "alpha",
        "--wait",
    )
    run = JudgeRun.objects.get()
    assert f"\nRun {run.pk}: baseline-rouge · cli-set · " in out
    assert run.status == JudgeRun.Status.COMPLETED
    assert run.config.backend == JudgeConfig.Backend.BASELINE_ROUGE
    assert run.config.name == "baseline-rouge"
    assert run.calls.filter(status="succeeded").count() == 2
    # Every skill of each instruction scored (3 per instruction in the factories).
    assert JudgeScore.objects.filter(run=run).count() == 6
    assert "done 2/2" in out
    assert f"Run {run.pk} completed" in out.splitlines()[-1]


@pytest.mark.django_db(transaction=True)
def test_judge_wait_exits_1_when_the_run_fails(eager_tasks, settings, admin_user):
    settings.JUDGE_MAX_TRANSPORT_RETRIES = 0
    make_dataset(name="cli-set", instructions=1, models=("alpha",))
    # Nothing listens on port 9: every call fails at once (no retries configured).
    with pytest.raises(CommandError) as caught:
        run_command(
            "judge",
            "--dataset",
            "cli-set",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--wait",
        )
    assert caught.value.returncode == 1
    assert "failed" in str(caught.value)
    assert JudgeRun.objects.get().status == JudgeRun.Status.FAILED


def test_judge_creates_a_config_named_from_model_and_host_and_reuses_it(
    dataset, monkeypatch
):
    monkeypatch.setenv(KEY_ENV, SECRET)
    args = [
        "judge",
        "--dataset",
        "cli-set",
        "--base-url",
        "https://api.example.com/v1",
        "--model",
        "gpt-4o",
        "--api-key-env",
        KEY_ENV,
        "--samples",
        "2",
        "--temperature",
        "0.3",
        "--max-tokens",
        "500",
        "--output-mode",
        "text",
        "--concurrency",
        "4",
        "--rpm",
        "100",
        "--tpm",
        "50000",
        "--price-in",
        "2.5",
        "--price-out",
        "10",
        "--limit",
        "1",
    ]
    out, _ = run_command(*args)
    config = JudgeConfig.objects.get()
    assert config.name == "gpt-4o @ api.example.com"
    assert (config.samples, config.temperature, config.max_tokens) == (2, 0.3, 500)
    assert (config.max_concurrency, config.requests_per_minute) == (4, 100)
    assert config.tokens_per_minute == 50000 and config.output_mode == "text"
    assert config.api_key_env == KEY_ENV
    run = JudgeRun.objects.get()
    assert f"Run {run.pk}:" in out
    assert run.calls.count() == 4  # 1 instruction x 2 models x 2 samples
    assert run.status == JudgeRun.Status.RUNNING
    assert SECRET not in out
    # The same settings reuse the config; different ones get their own.
    run_command(*args)
    assert JudgeConfig.objects.count() == 1
    run_command(*[a if a != "0.3" else "0.9" for a in args])
    assert sorted(JudgeConfig.objects.values_list("name", flat=True)) == [
        "gpt-4o @ api.example.com",
        "gpt-4o @ api.example.com #2",
    ]


def test_judge_with_config_name(dataset, admin_user):
    run_command("judge", "--dataset", "cli-set", "--baseline", "length")
    out, err = run_command(
        "judge", "--dataset", "cli-set", "--config", "baseline-length", "--samples", "3"
    )
    assert JudgeConfig.objects.count() == 1
    assert JudgeRun.objects.count() == 2
    assert "ignored: --samples" in err


def test_judge_refuses_a_key_instead_of_an_env_name(dataset):
    with pytest.raises(CommandError) as caught:
        run_command(
            "judge",
            "--dataset",
            "cli-set",
            "--base-url",
            "https://x/v1",
            "--model",
            "m",
            "--api-key-env",
            SECRET,
        )
    assert "api_key_env" in str(caught.value)
    assert not JudgeConfig.objects.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dataset", "nope", "--baseline", "rouge"], "no dataset named 'nope'"),
        (["--dataset", "cli-set"], "give exactly one of"),
        (
            ["--dataset", "cli-set", "--base-url", "https://x/v1"],
            "--base-url needs --model",
        ),
        (["--dataset", "cli-set", "--config", "missing"], "no judge config named"),
        (
            ["--dataset", "cli-set", "--baseline", "rouge", "--models", "gamma"],
            "field `models`: not in dataset",
        ),
        (
            ["--dataset", "cli-set", "--baseline", "rouge", "--user", "ghost"],
            "no active user",
        ),
    ],
)
def test_judge_bad_input(dataset, args, message):
    with pytest.raises(CommandError) as caught:
        run_command("judge", *args)
    assert message in str(caught.value)
    assert not JudgeRun.objects.exists()


def test_judge_refuses_a_rater_as_user(dataset, rater):
    with pytest.raises(CommandError) as caught:
        run_command(
            "judge",
            "--dataset",
            "cli-set",
            "--baseline",
            "rouge",
            "--user",
            rater.username,
        )
    assert "neither a researcher nor an admin" in str(caught.value)


def test_judge_metadata_kind(dataset):
    run_command(
        "judge",
        "--dataset",
        "cli-set",
        "--base-url",
        "https://x/v1",
        "--model",
        "m",
        "--kind",
        "metadata",
    )
    run = JudgeRun.objects.get()
    assert run.kind == "metadata" and run.calls.count() == 2


# --- import_judge_run ---------------------------------------------------------------------


def test_import_judge_run_flask_review(dataset, tmp_path):
    path = tmp_path / "alpha_review.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "question_id": 1,
                    "review": "A",
                    "score": {"Comprehension": 4, "Factuality": "N/A"},
                },
                {"question_id": 2, "review": "B", "score": {"Readability": "2"}},
            ]
        )
    )
    out, _ = run_command(
        "import_judge_run", str(path), "--dataset", "cli-set", "--name", "ext"
    )
    run = JudgeRun.objects.get(name="ext")
    assert f"Run {run.pk}: ext" in out and "3 scores" in out and "alpha" in out
    assert run.kind == "imported"


def test_import_judge_run_csv_with_map_and_model(dataset, tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text("qid,skill,score\n1,Readability,5\n2,Readability,N/A\n")
    run_command(
        "import_judge_run",
        str(path),
        "--dataset",
        "cli-set",
        "--map",
        "id=qid",
        "--model",
        "beta",
    )
    run = JudgeRun.objects.get()
    assert run.models_included == ["beta"]
    assert sorted(run.scores.values_list("score", flat=True), key=str) == [5, None]


def test_import_judge_run_bad_file_names_line_and_field(dataset, tmp_path):
    path = tmp_path / "alpha.jsonl"
    path.write_text(
        json.dumps({"question_id": 1, "review": "", "score": [4, 4, 4]})
        + "\n"
        + json.dumps({"question_id": 1, "review": "", "score": {"Readability": 9}})
    )
    err = StringIO()
    with pytest.raises(CommandError) as caught:
        call_command(
            "import_judge_run",
            str(path),
            "--dataset",
            "cli-set",
            stdout=StringIO(),
            stderr=err,
        )
    assert "line 2" in str(caught.value) and "score" in str(caught.value)
    assert "line 2, field `score`" in err.getvalue()
    assert not JudgeRun.objects.exists()


WARNED_CSV = (
    "id,model,skill,score\n"
    "1,alpha,Comprehension,4\n"
    "1,alpha,Comprehension,4\n"  # line 3: same-value duplicate
    "2,alpha,Logical Correctness,3\n"  # line 4: skill not assigned
)


def test_import_judge_run_prints_warnings_with_file_and_line(dataset, tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text(WARNED_CSV)
    out, _ = run_command("import_judge_run", str(path), "--dataset", "cli-set")
    run = JudgeRun.objects.get()
    assert run.scores.count() == 2
    assert "warnings:      2 (imported; --strict refuses them)" in out
    assert (
        f"{path}, line 3, field `skill`: duplicate of line 2 (same score): kept once"
        in out
    )
    assert f"{path}, line 4, field `skill`: skill 'Logical Correctness'" in out


def test_import_judge_run_strict_refuses_warnings_and_writes_nothing(dataset, tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text(WARNED_CSV)
    err = StringIO()
    with pytest.raises(CommandError, match="with strict, warnings are errors"):
        call_command(
            "import_judge_run",
            str(path),
            "--dataset",
            "cli-set",
            "--strict",
            stdout=StringIO(),
            stderr=err,
        )
    assert f"{path}, line 3, field `skill`: duplicate of line 2" in err.getvalue()
    assert f"{path}, line 4, field `skill`" in err.getvalue()
    assert not JudgeRun.objects.exists() and not JudgeScore.objects.exists()


def test_import_judge_run_clean_file_prints_no_warnings(dataset, tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text("id,model,skill,score\n1,alpha,Comprehension,4\n")
    out, _ = run_command(
        "import_judge_run", str(path), "--dataset", "cli-set", "--strict"
    )
    assert JudgeRun.objects.get().scores.count() == 1
    assert "warnings" not in out


def test_import_judge_run_unknown_dataset_or_file(dataset, tmp_path):
    with pytest.raises(CommandError, match="no dataset named"):
        run_command("import_judge_run", str(tmp_path / "x.jsonl"), "--dataset", "nope")
    with pytest.raises(CommandError, match="no such file"):
        run_command(
            "import_judge_run", str(tmp_path / "x.jsonl"), "--dataset", "cli-set"
        )


# --- judge on a fresh database, --limit and --max-calls ------------------------------------


def test_judge_without_any_admin_acts_as_the_documented_system_user():
    from django.contrib.auth import get_user_model

    from annotation.management.commands._cli import SYSTEM_USERNAME
    from flaskapp import roles

    make_dataset(name="fresh", instructions=2, models=("alpha", "beta"))
    assert not get_user_model().objects.filter(is_superuser=True).exists()
    out, _ = run_command("judge", "--dataset", "fresh", "--baseline", "rouge")
    run = JudgeRun.objects.get()
    assert run.created_by.username == SYSTEM_USERNAME
    assert roles.is_admin(run.created_by)
    assert not run.created_by.has_usable_password()  # nobody logs in as it
    # A second command reuses it.
    run_command("judge", "--dataset", "fresh", "--baseline", "length")
    assert get_user_model().objects.filter(username=SYSTEM_USERNAME).count() == 1


def test_judge_max_calls_caps_the_calls_and_limit_counts_instructions(dataset):
    base = ["judge", "--dataset", "cli-set", "--baseline", "rouge"]
    run_command(*base, "--limit", "1")
    by_limit = JudgeRun.objects.latest("pk")
    assert by_limit.total_calls == 2  # 1 instruction x 2 models
    run_command(*base, "--max-calls", "3")
    capped = JudgeRun.objects.latest("pk")
    assert capped.total_calls == 3 == capped.calls.count()
    assert capped.estimate["calls"] == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-calls", "0"], "max_calls"),
        (["--max-calls", "5", "--kind", "metadata"], "only for kind 'pointwise'"),
    ],
)
def test_judge_max_calls_bad_input(dataset, args, message):
    with pytest.raises(CommandError, match=message):
        run_command("judge", "--dataset", "cli-set", "--baseline", "rouge", *args)
    assert not JudgeRun.objects.exists()


def test_judge_help_says_what_limit_counts():
    from judging.management.commands.judge import Command

    parser = Command().create_parser("manage.py", "judge")
    text = " ".join(parser.format_help().split())
    assert "N counts instructions, not calls" in text
    assert "--max-calls N" in text
