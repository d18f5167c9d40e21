"""The pairwise part of the judge engine: rendering a pairwise call's prompt, reading
its verdict, and the `PairwiseVerdict` rows a batch of results writes.

The driver (`judging.services.execution`) claims, sends, caches, limits, retries and
flushes pairwise calls exactly as pointwise ones; only these three steps differ.

Contract of a pairwise call (kind "pairwise" runs, see `judge_run_create_pairwise`):

- a call shows `pair.response_1` as A in order "ab" and `pair.response_2` as A in
  order "ba"; with a probe, `call.parsed["probe"]` (written at creation) holds the cue
  sentence and, for bandwagon probes, the position it names (`cue_target`, "A"/"B") and
  that position in the original numbering (`cue_target_original`, "1"/"2");
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

from annotation import labels as pairwise
from judging import parsing, prompts
from judging.models import JudgeCall, JudgeConfig, JudgeRun, PairwiseVerdict

PAIRWISE_REASK = (
    "Your previous answer could not be read ({reason}). Answer again in the requested "
    "format and end with the verdict."
)


def pairwise_settings(run: JudgeRun, template) -> tuple[str, bool]:
    """(layout, allow_tie) of a pairwise run: the layout of the config's prompt
    template ("flask" without one), and the run's frozen `allow_tie` (default True)."""
    snapshot = run.settings_snapshot or {}
    layout = snapshot.get("layout") or getattr(template, "layout", "") or "flask"
    return layout, bool(snapshot.get("allow_tie", True))


def load_pairwise_contexts(
    run: JudgeRun, token: str, ids: list[int], template, make, cache_key
):
    """Render every claimed pairwise call; `make(**fields)` builds a `CallContext` and
    `cache_key(snapshot, messages, sample_index, response_format)` keys the cache.

    A fixed number of queries per batch (the calls with their pair and both
    responses in one query).
    """
    snapshot = run.settings_snapshot
    layout, allow_tie = pairwise_settings(run, template)
    response_format = (
        prompts.pairwise_response_format(allow_tie)
        if snapshot["output_mode"] == JudgeConfig.OutputMode.JSON_SCHEMA
        else None
    )
    calls = list(
        JudgeCall.objects.filter(pk__in=ids)
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
        )
        out.append(
            make(
                call_id=call.pk,
                token=token,
                response_id=None,
                sample_index=call.sample_index,
                skills=[],
                messages=messages,
                cache_key=cache_key(
                    snapshot, messages, call.sample_index, response_format
                ),
                response_format=response_format,
                kind=JudgeRun.Kind.PAIRWISE,
                instruction_id=pair.instruction_id,
                pair_id=pair.pk,
                order=call.order,
                allow_tie=allow_tie,
                keep={"probe": probe} if probe else {},
            )
        )
    return out


def store_pairwise_parse(ctx, result, text: str) -> None:
    """Read the verdict of `text` into `result`; raises `parsing.ParseError`."""
    raw, rationale = parsing.parse_pairwise(text, allow_tie=ctx.allow_tie)
    result.parsed = {
        **ctx.keep,
        "verdict_raw": raw,
        "verdict": pairwise.map_verdict(raw, ctx.order),
    }
    result.rationale = rationale


def pairwise_verdict_rows(run: JudgeRun, results) -> list[PairwiseVerdict]:
    """One row per succeeded pairwise result of the batch (written by the flush)."""
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
        if r.kind == JudgeRun.Kind.PAIRWISE
        and r.status == JudgeCall.Status.SUCCEEDED
        and r.parsed
    ]
