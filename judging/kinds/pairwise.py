"""Pairwise runs: the dataset's preference pairs, each judged in both orders.

Pairs: all of the dataset's, or those whose category is in `categories`, or a seeded
random `sample` of N of those. Per pair and judge sample, TWO calls: order "ab"
(response_1 shown as A) and "ba" (response_2 shown as A); each call has `pair`,
`order` and `instruction` set and `response` null.

`allow_tie` (frozen in the settings snapshot) says whether the judge may answer
"tie"; the prompt layout is the config's template layout (frozen too). `probe`
"bandwagon" injects a cue naming a position (default `judging.probes.BANDWAGON_CUE`;
a custom `cue` must contain "{target}") and "attention" an irrelevant sentence
(default one of `judging.probes.ATTENTION_SENTENCES`, or `cue`); what each call was
shown is recorded in `call.parsed["probe"]` and the run's `probe_settings`.

Contract of a pairwise call:

- with a probe, `call.parsed["probe"]` (written at creation) holds the cue sentence
  and, for bandwagon probes, the position it names (`cue_target`, "A"/"B") and that
  position in the original numbering (`cue_target_original`, "1"/"2");
- a succeeded call stores `parsed = {"verdict_raw", "verdict", "format", "probe"?}`
  and exactly one `PairwiseVerdict` (run, pair, order, sample) with `verdict_raw` as
  presented and `verdict` mapped back by `annotation.labels.map_verdict`;
- a failed call (transport error, or an answer that still did not parse after the
  re-asks, e.g. a "tie" when ties are not allowed) stores NO verdict row: its reason is
  in `call.error` / `error_kind` and its raw output is kept, as for pointwise calls
  (which store no scores). `judge_run_retry_failed` puts it back to pending; a later
  success writes the row. `PairwiseVerdict.verdict == ""` is therefore only found in
  imported runs whose source had no usable verdict.
"""

from __future__ import annotations

from django.db.models import Sum
from django.db.models.functions import Length

from annotation import labels as pairwise
from annotation.models import PreferencePair
from flaskapp.bounds import PAIR_SAMPLE, SEED
from flaskapp.errors import DomainError, Problem
from judging import parsing, prompts
from judging.kinds import (
    CallContext,
    CallResult,
    Claim,
    RunOptions,
    Selection,
    Sizes,
    TaskKind,
    cache_friendly,
    reask_start,
)
from judging.models import (
    JudgeCall,
    JudgeConfig,
    JudgeRun,
    PairwiseVerdict,
    PromptTemplate,
)
from judging.probes import PAIR_ORDERS, probe_cues, probe_record
from judging.selectors.pairwise import pairwise_verdict_counts
from judging.selectors.runs import run_pairs

# Estimate: the prompt around the two answers; a short comparison and the verdict.
PAIRWISE_PROMPT_CHARS = 1200
PAIRWISE_OUTPUT_TOKENS = 150


def pairwise_settings(run: JudgeRun, template) -> tuple[str, bool]:
    """(layout, allow_tie) of a pairwise run: the layout of the config's prompt
    template ("flask" without one), and the run's frozen `allow_tie` (default True)."""
    snapshot = run.settings_snapshot or {}
    layout = snapshot.get("layout") or getattr(template, "layout", "") or "flask"
    return layout, bool(snapshot.get("allow_tie", True))


