"""A dataset with all its scores as a Hugging Face dataset directory: what
`datasets.DatasetDict.save_to_disk` writes, so that `datasets.load_from_disk(DIR)`
reads it back, with a README.md dataset card (`hub_card`).

The directory (`hub_export_write`)::

    dataset_dict.json          {"splits": ["responses", "scores"]}
    responses/                 one row per model response: the instruction, its
      data-00000-of-00001.arrow  reference, task, domains, difficulty, skills, the
      dataset_info.json          dataset's facets, the model and its response
      state.json
    scores/                    one row per (response, criterion, source): the long
      ...                        export shape of `exports.scores.FIELDS`
    README.md                  the dataset card

Each table is one Arrow IPC stream file written one batch at a time with pyarrow
(an optional package: `flaskapp.optional.HUB`); `datasets` itself is not needed to
write it (tests read it back with `datasets`). The `responses` table re-imports as a
dataset (`import_dataset DIR --split responses`; a dataset of its own taxonomy with
`--taxonomy`, its facets being columns). Pushing the directory to the Hub needs a
network and a token: `huggingface-cli upload OWNER/NAME DIR --repo-type dataset`,
by the dataset's owner (README, Hugging Face datasets); this module never does.

`hub_export_zip` streams the directory as a zip (the export API's ``format=hf``).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from django.utils import timezone
from django.utils.text import slugify

from analysis.exports.scores import (
    TEST_ROWS_LEFT_OUT,
    TestRows,
    parquet_schema,
    score_rows,
)
from annotation.importers.taxonomy import Taxonomy
from annotation.models import Dataset, InstructionSkill, Response
from flaskapp.errors import DomainError, Problem
from flaskapp.optional import HUB
from judging.selectors.splits import split_part_by_instruction

DATA_FILE = "data-00000-of-00001.arrow"
SPLITS = ("responses", "scores")
BATCH_ROWS = 2000
ZIP_CHUNK = 1 << 16


@dataclass
class HubExport:
    """What `hub_export_write` wrote: its directory and each table's rows."""

    path: Path
    responses: int = 0
    scores: int = 0


def hub_export_check() -> None:
    """`DomainError` naming `format` when this server cannot write the directory
    (pyarrow missing; the message says how to enable it)."""
    if not HUB.available():
        raise DomainError(
            "Export format not available", [Problem(HUB.missing(), field="format")]
        )


def responses_schema(taxonomy: Taxonomy):
    """The `responses` table's `pyarrow.Schema`: the generic import's field names
    (so the table re-imports as it is), then one text column per facet."""
    import pyarrow as pa

    return pa.schema(
        [
            ("id", pa.string()),
            ("instruction", pa.string()),
            ("reference", pa.string()),
            ("task", pa.string()),
            ("domains", pa.list_(pa.string())),
            ("difficulty", pa.int64()),
            ("skills", pa.list_(pa.string())),
            ("is_hard", pa.bool_()),
            ("split", pa.string()),
            ("model", pa.string()),
            ("response", pa.string()),
            *[(facet.name, pa.string()) for facet in taxonomy.facets],
        ]
    )


def response_rows(dataset: Dataset, taxonomy: Taxonomy) -> Iterator[dict]:
    """One row per response of `dataset`, in instruction then model order (two
    queries, the responses read in chunks)."""
    skills: dict[int, list[str]] = {}
    for instruction_id, key in (
        InstructionSkill.objects.filter(instruction__dataset=dataset)
        .order_by("instruction_id", "rank")
        .values_list("instruction_id", "skill__key")
    ):
        skills.setdefault(instruction_id, []).append(key)
    parts = split_part_by_instruction(dataset=dataset)
    rows = (
        Response.objects.filter(instruction__dataset=dataset)
        .order_by("instruction__position", "instruction_id", "model_name")
        .values_list(
            "instruction_id",
            "instruction__external_id",
            "instruction__text",
            "instruction__reference_answer",
            "instruction__source_task",
            "instruction__domain_1",
            "instruction__domain_2",
            "instruction__difficulty",
            "instruction__is_hard",
            "instruction__metadata",
            "model_name",
            "text",
        )  # fmt: skip
    )
    for (
        instruction_id, external_id, text, reference, task, domain_1, domain_2,
        difficulty, is_hard, metadata, model, response,
    ) in rows.iterator(chunk_size=BATCH_ROWS):  # fmt: skip
        row = {
            "id": external_id,
            "instruction": text,
            "reference": reference,
            "task": task,
            "domains": [d for d in (domain_1, domain_2) if d],
            "difficulty": difficulty,
            "skills": skills.get(instruction_id, []),
            "is_hard": is_hard,
            "split": parts.get(instruction_id, ""),
            "model": model,
            "response": response,
        }
        for facet in taxonomy.facets:
            value = (metadata or {}).get(facet.name)
            row[facet.name] = None if value is None else str(value)
        yield row


