"""The HTML pages: who may open them, what they show, and their htmx fragments."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.builtin_rubric import BUILTIN_SKILLS
from annotation.models import (
    DATASET_FORMAT_CHOICES,
    Dataset,
    ImportJob,
    Instruction,
    Response,
    Rubric,
)
from annotation.services.import_jobs import import_job_create
from annotation.services.imports import dataset_import_files
from annotation.services.rubrics import rubric_get_default
from flaskapp.workspaces import default_workspace
from tests.factories import DatasetFactory, InstructionFactory, ResponseFactory

pytestmark = pytest.mark.django_db

LAYOUT_NAV = '<nav aria-label="Main">'

FLASK_ROWS = [
    {
        "idx": 1,
        "instruction": "Explain why the sky is blue to a ten-year-old.",
        "answer": "Sunlight scatters off air molecules; blue light scatters most.",
        "task": "science_qa",
        "skill": ["Factuality", "Comprehension", "Readability"],
        "domain": ["Natural Science"],
        "difficulty": "simple lifestyle knowledge",
    },
    {
        "idx": 2,
        "instruction": "What is 17 times 23? Show the steps.",
        "answer": "17 x 23 = 391.",
        "task": "arithmetic",
        "skill": ["Logical Correctness", "Logical Robustness", "Readability"],
        "domain": ["Math"],
        "difficulty": "formal education knowledge",
    },
    {
        "idx": 3,
        "instruction": "Write a haiku about autumn leaves.",
        "answer": "Red leaves drift and fall / ...",
        "task": "poetry",
        "skill": ["Insightfulness", "Readability", "Conciseness"],
        "domain": ["Language", "Culture"],
        "difficulty": -1,
    },
]


def jsonl(rows: list) -> bytes:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows).encode()


def page_text(response) -> str:
    """The page as a person reads it: tags dropped, entities decoded, spaces collapsed."""
    body = response.content.decode()
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", body, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body))).strip()


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    # Import jobs store their uploads under MEDIA_ROOT.
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def browse_dataset(db):
    """A dataset with four instructions of different domains, levels and skills."""
    dataset = DatasetFactory(name="browse-set")
    sky = InstructionFactory(
        dataset=dataset,
        external_id="sky",
        text="Explain why the sky is blue.",
        domain_1="natural_science",
        difficulty=1,
        source_task="science_qa",
        skill_keys=["factuality", "comprehension", "readability"],
    )
    maths = InstructionFactory(
        dataset=dataset,
        external_id="maths",
        text="Compute seventeen times twenty-three.",
        domain_1="math",
        difficulty=3,
        source_task="arithmetic",
        skill_keys=["logical_correctness", "logical_robustness", "readability"],
    )
    poem = InstructionFactory(
        dataset=dataset,
        external_id="poem",
        text="Write a haiku about autumn leaves.",
        domain_1="language",
        domain_2="culture",
        difficulty=None,
        source_task="poetry",
        skill_keys=["insightfulness", "readability", "conciseness"],
    )
    proof = InstructionFactory(
        dataset=dataset,
        external_id="proof",
        text="Prove that there are infinitely many primes.",
        domain_1="math",
        difficulty=5,
        source_task="proofs",
        is_hard=True,
        skill_keys=["logical_robustness"],
    )
    for instruction in (sky, maths, poem, proof):
        ResponseFactory(instruction=instruction, model_name="alpha")
    ResponseFactory(instruction=sky, model_name="beta")
    return dataset


def result_ids(response) -> list[str]:
    """External ids listed in the instruction table of a page or fragment."""
    table = response.content.decode().split('id="instruction-table"', 1)
    if len(table) < 2:
        return []
    return re.findall(
        r'<td class="nowrap"><a href="/instructions/\d+/[^"]*">([^<]+)</a>', table[1]
    )


# --- Layout, login, home ---------------------------------------------------------------


def test_login_page_logs_a_user_in(client, researcher):
    page = client.get(reverse("login"))
    assert page.status_code == 200
    assert "Log in to FLASK Eval" in page_text(page)

    response = client.post(
        reverse("login"), {"username": "researcher-user", "password": "pw-123456"}
    )

    assert response.status_code == 302
    assert response.url == reverse("home")
    assert "researcher-user" in page_text(client.get(reverse("home")))


def test_login_with_a_wrong_password_says_so(client, researcher):
    response = client.post(
        reverse("login"), {"username": "researcher-user", "password": "x"}
    )

    assert response.status_code == 200
    assert "enter a correct username and password" in page_text(response)


def test_home_sends_anonymous_visitors_to_login(client):
    response = client.get(reverse("home"))

    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


def test_home_for_an_admin_shows_datasets_recent_imports_and_every_nav_link(
    client_for, admin_user, browse_dataset
):
    import_job_create(
        dataset_name="fresh",
        fmt="flask",
        uploads=[("e.jsonl", jsonl(FLASK_ROWS))],
        user=admin_user,
    )

    response = client_for(admin_user).get(reverse("home"))

    text = page_text(response)
    assert response.status_code == 200
    assert "browse-set" in text
    assert "Recent imports" in text and "fresh" in text
    for url in ("dataset-list", "rubric-list", "import-list"):
        assert f'href="{reverse(f"annotation:{url}")}"' in response.content.decode()
    assert f'action="{reverse("logout")}"' in response.content.decode()


def test_home_for_a_researcher_shows_datasets_and_imports(
    client_for, researcher, browse_dataset
):
    """Issue 35: imports are a workspace researcher's (self-service)."""
    response = client_for(researcher).get(reverse("home"))

    body = response.content.decode()
    assert "browse-set" in page_text(response)
    # Issue 35: researchers import data themselves, so they see the imports too.
    assert "Recent imports" in body
    assert f'href="{reverse("annotation:dataset-list")}"' in body
    assert f'href="{reverse("annotation:import-list")}"' in body


