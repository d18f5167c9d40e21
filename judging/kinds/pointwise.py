"""Pointwise runs: each response scored criterion by criterion (FLASK), on any rubric.

One call per response and sample. Every criterion of the dataset's rubric, whatever
its scale or labels (`annotation.scales`), is judged on its own values: a rubric whose
criteria are all categorical makes what the pages call a classification run (FLAMe's
classification task), so this kind feeds both the "pointwise" and the
"classification" examples of the training export. Prompt: the config's template in
the FLASK layout (`prompts.render_pointwise`) or FLAMe's text-to-text layout
(`prompts.render_pointwise_flame`), the instruction's skills (else the rubric's),
its checklist and the run's few-shot examples; a strict JSON schema of each skill's
values under output mode "json_schema". A succeeded call writes one `JudgeScore` per
(response, skill, sample). Baseline judges (no prompt) score it too.

`ResponseKind` is the part every kind with one call per response shares (the
critique kind builds on it): the options, choosing the responses and the estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet, Sum
from django.db.models.functions import Length

from annotation.models import InstructionSkill, Response, Skill
from flaskapp.bounds import INSTRUCTION_LIMIT, MAX_CALLS
from flaskapp.errors import DomainError, Problem
from judging import logprobs, parsing, prompts
from judging.fewshot import example_response_ids
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
from judging.models import JudgeCall, JudgeConfig, JudgeRun, JudgeScore, PromptTemplate
from judging.selectors.fewshot import few_shot_prompt_examples
from judging.selectors.runs import run_responses

# Estimate: the rubric of each scored skill (criteria and anchors) and a feedback
# paragraph with the score per skill; FLASK scores three skills per instruction.
SKILLS_PER_RESPONSE = 3
RUBRIC_CHARS_PER_SKILL = 900
OUTPUT_TOKENS_PER_SKILL = 90
DEFAULT_TEMPLATE_CHARS = 1500  # a config without a template (the built-in prompt)
# The cache-friendly layout's per-call part around the item (which criteria, the
# reply's shape, headings): measured on FLASK's prompts, about 300 characters.
ITEM_PART_CHARS = 300


def response_chars(config: JudgeConfig, responses: QuerySet[Response]) -> int:
    """The characters of the responses, their requests and (when the config sends
    them) the reference answers."""
    sums = responses.aggregate(
        # Aliases must not shadow the model's own fields (`instruction`).
        response_chars=Sum(Length("text")),
        instruction_chars=Sum(Length("instruction__text")),
        reference_chars=Sum(Length("instruction__reference_answer")),
    )
    chars = (sums["response_chars"] or 0) + (sums["instruction_chars"] or 0)
    if config.include_reference:
        chars += sums["reference_chars"] or 0
    return chars


def shared_prefix_chars(config: JudgeConfig, responses: QuerySet[Response]) -> int:
    """The characters every pointwise call of a run of `config` over `responses`
    shares (`prompts.cache_friendly_prefix` over the dataset's whole rubric); 0 when
    its prompts share no such prefix (a baseline, the template's order, FLAMe)."""
    template = config.prompt
    if (
        config.is_baseline
        or config.prompt_layout != JudgeConfig.PromptLayout.CACHE_FRIENDLY
        or template_layout(template) == PromptTemplate.Layout.FLAME
    ):
        return 0
    first = responses.select_related("instruction__dataset").first()
    if first is None:
        return 0
    skills = Skill.objects.filter(rubric_id=first.instruction.dataset.rubric_id)
    rubric = tuple(prompts.SkillSpec.from_model(s) for s in skills.order_by("position"))
    if not rubric:
        return 0
    return len(
        prompts.cache_friendly_prefix(
            rubric,
            system_text=(
                template.system_text if template else prompts.BUILTIN_POINTWISE_SYSTEM
            ),
            user_text=template.user_text
            if template
            else prompts.BUILTIN_POINTWISE_USER,
            output_mode=config.output_mode,
        )
    )


def schema_groups(config: JudgeConfig, responses: QuerySet[Response]) -> int:
    """How many different reply schemas the calls over `responses` send: one per
    set of criteria scored under output mode "json_schema" (the schema lists them),
    else 1."""
    if config.output_mode != JudgeConfig.OutputMode.JSON_SCHEMA:
        return 1
    per_instruction: dict[int, list[int]] = {}
    links = InstructionSkill.objects.filter(
        instruction_id__in=responses.values("instruction_id")
    ).order_by("instruction_id", "rank")
    for instruction_id, skill_id in links.values_list("instruction_id", "skill_id"):
        per_instruction.setdefault(instruction_id, []).append(skill_id)
    sets = {tuple(ids) for ids in per_instruction.values()}
    unlinked = responses.exclude(instruction_id__in=list(per_instruction)).exists()
    return max(1, len(sets) + unlinked)


def template_layout(template) -> str:
    """The prompt layout of a run's template ("flask" without a template)."""
    return getattr(template, "layout", "") or PromptTemplate.Layout.FLASK


@dataclass(frozen=True)
class ResponseBatch:
    """What every call of a claimed batch shares: the claim, each skill's spec (by
    skill id) and the run's few-shot examples."""

    claim: Claim
    specs: dict[int, prompts.SkillSpec]
    examples: tuple


class ResponseKind(TaskKind):
    """One call per response (of the chosen models, in instruction order) and sample.

    `instruction_limit` keeps the first N instructions (every selected model's
    response to each); `max_calls` then keeps the first responses whose calls
    (responses x samples) fit in N. Responses shown as few-shot examples are never
    judged (`Selection.left_out` counts them)."""

    takes = frozenset({"models", "instruction_limit", "max_calls"})

    def problems(self, *, config, dataset, options: RunOptions) -> list[Problem]:
        problems: list[Problem] = []
        models = sorted(set(options.models or []))
        available = set(
            Response.objects.filter(instruction__dataset=dataset)
            .values_list("model_name", flat=True)
            .distinct()
        )
        unknown = [m for m in models if m not in available]
        if unknown:
            problems.append(
                Problem(
                    f"not in dataset {dataset.name!r}: {', '.join(unknown)}",
                    field="models",
                )
            )
        limit = options.instruction_limit
        if problem := INSTRUCTION_LIMIT.problem(limit, "limit", optional=True):
            problems.append(problem)
        max_calls = options.max_calls
        if problem := MAX_CALLS.problem(max_calls, "max_calls", optional=True):
            problems.append(problem)
        elif max_calls is not None and max_calls < config.samples:
            problems.append(
                Problem(
                    f"{max_calls} is fewer than the config's {config.samples} samples "
                    "per response",
                    field="max_calls",
                )
            )
        return problems

    def select(self, *, dataset, options: RunOptions, examples: dict, config=None):
        responses = run_responses(
            dataset=dataset,
            models=sorted(set(options.models or [])),
            instruction_limit=options.instruction_limit,
        )
        # Never judge an example: its human score is in the prompt.
        shown = example_response_ids(examples) if examples else []
        left_out = responses.filter(pk__in=shown).count() if shown else 0
        if shown:
            responses = responses.exclude(pk__in=shown)
        ids = list(
            responses.order_by("instruction__position", "pk").values_list(
                "pk", flat=True
            )
        )
        samples = config.samples if config is not None else 1
        if options.max_calls is not None and len(ids) * samples > options.max_calls:
            ids = ids[: options.max_calls // samples]
            responses = responses.filter(pk__in=ids)
        return Selection(items=responses, targets=ids, left_out=left_out)

    def nothing(self, *, dataset, options) -> DomainError:
        return DomainError(
            "nothing to judge", [Problem("no responses match", field="models")]
        )

    def run_fields(self, *, options: RunOptions, selection: Selection) -> dict:
        return {
            "models_included": sorted(set(options.models or [])),
            "instruction_limit": options.instruction_limit,
        }

    def freezes_rubric(self) -> bool:
        # The scores (and critiques) follow the rubric version as it is now.
        return True

    def calls(self, *, config, options, selection: Selection):
        return (
            {"response_id": rid, "sample_index": s}
            for rid in selection.targets
            for s in range(config.samples)
        )

    def load_contexts(self, claim: Claim) -> list[CallContext]:
        """Render every claimed call (a fixed number of queries per batch): each
        shows the instruction's skills (else the rubric's) with its own scale or
        labels."""
        snapshot = claim.snapshot
        calls = list(
            JudgeCall.objects.filter(pk__in=claim.ids)
            .select_related("response", "response__instruction")
            .order_by("pk")
        )
        instruction_ids = {c.response.instruction_id for c in calls}
        links: dict[int, list[Skill]] = {}
        for link in (
            InstructionSkill.objects.filter(instruction_id__in=instruction_ids)
            .select_related("skill")
            .order_by("instruction_id", "rank")
        ):
            links.setdefault(link.instruction_id, []).append(link.skill)
        specs = {s.pk: prompts.SkillSpec.from_model(s) for s in claim.all_skills}
        for skill_list in links.values():
            for s in skill_list:
                specs.setdefault(s.pk, prompts.SkillSpec.from_model(s))
        batch = ResponseBatch(
            claim=claim, specs=specs, examples=self._examples(claim.run, specs)
        )
        out = []
        for call in calls:
            response = call.response
            instruction = response.instruction
            skills = links.get(instruction.pk) or claim.all_skills
            response_format = self.response_format(snapshot, specs, skills)
            if claim.sent and call.prompt_hash:
                # Sent already (`Claim.sent`): its key was stored, nothing to render.
                messages, key = [], call.prompt_hash
            else:
                messages = self.messages(batch, response, skills)
                key = (
                    claim.cache_key(
                        snapshot, messages, call.sample_index, response_format
                    )
                    if messages
                    else ""
                )
            out.append(
                CallContext(
                    call_id=call.pk,
                    token=claim.token,
                    response_id=response.pk,
                    sample_index=call.sample_index,
                    skills=skills,
                    messages=messages,
                    cache_key=key,
                    response_text=response.text,
                    reference=instruction.reference_answer,
                    instruction_id=instruction.pk,
                    response_format=response_format,
                    kind=self.key,
                    scales={s.key: specs[s.pk].scale for s in skills},
                )
            )
        return out

    def _examples(self, run, specs) -> tuple:
        return ()

    def messages(
        self, batch: ResponseBatch, response: Response, skills: list[Skill]
    ) -> list[dict]:
        """The messages of one call (`[]`: nothing to send)."""
        raise NotImplementedError(self.key)

    def response_format(self, snapshot, specs, skills) -> dict | None:
        return None


def whole_rubric(batch: ResponseBatch, skills) -> tuple[prompts.SkillSpec, ...]:
    """Every criterion of the dataset's rubric in its order (`Claim.all_skills`),
    what the cache-friendly layout shows every call; a scored skill the rubric does
    not hold (an instruction linked elsewhere) is added at its end, so the prompt
    always describes what it asks to score."""
    rubric = [batch.specs[s.pk] for s in batch.claim.all_skills]
    ids = {s.pk for s in batch.claim.all_skills}
    rubric += [batch.specs[s.pk] for s in skills if s.pk not in ids]
    return tuple(rubric)


class PointwiseKind(ResponseKind):
    key = JudgeRun.Kind.POINTWISE.value
    label = JudgeRun.Kind.POINTWISE.label
    form_label = (
        "Score responses criterion by criterion, on the rubric's scales or labels"
    )
    prompt_kind = PromptTemplate.Kind.POINTWISE.value
    training_tasks = ("pointwise", "classification")
    takes = ResponseKind.takes | {"few_shot"}
    writes_scores = True
    reads_values = True
    kind_badge = False  # the default kind

    def problems(self, *, config, dataset, options: RunOptions) -> list[Problem]:
        problems = super().problems(config=config, dataset=dataset, options=options)
        if options.given("few_shot") and config.is_baseline:
            problems.append(
                Problem(
                    "a baseline judge reads no prompt: no examples", field="few_shot"
                )
            )
        return problems

    def sizes(self, *, config, selection: Selection, extra_chars: int = 0) -> Sizes:
        """`extra_chars`: what the run's few-shot examples add to every prompt. In
        the cache-friendly layout every prompt carries the shared prefix (the whole
        rubric: `prompts.cache_friendly_prefix`, measured) and the call's own part;
        in the template's order, the template and its criteria (estimated)."""
        responses = selection.items
        n = responses.count()
        chars = response_chars(config, responses)
        shared = shared_prefix_chars(config, responses)
        if shared:
            per_call = shared + ITEM_PART_CHARS
        else:
            per_call = (
                len(config.prompt.user_text) + len(config.prompt.system_text)
                if config.prompt
                else DEFAULT_TEMPLATE_CHARS
            ) + SKILLS_PER_RESPONSE * RUBRIC_CHARS_PER_SKILL
        chars += n * (per_call + extra_chars)
        return Sizes(
            calls=n * config.samples,
            items=n,
            input_chars=chars,
            output_tokens=SKILLS_PER_RESPONSE * OUTPUT_TOKENS_PER_SKILL,
            shared_chars=shared,
            prefix_groups=schema_groups(config, responses) if shared else 1,
        )

    def template_problems(self, user_text: str) -> list[str]:
        return prompts.template_problems(user_text)

    def _examples(self, run, specs) -> tuple:
        # The run's few-shot examples (run.few_shot); each call shows its criteria's.
        return few_shot_prompt_examples(
            run=run, specs={spec.key: spec for spec in specs.values()}
        )

    def messages(self, batch, response, skills) -> list[dict]:
        snapshot = batch.claim.snapshot
        instruction = response.instruction
        if snapshot["backend"].startswith("baseline"):
            return []  # a baseline reads no prompt (the driver scores it)
        checklist = tuple(
            (item.get("skill"), item.get("question", ""))
            for item in (instruction.checklist or [])
        )
        inp = prompts.PointwiseInput(
            instruction=instruction.text,
            response=response.text,
            reference=instruction.reference_answer or None,
            skills=tuple(batch.specs[s.pk] for s in skills),
            checklist=checklist,
            instance_rubric=instruction.instance_rubric or {},
            examples=batch.examples,
            rubric=whole_rubric(batch, skills),
        )
        template = batch.claim.template
        if template_layout(template) == PromptTemplate.Layout.FLAME:
            # FLAMe text-to-text layout: the template's texts are not used; the
            # judge answers "field: value" lines (or JSON under a schema).
            return prompts.render_pointwise_flame(
                inp, include_reference=snapshot["include_reference"]
            )
        return prompts.render_pointwise(
            inp,
            system_text=template.system_text,
            user_text=template.user_text,
            include_reference=snapshot["include_reference"],
            output_mode=snapshot["output_mode"],
            cache_friendly=cache_friendly(snapshot),
        )

    def response_format(self, snapshot, specs, skills) -> dict | None:
        """The strict schema of a call: an enum of each skill's values."""
        if snapshot["output_mode"] != JudgeConfig.OutputMode.JSON_SCHEMA:
            return None
        return prompts.pointwise_response_format(
            [s.key for s in skills], {s.key: specs[s.pk].scale for s in skills}
        )

    def parse(self, ctx: CallContext, result: CallResult, text: str) -> None:
        parsed = parsing.parse_pointwise(
            text, [(s.key, s.name) for s in ctx.skills], ctx.scales or None
        )
        by_key = {s.key: s.pk for s in ctx.skills}
        result.parsed = {"scores": parsed.scores, "format": parsed.format}
        result.scores = [
            (by_key[key], value, parsed.rationales.get(key, ""))
            for key, value in parsed.scores.items()
            if key in by_key
        ]

    def weigh(self, ctx: CallContext, result: CallResult, text: str, tokens) -> None:
        """Each ordinal criterion's expected score and covered mass at the token of
        the value the parser read (`parsing.score_spans`, `logprobs.weigh_value`);
        N/A, categorical criteria and values not found in the tokens get none, and
        the call's `parsed` says why under "unweighted" (criterion key -> reason)."""
        parsed = result.parsed if result.parsed is not None else {}
        spans = parsing.score_spans(
            text, [(s.key, s.name) for s in ctx.skills], parsed.get("format", "")
        )
        scores = dict(parsed.get("scores") or {})
        why: dict[str, str] = {}
        for skill in ctx.skills:
            scale = (ctx.scales or {}).get(skill.key)
            chosen = scores.get(skill.key)
            if scale is not None and not scale.is_ordinal:
                why[skill.key] = "a categorical criterion has no expected value"
            elif chosen is None:
                why[skill.key] = "N/A has no expected value"
            elif skill.key not in spans:
                why[skill.key] = "the score was not found in the reply's text"
            else:
                values = scale.values if scale is not None else (1, 2, 3, 4, 5)
                weighted = logprobs.weigh_value(
                    tokens, text, spans[skill.key], chosen, values
                )
                if weighted is None:
                    why[skill.key] = (
                        "no value of the scale among the score token's alternatives"
                    )
                else:
                    result.weighted[skill.pk] = weighted
        if why:
            parsed["unweighted"] = why
            result.parsed = parsed

    def reask(self, reason: str, skills: list | None = None) -> str:
        """FLASK's sentence when every skill is FLASK-shaped (or none is given), else
        each skill's own values (`judging.prompts.value_hint`)."""
        specs = [prompts.SkillSpec.from_model(s) for s in skills or []]
        if prompts.all_flask(specs):
            return reask_start(reason) + (
                "Answer again in the requested format, with a score from 1 to 5 or "
                "N/A for every listed skill."
            )
        values = "; ".join(f"{s.key}: {prompts.value_hint(s.scale)}" for s in specs)
        return reask_start(reason) + (
            "Answer again in the requested format, with a value each listed skill "
            f"allows ({values})."
        )

    def result_rows(self, run, results) -> list:
        return [
            JudgeScore(
                run_id=run.pk,
                call_id=r.call_id,
                response_id=r.response_id,
                skill_id=skill_id,
                sample_index=r.sample_index,
                score=score,
                rationale=rationale,
                expected_score=w.expected_score if w else None,
                expected_mass=w.mass if w else None,
            )
            for r in results
            for skill_id, score, rationale in r.scores
            for w in (r.weighted.get(skill_id),)
        ]
