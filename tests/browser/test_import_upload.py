"""An admin imports a FLASK evaluation set through the browser and browses it."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from annotation.models import Dataset, ImportJob
from annotation.services.import_jobs import import_job_create, import_job_execute
from tests.browser.conftest import login
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EVAL_SET = [
    {
        "idx": 1,
        "instruction": "Explain why the sky is blue to a ten-year-old.",
        "answer": "Sunlight is **scattered** by air molecules, and blue light the most.",
        "task": "science_qa",
        "skill": ["Factuality", "Comprehension", "Readability"],
        "domain": ["Natural Science"],
        "difficulty": "simple lifestyle knowledge",
    },
    {
        "idx": 2,
        "instruction": "What is 17 times 23? Show the steps.",
        "answer": "17 x 23 = 17 x 20 + 17 x 3 = 340 + 51 = 391.",
        "task": "arithmetic",
        "skill": ["Logical Correctness", "Logical Robustness", "Readability"],
        "domain": ["Math"],
        "difficulty": "formal education knowledge",
    },
    {
        "idx": 3,
        "instruction": "Write a Python function that reverses a string.",
        "answer": "```python\ndef reverse(text):\n    return text[::-1]\n```",
        "task": "coding",
        "skill": ["Logical Correctness", "Completeness", "Conciseness"],
        "domain": ["Coding", "Technology"],
        "difficulty": -1,
    },
]


@pytest.fixture
def admin(transactional_db):
    return UserFactory(username="browser-admin", role="admin")


def write_jsonl(path, rows) -> str:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows))
    return str(path)


def upload(page, live_server, *, dataset: str, file: str) -> None:
    page.goto(f"{live_server.url}/")
    page.get_by_role("link", name="New import").first.click()
    expect(page.get_by_role("heading", name="New import")).to_be_visible()
    page.get_by_label("Dataset name").fill(dataset)
    page.get_by_label("Format").select_option("flask")
    page.get_by_label("Files").set_input_files(file)
    page.get_by_role("button", name="Upload and check").click()


def test_admin_imports_a_flask_set_and_browses_it(
    page, live_server, admin, browser_media, tmp_path
):
    login(page, live_server, admin)
    upload(
        page,
        live_server,
        dataset="browser-set",
        file=write_jsonl(tmp_path / "flask_eval.jsonl", EVAL_SET),
    )

    report = page.locator("#import-progress")
    expect(report.locator("#import-status")).to_have_text("Validated")
    expect(report).to_contain_text("3 instructions to create")
    preview = page.locator("#import-preview")
    expect(preview.locator("tbody tr")).to_have_count(3)
    expect(preview).to_contain_text("What is 17 times 23?")
    page.screenshot(path="/tmp/ui-import-report.png", full_page=True)

    page.get_by_role("button", name="Confirm import").click()

    expect(report.locator("#import-status")).to_have_text("Succeeded")
    expect(report).to_contain_text("3 instructions created")
    page.get_by_role("link", name="Open the dataset").click()

    expect(page.get_by_role("heading", name="browser-set", level=1)).to_be_visible()
    rows = page.locator("#instruction-table tbody tr")
    expect(rows).to_have_count(3)
    page.screenshot(path="/tmp/ui-dataset.png", full_page=True)

    # The filter swaps the results in place (htmx) and keeps the URL shareable.
    page.get_by_label("Domain", exact=True).select_option("math")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("What is 17 times 23?")
    expect(page.locator("#instruction-count")).to_contain_text("matching the filters")
    page.wait_for_url("**domain=math**")
    expect(page.locator("nav[aria-label=Main]")).to_have_count(1)

    # Typing in the search box filters too, after a short pause.
    page.get_by_label("Domain", exact=True).select_option("")
    expect(rows).to_have_count(3)
    page.get_by_label("Search").press_sequentially("reverses", delay=30)
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Write a Python function")
    page.get_by_label("Search").fill("")
    page.get_by_label("Domain", exact=True).select_option("math")
    expect(rows).to_have_count(1)

    rows.first.get_by_role("link", name="2", exact=True).click()
    expect(page.get_by_role("heading", name="Instruction 2")).to_be_visible()
    page.goto(
        f"{live_server.url}/instructions/"
        f"{Dataset.objects.get().instructions.get(external_id='3').pk}/"
    )
    expect(page.locator(".codehilite .k").first).to_have_text("def")
    page.screenshot(path="/tmp/ui-instruction.png", full_page=True)


def test_a_bad_line_is_reported_with_its_number_and_nothing_is_created(
    page, live_server, admin, browser_media, tmp_path
):
    rows = [EVAL_SET[0], '{"idx": 2, "instruction": "unterminated', EVAL_SET[2]]
    login(page, live_server, admin)

    upload(
        page,
        live_server,
        dataset="broken-set",
        file=write_jsonl(tmp_path / "broken.jsonl", rows),
    )

    expect(page.locator("#import-status")).to_have_text("Invalid")
    problems = page.locator("#import-problems tbody tr")
    expect(problems).to_have_count(1)
    expect(problems.first).to_contain_text("line 2")
    expect(problems.first).to_contain_text("invalid JSON")
    expect(page.get_by_role("button", name="Confirm import")).to_have_count(0)
    page.screenshot(path="/tmp/ui-import-invalid.png", full_page=True)
    assert ImportJob.objects.get().status == ImportJob.Status.INVALID
    assert not Dataset.objects.filter(name="broken-set").exists()


def test_a_queued_import_page_updates_itself_when_the_worker_finishes(
    page, live_server, admin, browser_media
):
    job = import_job_create(
        dataset_name="background-set",
        fmt="flask",
        uploads=[("eval.jsonl", "\n".join(json.dumps(r) for r in EVAL_SET).encode())],
        user=admin,
    )
    # As `import_job_confirm` leaves a large import for the worker.
    ImportJob.objects.filter(pk=job.pk).update(status=ImportJob.Status.QUEUED)
    login(page, live_server, admin)
    page.goto(f"{live_server.url}/imports/{job.pk}/")
    expect(page.locator("#import-status")).to_have_text("Queued")

    import_job_execute(job_id=job.pk)  # what the Celery worker runs

    # No reload: the progress fragment polls every 2s and stops once finished.
    expect(page.locator("#import-status")).to_have_text("Succeeded", timeout=8_000)
    expect(page.get_by_role("link", name="Open the dataset")).to_be_visible()
    expect(page.locator("#import-progress")).not_to_have_attribute(
        "hx-trigger", "every 2s"
    )