def test_home_for_a_rater_says_there_is_no_rating_work_yet(
    client_for, rater, browse_dataset
):
    response = client_for(rater).get(reverse("home"))

    body = response.content.decode()
    assert response.status_code == 200
    assert "No rating work for you yet" in page_text(response)
    assert "browse-set" not in body
    assert f'href="{reverse("annotation:dataset-list")}"' not in body


def test_logout_is_a_post_that_ends_the_session(client_for, researcher):
    client = client_for(researcher)

    assert client.get(reverse("logout")).status_code == 405
    response = client.post(reverse("logout"))

    assert response.status_code == 302
    assert client.get(reverse("home")).status_code == 302


def test_pages_load_htmx_from_our_static_files_and_send_csrf_in_hx_headers(
    client_for, researcher
):
    body = client_for(researcher).get(reverse("home")).content.decode()

    assert "django_htmx/htmx-2.min.js" in body
    assert "https://" not in re.findall(r'<script[^>]*src="([^"]+)"', body)[0]
    assert re.search(r"<body hx-headers='\{\"X-CSRFToken\": \"[^\"]+\"\}'>", body)


# --- Datasets ---------------------------------------------------------------------------


def test_dataset_list_shows_counts_to_researchers_and_admins(
    client_for, researcher, admin_user, browse_dataset
):
    for user in (researcher, admin_user):
        response = client_for(user).get(reverse("annotation:dataset-list"))

        assert response.status_code == 200
        row = re.search(r"browse-set.*?</tr>", response.content.decode(), re.S).group(0)
        cells = re.findall(r'<td class="num">(\d+)</td>', row)
        assert cells == ["4", "5", "2"]  # instructions, responses, models
        assert "FLASK v1" in row


@pytest.mark.parametrize("name", ["dataset-list"])
def test_dataset_list_refuses_raters_and_anonymous(client_for, client, rater, name):
    url = reverse(f"annotation:{name}")

    assert client_for(rater).get(url).status_code == 403
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and anonymous.url.startswith(reverse("login"))


@pytest.mark.parametrize("datasets", [2, 12])
def test_dataset_list_query_count_does_not_grow_with_datasets(
    client_for, researcher, django_assert_max_num_queries, datasets
):
    for n in range(datasets):
        instruction = InstructionFactory(dataset=DatasetFactory(name=f"set-{n:02d}"))
        ResponseFactory(instruction=instruction)
    client = client_for(researcher)

    with django_assert_max_num_queries(5):
        response = client.get(reverse("annotation:dataset-list"))

    assert page_text(response).count("set-") == datasets


