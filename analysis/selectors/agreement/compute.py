"""agreement_compute: every agreement statistic of the chosen runs, cached."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import replace

import numpy as np

from analysis import statistics
from analysis.selectors.agreement.cache import (
    cache_key,
    cache_result,
    cached_responses,
    cached_result,
    gc_paused,
    inputs_fingerprint,
)
from analysis.selectors.agreement.expected import (
    JUDGE_SCORES,
    expected_by_item,
    skill_item_keys,
    use_expected_scores,
)
from analysis.selectors.agreement.expected import NOTE as EXPECTED_NOTE
from analysis.selectors.agreement.inputs import (
    TEST_LOCKED,
    group_items,
    human_side,
    item_keys,
    judge_by_item,
    judge_by_item_counted,
    load_inputs,
    one_rater,
)
from analysis.selectors.agreement.profiles import model_profiles, set_profiles
from analysis.selectors.agreement.references import (
    adjudicated_side,
    one_value_side,
    settled_side,
    value_rows,
)
from analysis.selectors.agreement.result import (
    AgreementResult,
    CampaignRef,
    DatasetRef,
    Defaults,
    Reference,
    ReferenceMean,
    RunRef,
    SliceRef,
)
from analysis.selectors.agreement.rows import (
    NO_ITEMS,
    abilities_present,
    ceiling_rows,
    judge_cell,
    mixed_scale_note,
    mixed_scale_rows,
    rows_skeleton,
)
from analysis.selectors.agreement.sources import (
    DEFAULTS_RULE,
    AgreementError,
    agreement_defaults,
    check_params,
    run_label,
)
from analysis.stats.blas import one_blas_thread
from analysis.stats.report import GroupItems, agreement_table
from annotation.models import Campaign, Dataset
from annotation.selectors.exclusions import exclusions_note

# Below this many items a computation runs in one thread: the statistics of small
# groups are many short numpy calls, and two threads contending for the GIL were
# slower (bench/pages_all.py slice switch, 4,500 items: 412 ms with 2 threads, 372
# with 1); above it the heavy loops release the GIL (bench/agreement_dashboard.py,
# 100,800 items: 1.68 s with 2 threads, 1.89 s with 1).
THREADS_FROM_ITEMS = 20_000


def _workers(items: int) -> int:
    """Threads for the statistics of `items` items: 1 below THREADS_FROM_ITEMS,
    otherwise settings.AGREEMENT_WORKERS (default: CPUs, at most 4)."""
    from django.conf import settings

    if items < THREADS_FROM_ITEMS:
        return 1
    return int(getattr(settings, "AGREEMENT_WORKERS", 0) or min(os.cpu_count() or 1, 4))


# The human reference of a comparison: the raters' scores as they are (their mean
# for the correlations, their rounded median for QWK and exact agreement), one score
# per item for every statistic (the rounded mean, the rounded median), a reviewer's
# settled value in place of theirs where a dispute was adjudicated, or one latent
# score per item from a rater model that weighs raters by competence.
HUMAN_REFERENCES = ("raters", "mean", "median", "adjudicated", "latent")
LATENT_METHOD = "dawid_skene"  # the rater model of the "latent" reference


def _latent(campaign_ids: list[int]) -> dict[tuple[int, int], int]:
    """The campaigns' latent human scores (`LATENT_METHOD`, humans alone; cached by
    `analysis.selectors.competence`)."""
    from analysis.selectors.competence import latent_human_scores

    out: dict[tuple[int, int], int] = {}
    for campaign in Campaign.objects.filter(pk__in=campaign_ids).select_related(
        "dataset"
    ):
        out.update(latent_human_scores(campaign=campaign, method=LATENT_METHOD))
    return out


@gc_paused()  # the result is many small, lasting objects: see gc_paused
def agreement_compute(  # noqa: C901, PLR0913 - the one entry point of the dashboard, CLI and API; each option (slices, references, exclusions, cache) is one guarded step
    *,
    dataset: Dataset,
    campaign_ids: list[int] | None = None,
    run_ids: list[int] | None = None,
    reference_run_id: int | None = None,
    retest: bool = False,
    human_reference: str = "raters",
    slice_dim: str = "",
    slice_value: str = "",
    n_boot: int = 1000,
    seed: int = 0,
    use_cache: bool = True,
    cached_only: bool = False,
    test_look=None,
    judge_score: str = "integer",
) -> AgreementResult | None:
    """Every agreement statistic, per skill, ability and overall, for each run, as
    an :class:`AgreementResult` (its JSON, :meth:`AgreementResult.to_dict`, is the
    API's body; shape in README "Agreement"). ``row.human`` is
    the reference raters' ceiling, computed once on ``rows.CEILING_ITEMS`` (whatever
    runs are shown, in whatever order); ``row.judge(id).human`` the raters'
    statistics on the items that run shares with them (its own n). Raises
    AgreementError (message names the parameter) for unknown campaigns/runs/slices.
    No `campaign_ids` (with humans as the reference) or no `run_ids`: the defaults
    of :func:`agreement_defaults`; ``result.defaults`` says which were used.
    `human_reference` (`HUMAN_REFERENCES`): "raters" (their mean for correlations,
    their rounded median for QWK and exact); "mean" / "median", one rounded score
    per item for every statistic; "adjudicated", the raters'
    scores where a reviewer settled a dispute replaced by the settled value
    (`inputs.adjudicated_side`); "latent", each item's latent score from a
    Dawid-Skene fit of the raters (`analysis.selectors.competence`). Either way the
    ceiling stays the raters' own agreement.
    `cached_only`: the cached result or None, never a computation (the parameters
    are checked all the same: an AgreementError as for a computation); what the
    dashboard and the API ask first (`analysis.services.agreement`).
    Queries: a fixed number (defaults 2, fingerprint 4, then responses, human
    scores, judge scores, skills), whatever the data size; the defaults and the
    fingerprint only when the cache has the result; no responses query when the
    dataset's responses are cached (:func:`cache.cached_responses`).
    The "split" slice ("dev" / "test" of the dataset's development / test split):
    the test part needs `test_look`, the `TestSplitLook` the caller logged first
    (judging.services.splits), even when the result is cached.
    `judge_score` (`expected.JUDGE_SCORES`): "integer", or "expected": the
    correlations on the judge's probability-weighted score, QWK and exact agreement
    on its integer (`analysis.selectors.agreement.expected`; the result's
    ``judge_score`` part says so); one more query per run.
    """
    if judge_score not in JUDGE_SCORES:
        raise AgreementError(
            f"judge_score: {str(judge_score)[:40]!r} is not one of "
            f"{', '.join(JUDGE_SCORES)}"
        )
    if human_reference not in HUMAN_REFERENCES:
        raise AgreementError(
            f"human_reference: {str(human_reference)[:40]!r} is not one of "
            f"{', '.join(HUMAN_REFERENCES)}"
        )
    campaign_ids = sorted({int(c) for c in campaign_ids or []})
    run_ids = list(dict.fromkeys(int(r) for r in run_ids or []))
    reference_run_id = int(reference_run_id) if reference_run_id else None
    defaulted = {
        "campaigns": not campaign_ids and not (reference_run_id or retest),
        "runs": not run_ids,
    }
    if defaulted["campaigns"] or defaulted["runs"]:
        defaults = agreement_defaults(dataset=dataset, exclude_run_id=reference_run_id)
        if defaulted["campaigns"]:
            campaign_ids = defaults.campaign_ids
        if defaulted["runs"]:
            run_ids = defaults.run_ids
    runs = check_params(
        dataset, campaign_ids, run_ids, reference_run_id, retest, n_boot, seed
    )
    if (slice_dim, slice_value) == ("split", "test") and test_look is None:
        raise AgreementError(TEST_LOCKED)  # before the cache: a look is logged
    if reference_run_id or retest:
        campaign_ids_used: list[int] = []
    else:
        campaign_ids_used = campaign_ids
    all_runs = [*run_ids, *([reference_run_id] if reference_run_id else [])]
    params = {
        "dataset": dataset.pk,
        "campaigns": campaign_ids_used,
        "runs": run_ids,
        "reference_run": reference_run_id,
        "retest": bool(retest),
        "human_reference": human_reference,
        "slice": [slice_dim, slice_value],
        "n_boot": n_boot,
        "seed": seed,
        "defaulted": defaulted,
        # A statistic added to (or removed from) the registry changes every result.
        "statistics": statistics.signature(),
    }
    if judge_score != "integer":  # the integer's key stays what it always was
        params["judge_score"] = judge_score
    key = responses = None
    if use_cache:
        fingerprint = inputs_fingerprint(dataset, campaign_ids_used, all_runs)
        key = cache_key(params, fingerprint)
        hit = cached_result(key)
        if hit is not None or cached_only:
            return hit
        responses = cached_responses(dataset, fingerprint)
    # Thousands of small products below: BLAS on one thread (analysis.stats.blas;
    # the statistics' own threads parallelise whole groups).
    with one_blas_thread():
        inp, slice_label = load_inputs(
            dataset,
            campaign_ids_used,
            all_runs,
            slice_dim,
            slice_value,
            responses,
            test_look,
        )
        key_fn, _ = item_keys(inp.skills)

        reference_label = "human raters"
        if reference_run_id:
            reference_label = f"judge run {run_label(runs[reference_run_id])}"
        elif retest:
            reference_label = "the same run's second sample (test-retest)"

        # The reference raters' side: the humans, or a reference run as one rater; the
        # same for every compared run (test-retest has a reference per run, no ceiling).
        if reference_run_id:
            ref_side = one_rater(
                *judge_by_item(inp.judge, reference_run_id, key_fn), inp.skills.width
            )
        elif retest:
            ref_side = one_rater(
                np.zeros(0, np.int64), np.zeros(0, np.int64), inp.skills.width
            )
        else:
            ref_side = human_side(inp)
        # The ceiling is always the raters' own agreement; the judges are compared with
        # the chosen human reference.
        ceiling_side = ref_side
        humans = "raters" if reference_run_id or retest else human_reference
        if humans in ("mean", "median"):
            ref_side = one_value_side(ref_side, humans)
            reference_label = f"the human raters' {humans} per item, rounded half up"
        elif humans == "adjudicated":
            ref_side = adjudicated_side(inp, campaign_ids_used)
            reference_label = (
                "human raters, adjudicated where a reviewer settled a dispute"
            )
        elif humans == "latent":
            ref_side = settled_side(
                inp, value_rows(_latent(campaign_ids_used), inp.low, inp.high)
            )
            reference_label = (
                "the human raters' latent scores (Dawid-Skene: raters weighed by "
                "their competence)"
            )

        per_run: dict[int, dict[str, GroupItems]] = {}
        per_run_keys: dict[int, dict] = {}
        run_scores: dict[int, tuple] = {}
        for rid in run_ids:
            sample = 0 if retest else None
            j_keys, j_scores, j_na = judge_by_item_counted(
                inp.judge, rid, key_fn, sample
            )
            run_scores[rid] = (j_keys, j_scores)
            if retest:
                r_keys, r_scores = judge_by_item(inp.judge, rid, key_fn, sample=1)
            if retest:
                h_keys, h_counts, h_na = one_rater(r_keys, r_scores, inp.skills.width)
            else:
                h_keys, h_counts, h_na = ref_side
            per_run[rid] = group_items(
                inp, h_keys, h_counts, h_na, j_keys, j_scores, j_na
            )
            if judge_score == "expected":
                per_run_keys[rid] = skill_item_keys(
                    h_keys, j_keys, len(inp.skills.keys), inp.skills.keys
                )

        present = set().union(*(set(g) for g in per_run.values())) if per_run else set()
        # The pooled rows: each ability or rubric group (criteria in none have no row).
        abilities = {
            a: ks for a, ks in abilities_present(inp.skills, present).items() if a
        }
        rows = rows_skeleton(inp.skills, present)
        by_key = {r.key: r for r in rows}
        # The model profiles only read the rows' skeleton: on large inputs they are
        # computed in a thread of their own meanwhile (their binomial draws release the
        # GIL; the result is the same either way).
        profiles_args = (inp, ref_side[:2], run_scores, rows, n_boot, seed)
        background = ThreadPoolExecutor(1) if _workers(len(ref_side[0])) > 1 else None
        with background or nullcontext():
            profiles = (
                background.submit(model_profiles, *profiles_args)
                if background
                else None
            )
            ceiling = ceiling_rows(
                inp, ceiling_side, abilities, n_boot, seed, _workers(len(ref_side[0]))
            )
            for r in rows:
                r.human = ceiling.get(r.key) or r.human  # the skeleton's: no items
            for rid, groups in per_run.items():
                table = agreement_table(
                    groups,
                    abilities,
                    n_boot=n_boot,
                    seed=seed,
                    workers=_workers(sum(len(g.judge) for g in groups.values())),
                )
                if judge_score == "expected":
                    use_expected_scores(
                        table=table,
                        groups=groups,
                        item_keys=per_run_keys[rid],
                        abilities=abilities,
                        expected=expected_by_item(
                            rid, key_fn, sorted(inp.skills.id_to_index)
                        ),
                        n_boot=n_boot,
                        seed=seed,
                    )
                pooled = {  # the items of pooled rows on one scale (their scatter)
                    label: GroupItems.concat([groups[k] for k in ks])
                    for label, ks in [
                        *((f"ability:{a}", ks) for a, ks in abilities.items()),
                        ("overall", list(groups)),
                    ]
                    if ks and label in table
                }
                for label, rep in table.items():
                    row = by_key.get(label)
                    if row is None:
                        continue
                    items = groups.get(row.skill) if row.skill else pooled.get(label)
                    row.judges[str(rid)] = judge_cell(rep, items, inp.resp.model_names)
        mixed_scale_rows(rows, run_ids)
        set_profiles(
            rows, profiles.result() if profiles else model_profiles(*profiles_args)
        )
        if not (reference_run_id or retest):
            for r in rows:  # the humans' model means: every item they scored, with CIs
                r.human = replace(
                    r.human,
                    models=tuple(
                        ReferenceMean(e.model, e.reference.n, e.reference)
                        for e in r.profiles.all
                    ),
                )
        for r in rows:
            # A row no source scored (an empty slice): say so once, on the row. A pooled
            # row over criteria on different scales has no agreement figure: say why.
            empty = not r.human.n_items and not any(j.items for j in r.judges.values())
            r.note = mixed_scale_note(r) or (NO_ITEMS if empty else "")

        result = AgreementResult(
            dataset=DatasetRef(dataset.pk, dataset.name),
            n_boot=n_boot,
            seed=seed,
            slice=SliceRef(slice_dim, slice_value, slice_label),
            reference=Reference(
                "run" if reference_run_id else "retest" if retest else "humans",
                reference_label,
                humans,
            ),
            campaigns=tuple(
                CampaignRef(c.pk, c.name)
                for c in Campaign.objects.filter(pk__in=campaign_ids_used).order_by(
                    "pk"
                )
            ),
            runs=tuple(RunRef(rid, run_label(runs[rid])) for rid in run_ids),
            # The raters left out of these figures (open exclusions), said on the page.
            exclusions=exclusions_note(campaign_ids_used),
            defaults=Defaults(defaulted["campaigns"], defaulted["runs"], DEFAULTS_RULE),
            models=tuple(inp.resp.model_names),
            rows=rows,
            extra=(
                {"judge_score": {"kind": judge_score, "note": EXPECTED_NOTE}}
                if judge_score == "expected"
                else {}
            ),
        )
        if key is not None:
            cache_result(key, result)
        return result
