"""Hugging Face datasets out: `export --format hf --out DIR` and the export API's
`format=hf` write a dataset with all its scores as a directory that
`datasets.load_from_disk` reads back (the real library, requirements-dev.txt), with
a dataset card; the responses table imports again as the same dataset (issue 35)."""

from __future__ import annotations

import io
import json
import zipfile

import datasets
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from analysis.exports.scores import export_chunks
from annotation.models import Instruction, Response
from tests.analysis.support_scores import support_with_scores
from tests.annotation.support_data import TAXONOMY, write_taxonomy

pytestmark = pytest.mark.django_db


@pytest.fixture
def support(researcher, tmp_path):
    return support_with_scores(researcher, tmp_path)


def export(*args) -> str:
    err = io.StringIO()
    call_command("export", *args, stdout=io.StringIO(), stderr=err)
    return err.getvalue()


def export_rows(dataset) -> list[dict]:
    """The rows of the Parquet export (its types: `value` is text)."""
    body = b"".join(export_chunks(dataset=dataset, fmt="parquet"))
    return pq.read_table(io.BytesIO(body)).to_pylist()


def test_export_hf_is_read_back_by_load_from_disk_with_the_same_rows(support, tmp_path):
    dataset, _, _ = support
    out = tmp_path / "hf"

    said = export("--dataset", "support", "--format", "hf", "--out", str(out))

    assert "12 responses and 96 scores of support written to" in said
    loaded = datasets.load_from_disk(str(out))
    assert set(loaded) == {"responses", "scores"}
    assert loaded["scores"].to_list() == export_rows(dataset)
    responses = loaded["responses"].to_list()
    assert len(responses) == 12
    first = responses[0]
    assert {k: first[k] for k in ("id", "model", "domains", "difficulty", "channel",
                                  "language")} == {
        "id": "t1", "model": "helper-a", "domains": ["billing"], "difficulty": 1,
        "channel": "email", "language": "en",
    }  # fmt: skip
    assert {(r["id"], r["model"]): r["response"] for r in responses} == {
        (r.instruction.external_id, r.model_name): r.text
        for r in Response.objects.select_related("instruction")
    }
    # Synthetic rows are labelled: the third rater is a synthetic account.
    synthetic = [r for r in loaded["scores"] if r["synthetic"]]
    assert synthetic and all(r["source_type"] == "human" for r in synthetic)


def test_export_hf_has_a_dataset_card(support, tmp_path):
    out = tmp_path / "hf"
    export("--dataset", "support", "--format", "hf", "--out", str(out))

    card = (out / "README.md").read_text()

    header = card.split("---")[1]
    assert "config_name: scores" in header and "license" not in header
    assert "# support" in card
    assert "Rows with `synthetic` true were not given by a person" in card
    assert "## License\n\nNot set." in card
    assert "huggingface-cli upload OWNER/NAME DIR --repo-type dataset" in card
    assert "`account`: Account access" in card and "3: escalation" in card


def test_exported_responses_import_again_as_the_same_dataset(support, tmp_path):
    out = tmp_path / "hf"
    export("--dataset", "support", "--format", "hf", "--out", str(out))
    taxonomy = write_taxonomy(tmp_path / "taxonomy.json")

    call_command(
        "import_dataset", str(out), "--dataset", "support-again", "--split",
        "responses", "--taxonomy", str(taxonomy), "--facet", "language",
        stdout=io.StringIO(), stderr=io.StringIO(),
    )  # fmt: skip

    def content(name):
        return {
            (i.external_id, i.text, tuple(i.domains), i.difficulty,
             i.metadata.get("channel"), i.metadata.get("language"))
            for i in Instruction.objects.filter(dataset__name=name)
        }  # fmt: skip

    assert content("support-again") == content("support")
    assert (
        Response.objects.filter(instruction__dataset__name="support-again").count()
        == 12
    )