def test_dataset_detail_shows_counts_per_model_domain_difficulty_and_skill(
    client_for, researcher, browse_dataset
):
    response = client_for(researcher).get(
        reverse("annotation:dataset-detail", args=[browse_dataset.pk])
    )

    text = page_text(response)
    assert response.status_code == 200
    assert "4 instructions" in text and "5 responses" in text
    assert "alpha 4" in text and "beta 1" in text
    assert "Math 2" in text and "Culture 1" in text
    assert "Unknown 1" in text  # the poem has no difficulty level
    assert "5 · Expert level knowledge 1" in text
    assert "Readability 3" in text
    assert result_ids(response) == ["sky", "maths", "poem", "proof"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"domain": "math"}, ["maths", "proof"]),
        ({"domain": "culture"}, ["poem"]),  # second domain counts too
        ({"difficulty": "unknown"}, ["poem"]),
        ({"difficulty": "3"}, ["maths"]),
        ({"skill": "logical_robustness"}, ["maths", "proof"]),
        ({"task": "poetry"}, ["poem"]),
        ({"hard": "yes"}, ["proof"]),
        ({"hard": "no"}, ["sky", "maths", "poem"]),
        ({"q": "primes"}, ["proof"]),
        ({"domain": "math", "difficulty": "5"}, ["proof"]),
        # Values that cannot match anything are ignored rather than failing.
        (
            {"difficulty": "hard", "domain": "astrology"},
            ["sky", "maths", "poem", "proof"],
        ),
    ],
)
def test_dataset_detail_filters_instructions(
    client_for, researcher, browse_dataset, query, expected
):
    response = client_for(researcher).get(
        reverse("annotation:dataset-detail", args=[browse_dataset.pk]), query
    )

    assert response.status_code == 200
    assert result_ids(response) == expected


def test_dataset_detail_full_reload_with_filters_renders_the_whole_page(
    client_for, researcher, browse_dataset
):
    response = client_for(researcher).get(
        reverse("annotation:dataset-detail", args=[browse_dataset.pk]),
        {"domain": "math", "q": "seventeen"},
    )

    body = response.content.decode()
    assert LAYOUT_NAV in body
    assert 'id="instruction-filters"' in body
    assert '<option value="math" selected>' in body
    assert 'value="seventeen"' in body
    assert result_ids(response) == ["maths"]
    assert "matching the filters" in page_text(response)


def test_dataset_detail_htmx_request_returns_only_the_results_fragment(
    client_for, researcher, browse_dataset
):
    response = client_for(researcher).get(
        reverse("annotation:dataset-detail", args=[browse_dataset.pk]),
        {"domain": "math"},
        HTTP_HX_REQUEST="true",
    )

    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<div id="instruction-results"')
    assert LAYOUT_NAV not in body and "<html" not in body
    assert 'id="instruction-filters"' not in body
    assert result_ids(response) == ["maths", "proof"]
    assert "HX-Request" in response["Vary"]


def test_dataset_detail_htmx_history_restore_gets_the_whole_page(
    client_for, researcher, browse_dataset
):
    response = client_for(researcher).get(
        reverse("annotation:dataset-detail", args=[browse_dataset.pk]),
        HTTP_HX_REQUEST="true",
        HTTP_HX_HISTORY_RESTORE_REQUEST="true",
    )

    assert LAYOUT_NAV in response.content.decode()


def test_dataset_detail_paginates_fifty_per_page_with_real_links(
    client_for, researcher
):
    dataset = DatasetFactory()
    for n in range(60):
        InstructionFactory(dataset=dataset, external_id=f"i{n:02d}", skill_keys=[])
    url = reverse("annotation:dataset-detail", args=[dataset.pk])
    client = client_for(researcher)

    first = client.get(url)
    second = client.get(url, {"page": 2}, HTTP_HX_REQUEST="true")

    assert len(result_ids(first)) == 50
    assert "Showing 1–50 of 60 instructions" in page_text(first)
    assert f'href="{url}?page=2" hx-get="{url}?page=2"' in first.content.decode()
    assert result_ids(second) == [f"i{n}" for n in range(50, 60)]
    assert "Showing 51–60 of 60" in page_text(second)


def test_dataset_detail_refuses_raters_and_anonymous_and_404s_unknown_ids(
    client_for, client, rater, researcher, browse_dataset
):
    url = reverse("annotation:dataset-detail", args=[browse_dataset.pk])

    assert client_for(rater).get(url).status_code == 403
    assert client.get(url).status_code == 302
    missing = reverse("annotation:dataset-detail", args=[browse_dataset.pk + 1000])
    assert client_for(researcher).get(missing).status_code == 404


@pytest.mark.parametrize("instructions", [5, 40])
def test_instruction_browser_query_count_does_not_grow_with_rows(
    client_for, researcher, django_assert_max_num_queries, instructions
):
    dataset = DatasetFactory()
    for n in range(instructions):
        instruction = InstructionFactory(
            dataset=dataset, domain_2="coding" if n % 2 else ""
        )
        ResponseFactory(instruction=instruction, model_name="alpha")
        ResponseFactory(instruction=instruction, model_name="beta")
    url = reverse("annotation:dataset-detail", args=[dataset.pk])
    client = client_for(researcher)

    # 15, and 2 for the dataset's campaigns and judge runs (issue 37, defect 8)
    with django_assert_max_num_queries(17):
        page = client.get(url)
    with django_assert_max_num_queries(8):
        fragment = client.get(url, {"domain": "math"}, HTTP_HX_REQUEST="true")

    assert len(result_ids(page)) == instructions
    assert len(result_ids(fragment)) == instructions


