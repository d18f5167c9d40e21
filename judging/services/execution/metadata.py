"""The metadata and checklist part of the judge engine: rendering an annotation
call's prompt and reading its suggestion. One call per instruction (no response); the
driver (`judging.services.execution`) does the rest as for any call, and its flush
writes one `MetadataSuggestion` per succeeded call from `parsed["suggestion"]`."""

from __future__ import annotations

from annotation.importers.base import normalise_name
from annotation.models import Domain
from judging import parsing, prompts
from judging.models import JudgeCall, JudgeRun


def load_annotation_contexts(
    run: JudgeRun, token: str, ids: list[int], all_skills, specs, make, cache_key
) -> list:
    """Render every claimed metadata/checklist call; `make(**fields)` builds a
    `CallContext` and `cache_key(snapshot, messages, sample_index, response_format)`
    keys the cache. `specs` are the rubric's skills as `prompts.SkillSpec`s."""
    snapshot = run.settings_snapshot
    calls = list(
        JudgeCall.objects.filter(pk__in=ids)
        .select_related("instruction")
        .order_by("pk")
    )
    out = []
    for call in calls:
        instruction = call.instruction
        if run.kind == JudgeRun.Kind.METADATA:
            messages = prompts.render_metadata_annotation(
                instruction.text,
                domains=[label for _, label in Domain.choices],
                skills=list(specs),
            )
        else:
            messages = prompts.render_checklist(
                instruction.text, instruction.reference_answer, list(specs)
            )
        out.append(
            make(
                call_id=call.pk,
                token=token,
                response_id=None,
                sample_index=call.sample_index,
                skills=all_skills,
                messages=messages,
                cache_key=cache_key(snapshot, messages, call.sample_index, None),
                kind=run.kind,
                instruction_id=instruction.pk,
            )
        )
    return out


def store_annotation_parse(ctx, result, text: str, skill_keys: list[str]) -> None:
    """Read a metadata or checklist suggestion of `text` into `result.parsed`;
    raises `parsing.ParseError`."""
    if ctx.kind == JudgeRun.Kind.METADATA:
        labels = {normalise_name(label): key for key, label in Domain.choices}
        labels.update({normalise_name(key): key for key, _ in Domain.choices})
        meta = parsing.parse_metadata(
            text, domains=[lb for _, lb in Domain.choices], skill_keys=skill_keys
        )
        domains = [
            labels[normalise_name(d)]
            for d in meta.get("domains", [])
            if normalise_name(d) in labels
        ][:2]
        result.parsed = {
            "suggestion": {
                "domains": domains,
                "difficulty": meta.get("difficulty"),
                "skills": list(meta.get("skills", []))[:3],
            }
        }
    else:
        items = parsing.parse_checklist(text, skill_keys=skill_keys)
        result.parsed = {"suggestion": {"checklist": items}}