def test_export_hf_refuses_a_directory_that_is_not_empty(support, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")

    with pytest.raises(CommandError) as exc:
        export(
            "--dataset", "support", "--format", "hf", "--out", str(tmp_path / "full")
        )
    assert "field `out`" in str(exc.value) and "not an empty directory" in str(
        exc.value
    )
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"

    with pytest.raises(CommandError, match="--format hf writes a directory"):
        export("--dataset", "support", "--format", "hf")


def test_api_export_hf_is_a_zip_of_the_directory(
    support, researcher, api_client_for, tmp_path
):
    dataset, _, _ = support
    url = reverse("analysis_api:dataset-export", args=[dataset.pk])

    resp = api_client_for(researcher).get(url, {"format": "hf"})

    assert resp.status_code == 200
    assert resp["Content-Type"] == "application/zip"
    assert 'filename="support-scores.hf.zip"' in resp["Content-Disposition"]
    with zipfile.ZipFile(io.BytesIO(b"".join(resp.streaming_content))) as zf:
        assert "support/README.md" in zf.namelist()
        zf.extractall(tmp_path)
    loaded = datasets.load_from_disk(str(tmp_path / "support"))
    assert loaded["scores"].to_list() == export_rows(dataset)


@pytest.mark.parametrize("who, status", [("rater", 403), (None, 401)])
def test_api_export_hf_is_refused_to_raters_and_anonymous(
    support, who, status, request, api_client_for, client
):
    dataset, _, _ = support
    url = reverse("analysis_api:dataset-export", args=[dataset.pk]) + "?format=hf"
    caller = api_client_for(request.getfixturevalue(who)) if who else client

    assert caller.get(url).status_code == status


def test_api_export_refuses_an_unknown_format_naming_it(
    support, researcher, api_client_for
):
    dataset, _, _ = support
    url = reverse("analysis_api:dataset-export", args=[dataset.pk])

    resp = api_client_for(researcher).get(url, {"format": "arrow"})

    assert resp.status_code == 400
    assert resp.json()["problems"][0]["field"] == "format"
    assert "hf" in resp.json()["problems"][0]["message"]


def test_dataset_page_links_the_hugging_face_download(support, researcher, client_for):
    dataset, _, _ = support
    page = client_for(researcher).get(
        reverse("annotation:dataset-detail", args=[dataset.pk])
    )

    assert page.status_code == 200
    assert "?format=hf" in page.content.decode()
    assert "Hugging Face dataset (zip)" in page.content.decode()


def _upload_zip(client, name, body: bytes, **data):
    upload = io.BytesIO(body)
    upload.name = "support.zip"
    return client.post(
        reverse("annotation_api:dataset-import", args=[name]),
        {"format": "jsonl", "file": upload, **data},
        format="multipart",
    )


def test_the_downloaded_zip_uploads_again_as_the_same_dataset(
    support, researcher, admin_user, api_client_for
):
    dataset, _, _ = support
    download = api_client_for(researcher).get(
        reverse("analysis_api:dataset-export", args=[dataset.pk]), {"format": "hf"}
    )
    body = b"".join(download.streaming_content)
    client = api_client_for(admin_user)

    refused = _upload_zip(client, "from-zip", body)
    assert refused.status_code == 400
    assert "it holds the splits responses, scores; choose one" in str(refused.json())

    resp = _upload_zip(client, "from-zip", body, split="responses",
                       taxonomy=json.dumps(TAXONOMY), facets=["language"])  # fmt: skip
    assert resp.status_code == 201, resp.content
    assert Response.objects.filter(instruction__dataset__name="from-zip").count() == 12
    t3 = Instruction.objects.get(dataset__name="from-zip", external_id="t3")
    assert (t3.domains, t3.difficulty, t3.metadata["channel"]) == (
        ["account"],
        1,
        "phone",
    )


def test_a_zip_whose_member_leaves_its_folder_is_refused(admin_user, api_client_for):
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../../evil.jsonl", '{"instruction": "x"}\n')

    resp = _upload_zip(api_client_for(admin_user), "evil", archive.getvalue())

    assert resp.status_code == 400
    assert "leaves its folder" in str(resp.json())
    assert not Instruction.objects.exists()


def test_a_zip_bomb_is_refused_before_it_fills_the_disk(
    admin_user, api_client_for, settings
):
    settings.IMPORT_MAX_DECOMPRESSED_BYTES = 1_000_000
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("train.jsonl", b" " * 5_000_000)

    resp = _upload_zip(api_client_for(admin_user), "bomb", archive.getvalue())

    assert resp.status_code == 400
    assert "decompresses to more than 1,000,000 bytes" in str(resp.json())