# --- Instructions -------------------------------------------------------------------------


def test_instruction_detail_shows_text_reference_metadata_and_every_response(
    client_for, researcher, admin_user
):
    instruction = InstructionFactory(
        external_id="q-42",
        text="Name the largest planet.",
        reference_answer="Jupiter is the largest planet.",
        domain_1="natural_science",
        difficulty=2,
        source_task="astro_qa",
        is_hard=True,
        checklist=[{"skill": "factuality", "question": "Does it say Jupiter?"}],
        metadata={"source": "unit test", "tags": ["space", "planets"]},
        skill_keys=["factuality", "conciseness", "readability"],
    )
    ResponseFactory(instruction=instruction, model_name="zeta", text="It is Jupiter.")
    ResponseFactory(
        instruction=instruction, model_name="alpha", text="Saturn, I think."
    )

    for user in (researcher, admin_user):
        response = client_for(user).get(
            reverse("analysis:instruction-detail", args=[instruction.pk])
        )

        text = page_text(response)
        assert response.status_code == 200
        assert "Instruction q-42" in text and "FLASK-Hard" in text
        assert "Name the largest planet." in text
        assert "Jupiter is the largest planet." in text
        assert "Natural Science" in text and "2 · Advanced lifestyle" in text
        assert "astro_qa" in text
        # Skills in rank order, each with its primary ability.
        assert re.search(
            r"1 Factuality Background Knowledge 2 Conciseness User Alignment "
            r"3 Readability User Alignment",
            text,
        )
        assert "Factuality: Does it say Jupiter?" in text
        assert "source unit test" in text and "tags space, planets" in text
        assert text.index("alpha") < text.index("zeta")
        assert "Saturn, I think." in text and "It is Jupiter." in text


def test_instruction_detail_without_reference_answer_says_so(client_for, researcher):
    instruction = InstructionFactory(reference_answer="", skill_keys=[])

    response = client_for(researcher).get(
        reverse("analysis:instruction-detail", args=[instruction.pk])
    )

    assert "This instruction has no reference answer." in page_text(response)
    assert "No model has a response to this instruction yet." in page_text(response)


def test_instruction_detail_renders_markdown_safely(client_for, researcher):
    instruction = InstructionFactory(skill_keys=[])
    ResponseFactory(
        instruction=instruction,
        model_name="risky",
        text=(
            "Hello <script>alert('owned')</script> and **bold**.\n\n"
            "[click me](javascript:alert(1)) <img src=x onerror=alert(2)>\n\n"
            "```python\ndef add(a, b):\n    return  a + b\n```\n"
        ),
    )

    response = client_for(researcher).get(
        reverse("analysis:instruction-detail", args=[instruction.pk])
    )

    body = response.content.decode()
    assert "<script>alert" not in body
    assert "&lt;script&gt;alert" in body  # shown as the text the model wrote
    assert "<img" not in body and "javascript:" not in body
    assert "<strong>bold</strong>" in body
    # The code block keeps its indentation and gets Pygments highlighting spans.
    assert '<div class="codehilite"><pre>' in body
    assert '<span class="k">def</span>' in body
    assert '\n    <span class="k">return</span>  ' in body


def test_instruction_detail_refuses_raters_and_anonymous(client_for, client, rater):
    instruction = InstructionFactory(skill_keys=[])
    url = reverse("analysis:instruction-detail", args=[instruction.pk])

    assert client_for(rater).get(url).status_code == 403
    assert client.get(url).status_code == 302


def test_instruction_detail_404s_unknown_ids(client_for, researcher):
    url = reverse("analysis:instruction-detail", args=[999999])

    assert client_for(researcher).get(url).status_code == 404


# --- Rubrics ------------------------------------------------------------------------------


def skillset_json(**overrides) -> bytes:
    items = [
        {
            "Skill": name,
            "Criteria": f"Official criteria for {name}.",
            "Scoring": {str(i): f"{name} anchor {i}" for i in range(1, 6)},
        }
        for _key, name, _ability, _criteria, _anchors in BUILTIN_SKILLS
    ]
    items[0].update(overrides)
    return json.dumps(items).encode()


