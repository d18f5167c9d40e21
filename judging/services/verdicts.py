"""Judge verdicts that arrive inside a preference file (`import_preferences --judge`).

`annotation.services.preference_imports.preferences_import` imports the votes and pairs and
hands the verdicts to an `ImportedVerdicts` (its `VerdictWriter`), made inside its
transaction by `imported_verdicts`, the factory every caller passes: the command, the
API and the demo loader. The verdicts of one file content and options become one
completed `JudgeRun` of kind "imported" of the named `JudgeConfig` (created as a
placeholder without an endpoint when missing, so it can never be run).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath

from django.utils import timezone

from annotation.importers.preferences import PreferenceRow
from annotation.labels import map_verdict, unmap_verdict
from annotation.models import Dataset
from annotation.services.preferences import PreferenceImportReport
from flaskapp import limits
from flaskapp.limits import clip
from flaskapp.models import default_workspace
from judging.models import JudgeConfig, JudgeRun, PairwiseVerdict

BATCH = 2000


@dataclass
class ImportedVerdicts:
    """The judge config and imported run a file's verdicts go to, and what they hold."""

    name: str
    import_key: str
    config: JudgeConfig | None = None
    run: JudgeRun | None = None
    stored: set[tuple[int, str]] = field(default_factory=set)  # (pair, order)

    def count(
        self,
        *,
        rows: list[PreferenceRow],
        pair_id: Callable[[PreferenceRow], int | None],
        report: PreferenceImportReport,
    ) -> None:
        """Fill the report's verdict fields; a verdict stored before is unchanged."""
        report.judge_config_created = self.config is None
        report.run_created = self.run is None
        report.run_id = self.run.pk if self.run is not None else None
        seen: set[tuple] = set()
        for row in rows:
            pk = pair_id(row)
            for verdict in row.verdicts:
                key = ((row.prompt, row.model_1, row.model_2), verdict.order)
                if key in seen:
                    continue
                seen.add(key)
                if pk is not None and (pk, verdict.order) in self.stored:
                    report.unchanged_verdicts += 1
                else:
                    report.created_verdicts += 1
                    report.unusable_verdicts += verdict.value == ""

    def write(
        self,
        *,
        dataset: Dataset,
        rows: list[PreferenceRow],
        pair_id: Callable[[PreferenceRow], int | None],
        report: PreferenceImportReport,
        user,
        fmt: str,
    ) -> None:
        """Create the config and run if missing, then every new verdict, in both
        numberings (the presented `verdict_raw`, the original `verdict`). Inside the
        caller's transaction."""
        if self.config is None:
            # A placeholder that names the judge; it has no endpoint, so it cannot run.
            self.config = JudgeConfig.objects.create(
                workspace_id=dataset.workspace_id,
                name=self.name,
                base_url="",
                model="",
                created_by=user,
            )
        if self.run is None:
            now = timezone.now()
            name = PurePath(report.file).name
            self.run = JudgeRun.objects.create(
                workspace_id=dataset.workspace_id,
                config=self.config,
                dataset=dataset,
                name=f"{self.name}: imported verdicts ({name})"[:200],
                kind=JudgeRun.Kind.IMPORTED,
                status=JudgeRun.Status.COMPLETED,
                models_included=sorted(
                    {m for r in rows if r.verdicts for m in (r.model_1, r.model_2)}
                ),
                settings_snapshot={
                    "source": "import",
                    "content": "pairwise_verdicts",
                    "format": fmt,
                    "file": name,
                    "file_sha256": report.file_sha256,
                    "import_key": self.import_key,
                },
                total_calls=0,
                created_by=user,
                started_at=now,
                finished_at=now,
                source_note=clip(
                    f"pairwise verdicts imported from {name} "
                    f"(sha256 {report.file_sha256[:12]})",
                    limits.DESCRIPTION,
                ),
            )
        report.run_id = self.run.pk
        verdicts = {}
        for row in rows:
            pk = pair_id(row)
            for v in row.verdicts:
                if (pk, v.order) in self.stored or (pk, v.order) in verdicts:
                    continue
                if v.original:
                    raw, mapped = unmap_verdict(v.value, v.order), v.value
                else:
                    raw, mapped = v.value, map_verdict(v.value, v.order)
                verdicts[(pk, v.order)] = PairwiseVerdict(
                    run=self.run,
                    pair_id=pk,
                    order=v.order,
                    sample_index=0,
                    verdict_raw=raw,
                    verdict=mapped,
                )
        PairwiseVerdict.objects.bulk_create(list(verdicts.values()), batch_size=BATCH)


def imported_verdicts(
    *, judge: str, dataset: Dataset | None, import_key: str, workspace=None
) -> ImportedVerdicts:
    """The `VerdictWriterFactory` of `preferences_import`: finds the config named
    `judge` in the import's workspace (the dataset's; for a new dataset `workspace`,
    None: the default workspace) and the run an earlier import of the same content
    made (`import_key`), with the verdicts it holds, so that a repeated file adds
    none. Another workspace's config of that name is never used. Reads only."""
    target = ImportedVerdicts(name=judge, import_key=import_key)
    if dataset is not None:
        workspace_id = dataset.workspace_id
    else:
        workspace_id = (workspace or default_workspace()).pk
    target.config = JudgeConfig.objects.filter(
        name=judge, workspace_id=workspace_id
    ).first()
    if target.config is not None and dataset is not None:
        target.run = (
            JudgeRun.objects.filter(
                config=target.config,
                dataset=dataset,
                kind=JudgeRun.Kind.IMPORTED,
                settings_snapshot__import_key=import_key,
            )
            .order_by("id")
            .first()
        )
    if target.run is not None:
        target.stored = set(
            PairwiseVerdict.objects.filter(run=target.run).values_list(
                "pair_id", "order"
            )
        )
    return target