def _write_table(
    directory: Path, schema, rows: Iterable[dict], fingerprint: str
) -> int:
    """One `save_to_disk` split: its Arrow stream file, state.json and
    dataset_info.json (features left to `datasets`, which reads them from the
    Arrow schema: the same whatever its version). Returns the rows written."""
    import pyarrow as pa

    directory.mkdir(parents=True)
    text = [f.name for f in schema if pa.types.is_string(f.type)]
    count = 0
    with (
        pa.OSFile(str(directory / DATA_FILE), "wb") as sink,
        pa.ipc.new_stream(sink, schema) as writer,
    ):
        batch: list[dict] = []

        def flush() -> None:
            for row in batch:
                for name in text:
                    if row[name] is not None and not isinstance(row[name], str):
                        row[name] = str(row[name])
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            batch.clear()

        for row in rows:
            batch.append(dict(row))
            count += 1
            if len(batch) >= BATCH_ROWS:
                flush()
        if batch or not count:
            flush()
    state = {
        "_data_files": [{"filename": DATA_FILE}],
        "_fingerprint": fingerprint,
        "_format_columns": None,
        "_format_kwargs": {},
        "_format_type": None,
        "_output_all_columns": False,
        "_split": None,
    }
    info = {"citation": "", "description": "", "homepage": "", "license": ""}
    (directory / "state.json").write_text(json.dumps(state, indent=2) + "\n")
    (directory / "dataset_info.json").write_text(json.dumps(info, indent=2) + "\n")
    return count


def hub_export_write(
    *,
    dataset: Dataset,
    out: Path,
    campaign_ids: list[int] | None = None,
    run_ids: list[int] | None = None,
    test_rows: TestRows = TEST_ROWS_LEFT_OUT,
) -> HubExport:
    """Write `dataset` as a Hugging Face dataset directory at `out` (created; an
    existing `out` must be an empty directory). The scores are `score_rows`'s
    (`campaign_ids`, `run_ids`, the test split's rows only when `test_rows` lets
    them in, as every export). Reads the database in chunks; writes files only.
    Raises `DomainError` naming `out` for a directory that is not empty, and
    `format` without pyarrow."""
    hub_export_check()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DomainError(
            "the export was not written",
            [Problem(f"{out} exists and is not an empty directory", field="out")],
        )
    out.mkdir(parents=True, exist_ok=True)
    taxonomy = Taxonomy.stored(dataset.taxonomy)
    stamp = timezone.now()
    result = HubExport(path=out)
    for split in SPLITS:
        fingerprint = hashlib.sha256(
            f"{dataset.pk}:{split}:{stamp.isoformat()}".encode()
        ).hexdigest()[:16]
        if split == "responses":
            result.responses = _write_table(
                out / split,
                responses_schema(taxonomy),
                response_rows(dataset, taxonomy),
                fingerprint,
            )
        else:
            result.scores = _write_table(
                out / split,
                parquet_schema(),
                score_rows(
                    dataset=dataset,
                    campaign_ids=campaign_ids,
                    run_ids=run_ids,
                    test_rows=test_rows,
                ),
                fingerprint,
            )
    (out / "dataset_dict.json").write_text(json.dumps({"splits": list(SPLITS)}) + "\n")
    (out / "README.md").write_text(
        hub_card(dataset, result, taxonomy, test_rows, stamp), encoding="utf-8"
    )
    return result


def hub_export_zip(
    *,
    dataset: Dataset,
    campaign_ids: list[int] | None = None,
    run_ids: list[int] | None = None,
    test_rows: TestRows = TEST_ROWS_LEFT_OUT,
) -> Iterator[bytes]:
    """The `hub_export_write` directory of `dataset` as a zip (one folder named
    after the dataset), in chunks. Written to a temporary directory first, which
    is removed when the last chunk has been read (or the generator is closed)."""
    hub_export_check()
    folder = slugify(dataset.name) or "dataset"
    with tempfile.TemporaryDirectory(prefix="flask-hf-") as tmp:
        root = Path(tmp) / folder
        hub_export_write(
            dataset=dataset,
            out=root,
            campaign_ids=campaign_ids,
            run_ids=run_ids,
            test_rows=test_rows,
        )
        archive = Path(tmp) / "export.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(root.rglob("*")):
                if path.is_file():
                    zf.write(path, path.relative_to(tmp).as_posix())
        with archive.open("rb") as stream:
            while chunk := stream.read(ZIP_CHUNK):
                yield chunk