def test_rubric_list_and_detail_show_skills_by_ability_with_anchors(
    client_for, researcher
):
    rubric = rubric_get_default()
    client = client_for(researcher)

    listing = client.get(reverse("annotation:rubric-list"))
    detail = client.get(reverse("annotation:rubric-detail", args=[rubric.pk]))

    assert listing.status_code == 200 and "FLASK" in page_text(listing)
    text = page_text(detail)
    assert detail.status_code == 200
    abilities = [
        "Logical Thinking",
        "Background Knowledge",
        "Problem Handling",
        "User Alignment",
    ]
    positions = [text.index(a) for a in abilities]
    assert positions == sorted(positions)
    assert text.index("Logical Robustness") < text.index("Background Knowledge")
    assert text.index("Metacognition") < text.index("User Alignment")
    logical = rubric.skills.get(key="logical_correctness")
    assert logical.criteria in text and logical.anchor_5 in text
    # Issue 35: a workspace's researchers also upload new versions.
    assert "Upload a new version" in text


def test_rubric_pages_refuse_raters_and_anonymous(client_for, client, rater):
    rubric = rubric_get_default()
    for url in (
        reverse("annotation:rubric-list"),
        reverse("annotation:rubric-detail", args=[rubric.pk]),
    ):
        assert client_for(rater).get(url).status_code == 403
        assert client.get(url).status_code == 302


def test_admin_uploads_the_flask_rubric_file_as_a_new_version(client_for, admin_user):
    rubric = rubric_get_default()
    client = client_for(admin_user)
    detail = client.get(reverse("annotation:rubric-detail", args=[rubric.pk]))
    assert "Upload a new version" in page_text(detail)

    response = client.post(
        reverse("annotation:rubric-import"),
        {
            "name": "FLASK",
            "file": SimpleUploadedFile("skillset_description.json", skillset_json()),
        },
    )

    new = Rubric.objects.get(name="FLASK", version=2)
    assert response.status_code == 302
    assert response.url == reverse("annotation:rubric-detail", args=[new.pk])
    page = page_text(client.get(response.url))
    assert "Imported FLASK v2." in page
    assert "Official criteria for Logical Robustness." in page


def test_rubric_upload_with_a_bad_skill_shows_the_problem_and_creates_nothing(
    client_for, admin_user
):
    before = Rubric.objects.count()

    response = client_for(admin_user).post(
        reverse("annotation:rubric-import"),
        {
            "name": "FLASK official",
            "file": SimpleUploadedFile(
                "skillset_description.json", skillset_json(Skill="Telepathy")
            ),
        },
    )

    assert response.status_code == 400
    assert "unknown skill 'Telepathy'" in page_text(response)
    assert Rubric.objects.count() == before


def test_rubric_upload_is_for_researchers_of_the_workspace(
    client_for, client, researcher, rater
):
    """Issue 35: a workspace's researchers upload rubrics (self-service); raters
    and anonymous visitors cannot."""
    url = reverse("annotation:rubric-import")
    upload = {"name": "X", "file": SimpleUploadedFile("s.json", skillset_json())}

    assert client_for(rater).get(url).status_code == 403
    assert client.get(url).status_code == 302
    assert not Rubric.objects.filter(name="X").exists()
    assert client_for(researcher).post(url, upload).status_code == 302
    rubric = Rubric.objects.get(name="X")
    assert rubric.workspace == default_workspace()


# --- Imports ------------------------------------------------------------------------------


def post_import(client, *, files, dataset_name="sky-set", fmt="flask", **extra):
    data = {"dataset_name": dataset_name, "format": fmt, "files": files, **extra}
    return client.post(reverse("annotation:import-new"), data)


def test_outputs_for_a_missing_dataset_say_so_in_one_sentence(client_for, admin_user):
    client = client_for(admin_user)
    response = post_import(
        client,
        files=SimpleUploadedFile("out.jsonl", b'{"idx": 1, "output": "x"}\n'),
        dataset_name="no-such-set",
        fmt="flask_outputs",
        model="model-x",
    )
    text = page_text(client.get(response.url))
    # Its own advice, no "fix the problems below" glued to it.
    assert (
        "Dataset 'no-such-set' does not exist; import its instructions first. "
        "Problems" in text
    )
    assert "problem below" not in text


def test_import_form_lists_formats_with_help_and_existing_dataset_names(
    client_for, admin_user, browse_dataset
):
    response = client_for(admin_user).get(reverse("annotation:import-new"))

    body = response.content.decode()
    text = page_text(response)
    assert response.status_code == 200
    for value, label in DATASET_FORMAT_CHOICES:
        assert f'<option value="{value}"' in body
        assert label in text
    # Judge results and preferences have their own importers, not this form.
    assert '<option value="judge_run"' not in body
    assert '<option value="preferences"' not in body
    assert "current schema" in text and "legacy" in text
    assert '<datalist id="dataset-names"><option value="browse-set">' in body
    assert 'type="file" name="files" multiple' in body
    assert "Mark every instruction as FLASK-Hard" in text