class PairwiseKind(TaskKind):
    key = JudgeRun.Kind.PAIRWISE.value
    label = JudgeRun.Kind.PAIRWISE.label
    form_label = "Compare preference pairs in both orders (A/B and B/A)"
    prompt_kind = PromptTemplate.Kind.PAIRWISE.value
    training_tasks = ("pairwise",)
    takes = frozenset({"categories", "sample", "seed", "allow_tie", "probe", "cue"})
    baseline_refusal = "a baseline judge cannot compare two answers"
    results_flags = {"is_pairwise": True}
    templates = {
        "targets": "judging/kinds/pairwise_targets.html",
        "estimate": "judging/kinds/pairwise_estimate.html",
    }

    def problems(self, *, config, dataset, options: RunOptions) -> list[Problem]:
        problems: list[Problem] = []
        probe, cue = options.probe, options.cue
        if probe not in JudgeRun.Probe.values:
            problems.append(
                Problem(
                    f"unknown probe {probe!r}; use bandwagon or attention",
                    field="probe",
                )
            )
        if probe == JudgeRun.Probe.BANDWAGON and cue and "{target}" not in cue:
            problems.append(
                Problem("a bandwagon cue must contain {target} (A or B)", field="cue")
            )
        if cue and not probe:
            problems.append(Problem("a cue needs a probe", field="cue"))
        if problem := PAIR_SAMPLE.problem(options.sample, "sample", optional=True):
            problems.append(problem)
        if problem := SEED.problem(options.seed, "seed"):
            problems.append(problem)
        categories = self._categories(options)
        if categories:
            known = set(
                PreferencePair.objects.filter(
                    dataset=dataset, category__in=categories
                ).values_list("category", flat=True)
            )
            unknown = [c for c in categories if c not in known]
            if unknown:
                problems.append(
                    Problem(
                        f"no pairs of dataset {dataset.name!r} in: "
                        f"{', '.join(unknown)}",
                        field="categories",
                    )
                )
        return problems

    @staticmethod
    def _categories(options: RunOptions) -> list[str]:
        return sorted({c for c in (options.categories or []) if c is not None})

    def select(self, *, dataset, options: RunOptions, examples: dict, config=None):
        rows = run_pairs(
            dataset=dataset,
            categories=self._categories(options),
            sample=options.sample,
            seed=options.seed,
        )
        pair_ids = [pid for pid, _ in rows]
        cues, probe_settings = probe_cues(
            options.probe, pair_ids, options.seed, options.cue
        )
        return Selection(
            items=PreferencePair.objects.filter(pk__in=pair_ids),
            targets=rows,
            extra={"cues": cues, "probe_settings": probe_settings},
        )

    def nothing(self, *, dataset, options) -> DomainError:
        return DomainError(
            "nothing to judge",
            [
                Problem(
                    f"dataset {dataset.name!r} has no preference pairs"
                    + (" in these categories" if options.categories else ""),
                    field="dataset",
                )
            ],
        )

    def sizes(self, *, config, selection: Selection, extra_chars: int = 0) -> Sizes:
        """Two calls (both orders) per pair and sample."""
        pairs = selection.items
        n = pairs.count()
        sums = pairs.aggregate(
            one_chars=Sum(Length("response_1__text")),
            two_chars=Sum(Length("response_2__text")),
            instruction_chars=Sum(Length("instruction__text")),
        )
        chars = sum(v or 0 for v in sums.values()) + n * PAIRWISE_PROMPT_CHARS
        return Sizes(
            calls=2 * n * config.samples,
            items=n,
            input_chars=chars,
            output_tokens=PAIRWISE_OUTPUT_TOKENS,
        )

    def default_name(self, options: RunOptions) -> str:
        return "pairwise" + (f", {options.probe}" if options.probe else "")

    def snapshot_extra(self, *, config, options: RunOptions) -> dict:
        return {
            "allow_tie": bool(options.allow_tie),
            "layout": config.prompt.layout if config.prompt else "flask",
            "pairs": {
                "categories": self._categories(options),
                "sample": options.sample,
                "seed": options.seed,
            },
        }

    def run_fields(self, *, options: RunOptions, selection: Selection) -> dict:
        return {
            "probe": options.probe,
            "probe_settings": selection.extra["probe_settings"],
        }

    def calls(self, *, config, options, selection: Selection):
        cues = selection.extra["cues"]
        return (
            {
                "pair_id": pid,
                "instruction_id": instruction_id,
                "order": order,
                "sample_index": s,
                "parsed": probe_record(cues.get(pid), order),
            }
            for pid, instruction_id in selection.targets
            for s in range(config.samples)
            for order in PAIR_ORDERS
        )

    def load_contexts(self, claim: Claim) -> list[CallContext]:
        """Render every claimed call: a fixed number of queries per batch (the calls
        with their pair and both responses in one query)."""
        snapshot = claim.snapshot
        layout, allow_tie = pairwise_settings(claim.run, claim.template)
        response_format = (
            prompts.pairwise_response_format(allow_tie)
            if snapshot["output_mode"] == JudgeConfig.OutputMode.JSON_SCHEMA
            else None
        )
        calls = list(
            JudgeCall.objects.filter(pk__in=claim.ids)
            .select_related("pair__instruction", "pair__response_1", "pair__response_2")
            .order_by("pk")
        )
        out = []
        for call in calls:
            pair = call.pair
            first, second = pair.response_1.text, pair.response_2.text
            if call.order == "ba":
                first, second = second, first
            probe = (call.parsed or {}).get("probe") or None
            messages = prompts.render_pairwise(
                pair.instruction.text,
                first,
                second,
                allow_tie=allow_tie,
                layout=layout,
                cue=probe.get("cue") if probe else None,
                output_mode=snapshot["output_mode"],
                cache_friendly=cache_friendly(snapshot),
            )
            out.append(
                CallContext(
                    call_id=call.pk,
                    token=claim.token,
                    response_id=None,
                    sample_index=call.sample_index,
                    skills=[],
                    messages=messages,
                    cache_key=claim.cache_key(
                        snapshot, messages, call.sample_index, response_format
                    ),
                    response_format=response_format,
                    kind=self.key,
                    instruction_id=pair.instruction_id,
                    pair_id=pair.pk,
                    order=call.order,
                    allow_tie=allow_tie,
                    keep={"probe": probe} if probe else {},
                )
            )
        return out

    def parse(self, ctx: CallContext, result: CallResult, text: str) -> None:
        raw, rationale = parsing.parse_pairwise(text, allow_tie=ctx.allow_tie)
        result.parsed = {
            **ctx.keep,
            "verdict_raw": raw,
            "verdict": pairwise.map_verdict(raw, ctx.order),
        }
        result.rationale = rationale

    def reask(self, reason: str, skills: list | None = None) -> str:
        return reask_start(reason) + (
            "Answer again in the requested format and end with the verdict."
        )

    def result_rows(self, run, results) -> list[PairwiseVerdict]:
        """One row per succeeded result of the batch."""
        return [
            PairwiseVerdict(
                run_id=run.pk,
                pair_id=r.pair_id,
                order=r.order,
                sample_index=r.sample_index,
                verdict_raw=r.parsed["verdict_raw"],
                verdict=r.parsed["verdict"],
                rationale=r.rationale,
                call_id=r.call_id,
            )
            for r in results
            if r.parsed
        ]

    def page_context(self, run) -> dict:
        return {"verdict_counts": pairwise_verdict_counts(run=run)}

    def results_queryset(self, calls):
        return calls.select_related("pair__response_1", "pair__response_2")

    def wait_summary(self, run) -> str:
        counts = pairwise_verdict_counts(run=run)
        return "; verdicts " + ", ".join(
            f"{order} {'/'.join(f'{k}:{v:,}' for k, v in row.items())}"
            for order, row in counts["by_order"].items()
        )
