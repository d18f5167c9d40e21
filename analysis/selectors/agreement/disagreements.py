"""The drill-down: items of one skill where a judge run and the humans disagree most."""

from __future__ import annotations

import numpy as np

from analysis.selectors.agreement.inputs import item_keys, load_inputs, scored_by_both
from analysis.selectors.agreement.sources import AgreementError, check_params
from annotation.models import Assignment, Dataset, HumanScore, Response
from annotation.selectors.exclusions import excluded_scores
from flaskapp import roles
from judging.models import JudgeScore


def _human_entries(scores: list[dict], raters: list[int]) -> list[dict]:
    """One item's human scores labelled for people (see `agreement_disagreements`)."""
    per_rater: dict[int, int] = {}
    for h in scores:
        rater = h["assignment__rater_id"]
        per_rater[rater] = per_rater.get(rater, 0) + 1
    out = []
    for h in scores:
        rater = h["assignment__rater_id"]
        label = f"rater {raters.index(rater) + 1}"
        if per_rater[rater] > 1:
            label += f" ({h['assignment__campaign__name']})"
        if h["synthetic"]:
            label += " (generated)"
        out.append({"rater": label, "score": h["score"], "rationale": h["rationale"]})
    return out


def agreement_disagreements(
    *,
    dataset: Dataset,
    campaign_ids: list[int],
    run_id: int,
    skill_key: str,
    slice_dim: str = "",
    slice_value: str = "",
    limit: int = 25,
) -> list[dict]:
    """The items of one skill where the run and the humans disagree most.

    Ordered by |judge score - human mean| (largest first), then by response id.
    Raters are shown as "rater 1", "rater 2", ... (numbered by account, stable
    within the answer); a rater who scored the item in several of the campaigns is
    listed once per campaign, the campaign's name added so no two entries read
    alike, and a synthetic account's entry says "(generated)". Raises
    AgreementError naming a bad parameter.
    """
    campaign_ids = sorted({int(c) for c in campaign_ids or []})
    check_params(dataset, campaign_ids, [int(run_id)], None, False, 0)
    if not campaign_ids:
        raise AgreementError("campaign: choose a human campaign")
    if not 1 <= limit <= 500:
        raise AgreementError(f"limit: must be between 1 and 500, not {limit}")
    inp, _ = load_inputs(dataset, campaign_ids, [int(run_id)], slice_dim, slice_value)
    if skill_key not in inp.skills.keys:
        raise AgreementError(f"skill: unknown skill {skill_key!r}")
    _, n_sk = item_keys(inp.skills)
    want = inp.skills.keys.index(skill_key)
    both, mean, judge = scored_by_both(inp, int(run_id))
    of_skill = both % n_sk == want
    both, mean, judge = both[of_skill], mean[of_skill], judge[of_skill]
    diff = judge - mean
    order = np.lexsort((both, -np.abs(diff)))[:limit]
    response_ids = [int(both[i] // n_sk) for i in order]
    if not response_ids:
        return []
    skill_ids = [sid for sid, idx in inp.skills.id_to_index.items() if idx == want]
    responses = {
        r.pk: r
        for r in Response.objects.filter(pk__in=response_ids).select_related(
            "instruction"
        )
    }
    rationales: dict[int, str] = {}
    for s in (
        JudgeScore.objects.filter(
            run_id=run_id, response_id__in=response_ids, skill_id__in=skill_ids
        )
        .order_by("response_id", "sample_index")
        .values("response_id", "rationale")
    ):
        rationales.setdefault(s["response_id"], s["rationale"])
    humans: dict[int, list[dict]] = {}
    for s in (
        HumanScore.objects.filter(
            ~excluded_scores(),  # raters a researcher excluded
            assignment__campaign_id__in=campaign_ids,
            assignment__status=Assignment.Status.SUBMITTED,
            assignment__gold=False,
            assignment__response_id__in=response_ids,
            skill_id__in=skill_ids,
        )
        .annotate(synthetic=roles.synthetic_rater("assignment__rater_id"))
        .order_by("assignment__rater_id", "assignment__campaign_id", "pk")
        .values(
            "assignment__response_id",
            "assignment__rater_id",
            "assignment__campaign__name",
            "synthetic",
            "score",
            "rationale",
        )
    ):
        humans.setdefault(s["assignment__response_id"], []).append(s)
    out = []
    for i, rid in zip(order, response_ids, strict=True):
        r = responses[rid]
        raters = sorted({h["assignment__rater_id"] for h in humans.get(rid, [])})
        out.append(
            {
                "response_id": rid,
                "instruction_id": r.instruction_id,
                "instruction_external_id": r.instruction.external_id,
                "instruction_text": r.instruction.text,
                "model": r.model_name,
                "response_text": r.text,
                "judge_score": int(judge[i]),
                "judge_rationale": rationales.get(rid, ""),
                "human_mean": float(mean[i]),
                "difference": float(diff[i]),
                "human": _human_entries(humans.get(rid, []), raters),
            }
        )
    return out