def test_import_pages_are_for_researchers_of_the_workspace(
    client_for, client, researcher, rater, admin_user
):
    """Issue 35: a workspace's researchers import (self-service); raters and
    anonymous visitors cannot."""
    job = import_job_create(
        dataset_name="x",
        fmt="flask",
        uploads=[("e.jsonl", jsonl(FLASK_ROWS))],
        user=admin_user,
    )
    urls = [
        reverse("annotation:import-list"),
        reverse("annotation:import-new"),
        reverse("annotation:import-detail", args=[job.pk]),
    ]
    for url in urls:
        assert client_for(researcher).get(url).status_code == 200
        assert client_for(rater).get(url).status_code == 403
        assert client.get(url).status_code == 302
    confirm = reverse("annotation:import-confirm", args=[job.pk])
    assert client_for(rater).post(confirm).status_code == 403

    def upload():
        return {
            "dataset_name": "y",
            "format": "flask",
            "files": SimpleUploadedFile("e.jsonl", jsonl(FLASK_ROWS)),
        }

    new = reverse("annotation:import-new")
    assert client_for(rater).post(new, upload()).status_code == 403
    assert ImportJob.objects.count() == 1 and not Dataset.objects.exists()
    # Issue 35: a researcher creates a dataset by import.
    response = client_for(researcher).post(new, upload())
    assert response.status_code == 302
    job = ImportJob.objects.get(dataset_name="y")
    assert job.status == "validated" and job.workspace == default_workspace()


def test_upload_validates_and_shows_the_report_and_preview_without_writing(
    client_for, admin_user
):
    client = client_for(admin_user)

    response = post_import(
        client, files=SimpleUploadedFile("eval.jsonl", jsonl(FLASK_ROWS))
    )

    job = ImportJob.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("annotation:import-detail", args=[job.pk])
    assert job.status == ImportJob.Status.VALIDATED and job.created_by == admin_user
    assert not Dataset.objects.exists()

    detail = client.get(response.url)
    text = page_text(detail)
    assert "Validated" in text
    assert "3 rows read" in text and "3 instructions to create" in text
    assert "0 responses to create" in text
    preview = detail.content.decode().split('id="import-preview"', 1)[1]
    for column in ("line", "id", "instruction", "skills", "domains", "difficulty"):
        assert f'<th scope="col">{column}</th>' in preview
    assert "Explain why the sky is blue to a ten-year-old." in preview
    assert "eval.jsonl" in text
    assert f'action="{reverse("annotation:import-confirm", args=[job.pk])}"' in (
        detail.content.decode()
    )


def test_confirm_imports_the_rows_and_links_to_the_dataset(client_for, admin_user):
    client = client_for(admin_user)
    post_import(client, files=SimpleUploadedFile("eval.jsonl", jsonl(FLASK_ROWS)))
    job = ImportJob.objects.get()

    response = client.post(reverse("annotation:import-confirm", args=[job.pk]))

    dataset = Dataset.objects.get(name="sky-set")
    assert response.status_code == 302
    assert response.url == reverse("annotation:import-detail", args=[job.pk])
    assert Instruction.objects.filter(dataset=dataset).count() == 3
    detail = client.get(response.url)
    text = page_text(detail)
    assert "Succeeded" in text and "3 instructions created" in text
    assert f'href="{reverse("annotation:dataset-detail", args=[dataset.pk])}"' in (
        detail.content.decode()
    )
    assert "Confirm import" not in text


def test_confirm_needs_post(client_for, admin_user):
    job = import_job_create(
        dataset_name="x",
        fmt="flask",
        uploads=[("e.jsonl", jsonl(FLASK_ROWS))],
        user=admin_user,
    )

    response = client_for(admin_user).get(
        reverse("annotation:import-confirm", args=[job.pk])
    )

    assert response.status_code == 405
    assert not Dataset.objects.exists()