_SCORE_COLUMNS = (
    ("instruction_external_id, model", "the response scored (`id` and `model` "
     "in `responses`)"),
    ("skill_key, skill_name, skill_group, scale", "the criterion and its scale"),
    ("source_type, source, rater_id", "who scored: a human rater (`source` is "
     "the rater's username), a reviewer's adjudication, or a judge run and sample"),
    ("score, value, is_na, rationale", "the score (`value` as written: the point, "
     "a label, or N/A) and its rationale"),
    ("synthetic", "true for a score of a synthetic account: generated by a "
     "program (e.g. a demo's example ratings), never a person's judgment"),
    ("gold, excluded", "a rater's score of a known-answer item; a score of a "
     "rater excluded from the analyses"),
    ("split", "`dev` or `test` when the dataset has a development / test split"),
    ("expected_score, expected_mass", "a judge score's probability-weighted value "
     "(from the judge's token probabilities) and the probability it covered; "
     "empty otherwise"),
    ("domain_labels, difficulty_label", "the labels of the instruction's domains "
     "and difficulty level where the dataset declares its own taxonomy (below); "
     "empty otherwise"),
)  # fmt: skip


def hub_card(
    dataset: Dataset,
    export: HubExport,
    taxonomy: Taxonomy,
    test_rows: TestRows,
    stamp,
) -> str:
    """The README.md dataset card: a YAML header the Hub reads (the two tables as
    configurations of their Arrow files; no license: the owner's choice), what the
    dataset is, its columns, which rows are synthetic, and how to load and publish
    it."""
    facets = ", ".join(f"`{f.name}`" for f in taxonomy.facets)
    lines = [
        "---",
        "configs:",
        "- config_name: responses",
        "  data_files:",
        "  - split: train",
        "    path: responses/*.arrow",
        "- config_name: scores",
        "  data_files:",
        "  - split: train",
        "    path: scores/*.arrow",
        "tags:",
        "- llm-evaluation",
        "- human-evaluation",
        "- llm-as-a-judge",
        "---",
        "",
        f"# {dataset.name}",
        "",
        *([dataset.description.strip(), ""] if dataset.description.strip() else []),
        "Model responses to a set of instructions, and the scores human raters and "
        "LLM judges gave them criterion by criterion against one rubric "
        f"({dataset.rubric}), exported from FLASK Eval on "
        f"{stamp:%Y-%m-%d}. It holds {export.responses:,} responses and "
        f"{export.scores:,} scores.",
        "",
        "## Tables",
        "",
        "`datasets.load_from_disk(DIR)` returns a `DatasetDict` of two tables "
        "(on the Hub: two configurations):",
        "",
        "- **responses**: one row per model response. `id`, `instruction`, "
        "`reference`, `task`, `domains`, `difficulty`, `skills` (the instruction's "
        "relevant criteria, most relevant first), `is_hard`, `split`, `model`, "
        "`response`"
        + (f", and the dataset's facets {facets}" if facets else "")
        + ". These are the field names FLASK Eval's generic import reads, so the "
        "table imports again as it is.",
        "- **scores**: one row per (response, criterion, source). Main columns:",
        "",
        *[f"  - `{cols}`: {what}" for cols, what in _SCORE_COLUMNS],
        "",
        "## Synthetic rows",
        "",
        "Rows with `synthetic` true were not given by a person: they come from "
        "synthetic accounts (a program generating example ratings). Leave them out "
        "of any analysis of human judgment: `scores.filter(lambda r: not "
        "r['synthetic'])`.",
        "",
        "## Taxonomy",
        "",
        _taxonomy_text(taxonomy),
        "",
        "## Test split",
        "",
        f"Scores of the locked test split: {test_rows.label}.",
        "",
        "## Before publishing",
        "",
        "`source` holds the raters' usernames in this installation: where they are "
        "people's names or e-mail addresses, replace them (e.g. with `rater_id`) "
        "before the dataset leaves your organisation.",
        "",
        "## License",
        "",
        "Not set. The dataset's owner chooses a license (checking those of the "
        "instructions and responses, which may come from other sources) and adds "
        "`license: <id>` to the header above before publishing.",
        "",
        "## Publishing",
        "",
        "This directory is ready to upload (it needs a network and a Hugging Face "
        "token with write access):",
        "",
        "```",
        "huggingface-cli upload OWNER/NAME DIR --repo-type dataset",
        "```",
        "",
    ]
    return "\n".join(lines)


def _taxonomy_text(taxonomy: Taxonomy) -> str:
    if taxonomy.is_flask:
        return (
            "FLASK's: `domains` are among its ten domains and `difficulty` is 1-5 "
            "(simple lifestyle knowledge to expert level knowledge)."
        )
    parts = []
    labels = taxonomy.domain_labels()
    if taxonomy.domains is not None:
        parts.append(
            "Domains (key: label): "
            + "; ".join(f"`{k}`: {label}" for k, label in labels.items())
            + "."
        )
    if taxonomy.difficulty is not None:
        parts.append(
            "Difficulty levels: "
            + "; ".join(
                f"{level}: {label}"
                for level, label in taxonomy.difficulty_labels().items()
            )
            + "."
        )
    if taxonomy.facets:
        parts.append(
            "Facets (categorical columns): "
            + ", ".join(f"`{f.name}`" for f in taxonomy.facets)
            + "."
        )
    declared = json.dumps(taxonomy.to_json(), ensure_ascii=False)
    return " ".join(parts) + f" The declaration, as imported: `{declared}`."