def test_upload_with_a_bad_line_shows_line_and_field_and_creates_nothing(
    client_for, admin_user
):
    rows = [
        FLASK_ROWS[0],
        '{"idx": 2, "instruction": ',
        FLASK_ROWS[2] | {"domain": ["Astrology"]},
    ]
    client = client_for(admin_user)

    response = post_import(client, files=SimpleUploadedFile("bad.jsonl", jsonl(rows)))

    job = ImportJob.objects.get()
    assert job.status == ImportJob.Status.INVALID
    detail = client.get(response.url)
    text = page_text(detail)
    assert "Invalid" in text
    # One sentence says it was not imported (not twice), one says what to do.
    assert (
        "The file was not imported. Fix the 2 problems below, then upload the file "
        "again." in text
    )
    assert "Nothing was imported" not in text
    problems = detail.content.decode().split('id="import-problems"', 1)[1]
    problem_text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", problems)))
    assert re.search(r"bad\.jsonl line 2 — invalid JSON", problem_text)
    assert re.search(
        r"bad\.jsonl line 3 domain unknown domain 'Astrology'", problem_text
    )
    assert "Confirm import" not in text
    assert not Dataset.objects.exists() and not Instruction.objects.exists()
    # Confirming an invalid job is refused with its reason; still nothing is written.
    refused = client.post(
        reverse("annotation:import-confirm", args=[job.pk]), follow=True
    )
    assert "this import has problems" in page_text(refused)
    assert not Dataset.objects.exists()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"dataset_name": "   ", "format": "flask"}, "This field is required."),
        (
            {"dataset_name": "x", "format": "xml"},
            "Select a valid choice. xml is not one",
        ),
        (
            {"dataset_name": "x", "format": "flask", "no_file": True},
            "This field is required",
        ),
        # issue 37, defect 5: no format is assumed; the person chooses one
        ({"dataset_name": "x"}, "Choose the file's format"),
    ],
)
def test_import_form_rejects_bad_input_without_creating_a_job(
    client_for, admin_user, data, message
):
    data = dict(data)
    if not data.pop("no_file", False):
        data["files"] = SimpleUploadedFile("eval.jsonl", jsonl(FLASK_ROWS))

    response = client_for(admin_user).post(reverse("annotation:import-new"), data)

    assert response.status_code == 400
    assert message in page_text(response)
    assert "Please correct the fields marked below." in page_text(response)
    assert not ImportJob.objects.exists() and not Dataset.objects.exists()


def test_import_form_passes_options_to_the_service(client_for, admin_user):
    rubric = rubric_get_default()
    csv_data = b"prompt,gold,answer,llm\nWhat is 2+2?,4,Four.,m1\n"

    response = post_import(
        client_for(admin_user),
        dataset_name="csv-set",
        fmt="csv",
        files=SimpleUploadedFile("rows.csv", csv_data),
        mapping="instruction=prompt\r\n\r\nreference=gold\nresponse=answer\nmodel=llm\n",
        hard="on",
        rubric=str(rubric.pk),
        description="From a spreadsheet",
    )

    job = ImportJob.objects.get()
    assert response.status_code == 302
    assert job.options == {
        "mapping": [
            "instruction=prompt",
            "reference=gold",
            "response=answer",
            "model=llm",
        ],
        "hard": True,
        "rubric_id": rubric.pk,
        "description": "From a spreadsheet",
    }
    assert job.status == ImportJob.Status.VALIDATED, job.errors
    assert job.summary["created_responses"] == 1


def test_model_outputs_import_adds_responses_named_after_the_files(
    client_for, admin_user
):
    dataset_import_files(
        dataset_name="sky-set", fmt="flask", files=[("e.jsonl", jsonl(FLASK_ROWS))]
    )
    outputs = [
        SimpleUploadedFile(
            f"{model}.jsonl",
            jsonl(
                [
                    {"question_id": r["idx"], "text": f"{model} says {r['idx']}"}
                    for r in FLASK_ROWS
                ]
            ),
        )
        for model in ("gpt4", "vicuna")
    ]
    client = client_for(admin_user)

    response = post_import(client, fmt="flask_outputs", files=outputs)
    detail = page_text(client.get(response.url))
    client.post(reverse("annotation:import-confirm", args=[ImportJob.objects.get().pk]))

    assert "6 responses to create" in detail and "gpt4, vicuna" in detail
    assert Response.objects.filter(model_name="vicuna").count() == 3


def test_upload_over_the_size_limit_is_refused_on_the_form(
    client_for, admin_user, settings
):
    settings.IMPORT_MAX_BYTES = 100

    response = post_import(
        client_for(admin_user),
        files=[
            SimpleUploadedFile("big.jsonl", jsonl(FLASK_ROWS)),
            SimpleUploadedFile("small.jsonl", jsonl([FLASK_ROWS[0]])[:90]),
        ],
    )

    text = page_text(response)
    assert response.status_code == 400
    assert "big.jsonl: the file is" in text and "over the import limit" in text
    assert "IMPORT_MAX_BYTES" in text and "small.jsonl" not in text
    assert not ImportJob.objects.exists() and not Dataset.objects.exists()


def test_large_import_is_queued_and_its_page_polls_for_progress(
    client_for, admin_user, settings
):
    settings.IMPORT_INLINE_MAX_ROWS = 1
    client = client_for(admin_user)
    post_import(client, files=SimpleUploadedFile("eval.jsonl", jsonl(FLASK_ROWS)))
    job = ImportJob.objects.get()

    client.post(reverse("annotation:import-confirm", args=[job.pk]))
    url = reverse("annotation:import-detail", args=[job.pk])
    page = client.get(url)
    poll = client.get(url, HTTP_HX_REQUEST="true")

    job.refresh_from_db()
    assert job.status == ImportJob.Status.QUEUED
    assert "Queued" in page_text(page) and "this page updates by itself" in page_text(
        page
    )
    assert f'hx-get="{url}" hx-trigger="every 2s"' in page.content.decode()
    assert poll.status_code == 200
    assert poll.content.decode().lstrip().startswith('<section id="import-progress"')
    assert LAYOUT_NAV not in poll.content.decode()
    assert 'hx-trigger="every 2s"' in poll.content.decode()


def test_progress_fragment_stops_polling_with_286_once_finished(client_for, admin_user):
    client = client_for(admin_user)
    post_import(client, files=SimpleUploadedFile("eval.jsonl", jsonl(FLASK_ROWS)))
    job = ImportJob.objects.get()
    client.post(reverse("annotation:import-confirm", args=[job.pk]))

    poll = client.get(
        reverse("annotation:import-detail", args=[job.pk]), HTTP_HX_REQUEST="true"
    )

    body = poll.content.decode()
    assert poll.status_code == 286
    assert LAYOUT_NAV not in body and "hx-trigger" not in body
    assert "Succeeded" in body and "Open the dataset" in body


def test_import_list_shows_recent_jobs_with_status(client_for, admin_user):
    import_job_create(
        dataset_name="good",
        fmt="flask",
        uploads=[("e.jsonl", jsonl(FLASK_ROWS))],
        user=admin_user,
    )
    import_job_create(
        dataset_name="broken",
        fmt="flask",
        uploads=[("b.jsonl", b"not json")],
        user=admin_user,
    )

    response = client_for(admin_user).get(reverse("annotation:import-list"))

    text = page_text(response)
    assert response.status_code == 200
    assert text.index("broken") < text.index("good")  # newest first
    assert "Invalid 1 problem" in text and "Validated" in text
    assert "b.jsonl" in text


def test_import_detail_404s_unknown_ids(client_for, admin_user):
    url = reverse("annotation:import-detail", args=[424242])

    assert client_for(admin_user).get(url).status_code == 404


def test_the_import_page_lists_warnings_with_their_count_and_strict_refuses(
    client_for, admin_user
):
    client = client_for(admin_user)
    rows = jsonl(
        [
            {"id": "w1", "instruction": "Say hi.", "response": "Hi!", "model": "m1"},
            {"id": "w1", "instruction": "Say hi.", "response": "", "model": "m2"},
        ]
    )
    response = post_import(
        client, files=SimpleUploadedFile("w.jsonl", rows), fmt="jsonl"
    )
    text = page_text(client.get(response.url))
    assert "1 warning : accepted and to be imported" in text
    assert "w.jsonl, line 2, field `response`: is empty" in text
    strict = post_import(
        client,
        files=SimpleUploadedFile("w.jsonl", rows),
        fmt="jsonl",
        dataset_name="strict-set",
        strict="on",
    )
    text = page_text(client.get(strict.url))
    assert "with strict, warnings are errors" in text
    assert not Dataset.objects.exists()


def test_import_form_assumes_no_format(client_for, admin_user):
    # issue 37, defect 5: the form defaulted to "FLASK evaluation set"
    html = client_for(admin_user).get(reverse("annotation:import-new")).content.decode()
    select = html.split("data-format-select", 1)[1].split("</select>", 1)[0]
    assert '<option value="" selected>' in select
    assert select.count(" selected") == 1


def test_identical_problems_are_grouped_with_their_lines(client_for, admin_user):
    # issue 37, defect 5: a generic file read as FLASK gave one identical row a line
    rows = [{"prompt": f"q{i}", "answer": "a"} for i in range(12)]
    rows.append(FLASK_ROWS[0] | {"domain": ["Astrology"]})
    client = client_for(admin_user)
    response = post_import(client, files=SimpleUploadedFile("gen.jsonl", jsonl(rows)))
    detail = client.get(response.url).content.decode()
    problems = detail.split('id="import-problems"', 1)[1].split("</table>", 1)[0]
    body = problems.split("<tbody>", 1)[1]
    text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))
    assert "12 lines: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, and 2 more" in text
    assert "line 13" in text and "unknown domain 'Astrology'" in text
    assert "12 lines: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, and 2 more instruction" in text
    assert body.count("<tr>") == 3  # idx x 12, instruction x 12, the domain
