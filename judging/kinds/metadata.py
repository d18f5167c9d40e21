"""Metadata and checklist runs: suggestions about each instruction of a dataset.

One call per instruction (no response, sample 0). A metadata run asks for the
instruction's domains (up to 2) and difficulty, from the dataset's own taxonomy (FLASK's
when it declares none), and skills (up to 3), a checklist run
(FLASK-Hard) for an instance checklist, and only over the instructions that have
none (their own checklists are never overwritten). Nothing in the dataset changes:
a succeeded call writes one `MetadataSuggestion` (from `parsed["suggestion"]`) for
an admin to accept. Baseline judges cannot annotate.
"""

from __future__ import annotations

from django.db.models import Sum
from django.db.models.functions import Length

from annotation.importers.taxonomy import FLASK, Taxonomy
from annotation.models import Domain, Instruction
from flaskapp.bounds import INSTRUCTION_LIMIT
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
)
from judging.models import JudgeCall, JudgeRun, MetadataSuggestion, PromptTemplate
from judging.selectors.runs import run_instructions, suggestion_counts

# Estimate: definitions of domains, levels and skills; a short answer.
ANNOTATION_PROMPT_CHARS = 6000
ANNOTATION_OUTPUT_TOKENS = 300


class InstructionKind(TaskKind):
    """What metadata and checklist runs share: one call per instruction, the first
    `instruction_limit` of the dataset."""

    takes = frozenset({"instruction_limit"})
    annotates_instructions = True
    baseline_refusal = "a baseline judge cannot annotate metadata; choose an LLM judge"
    refusal = "the annotation run was not created"
    results_flags = {"is_annotation": True}
    templates = {"estimate": "judging/kinds/instruction_estimate.html"}

    def problems(self, *, config, dataset, options: RunOptions) -> list[Problem]:
        limit = options.instruction_limit
        problem = INSTRUCTION_LIMIT.problem(limit, "limit", optional=True)
        return [problem] if problem else []

    def instructions(self, instructions):
        """The instructions of the run among the first `instruction_limit`."""
        return instructions

    def select(self, *, dataset, options: RunOptions, examples: dict, config=None):
        instructions = self.instructions(
            run_instructions(
                dataset=dataset, instruction_limit=options.instruction_limit
            )
        )
        return Selection(
            items=instructions, targets=list(instructions.values_list("pk", flat=True))
        )

    def sizes(self, *, config, selection: Selection, extra_chars: int = 0) -> Sizes:
        """One call per instruction (one sample)."""
        instructions = selection.items
        n = instructions.count()
        chars = instructions.aggregate(c=Sum(Length("text")))["c"] or 0
        return Sizes(
            calls=n,
            items=n,
            input_chars=chars + n * ANNOTATION_PROMPT_CHARS,
            output_tokens=ANNOTATION_OUTPUT_TOKENS,
        )

    def snapshot_extra(self, *, config, options) -> dict:
        return {"kind": self.key}

    def run_fields(self, *, options: RunOptions, selection: Selection) -> dict:
        return {"instruction_limit": options.instruction_limit}

    def calls(self, *, config, options, selection: Selection):
        return (
            {
                "instruction_id": pk,
                "response": None,
                "sample_index": 0,
                "status": JudgeCall.Status.PENDING,
            }
            for pk in selection.targets
        )

    def load_contexts(self, claim: Claim) -> list[CallContext]:
        """Render every claimed call; the skills are the rubric's."""
        snapshot = claim.snapshot
        specs = [prompts.SkillSpec.from_model(s) for s in claim.all_skills]
        taxonomy = claim.run.dataset.declared_taxonomy
        calls = list(
            JudgeCall.objects.filter(pk__in=claim.ids)
            .select_related("instruction")
            .order_by("pk")
        )
        out = []
        for call in calls:
            instruction = call.instruction
            messages = self.messages(instruction, specs, taxonomy)
            out.append(
                CallContext(
                    call_id=call.pk,
                    token=claim.token,
                    response_id=None,
                    sample_index=call.sample_index,
                    skills=claim.all_skills,
                    messages=messages,
                    cache_key=claim.cache_key(
                        snapshot, messages, call.sample_index, None
                    ),
                    kind=self.key,
                    instruction_id=instruction.pk,
                    taxonomy=taxonomy,
                )
            )
        return out

    def messages(
        self, instruction: Instruction, specs: list, taxonomy: Taxonomy
    ) -> list[dict]:
        """The call's messages; `taxonomy` is the dataset's (FLASK's if it declares
        none)."""
        raise NotImplementedError(self.key)

    def result_rows(self, run, results) -> list[MetadataSuggestion]:
        return [
            MetadataSuggestion(
                run_id=run.pk,
                instruction_id=r.instruction_id,
                **(r.parsed or {}).get("suggestion", {}),
            )
            for r in results
        ]

    def page_context(self, run) -> dict:
        return {"suggestion_counts": suggestion_counts(run=run)}


class MetadataKind(InstructionKind):
    key = JudgeRun.Kind.METADATA.value
    label = JudgeRun.Kind.METADATA.label
    form_label = "Suggest instruction metadata (domains, difficulty, skills)"
    prompt_kind = PromptTemplate.Kind.METADATA.value
    suggests = "domains, difficulty and skills"

    def nothing(self, *, dataset, options) -> DomainError:
        return DomainError(
            "nothing to annotate",
            [
                Problem(
                    f"dataset {dataset.name!r} has no instructions to annotate",
                    field="dataset",
                )
            ],
        )

    def default_name(self, options) -> str:
        return "metadata"

    def messages(self, instruction, specs, taxonomy) -> list[dict]:
        domains, levels = offered(taxonomy)
        return prompts.render_metadata_annotation(
            instruction.text,
            domains=list(domains.values()),
            skills=list(specs),
            levels=None if levels is None else list(levels.items()),
        )

    def parse(self, ctx: CallContext, result: CallResult, text: str) -> None:
        """The suggestion holds the dataset's domain keys and one of its levels; a
        reply naming an undeclared domain or level fails, naming it."""
        domains, levels = offered(ctx.taxonomy or FLASK)
        meta = parsing.parse_metadata(
            text,
            domains=domains,
            skill_keys=[s.key for s in ctx.skills],
            levels=levels,
        )
        result.parsed = {
            "suggestion": {
                "domains": list(meta.get("domains", []))[:2],
                "difficulty": meta.get("difficulty"),
                "skills": list(meta.get("skills", []))[:3],
            }
        }


def offered(taxonomy: Taxonomy) -> tuple[dict[str, str], dict[int, str] | None]:
    """What a metadata call offers the judge: the domains {key: label} and the
    difficulty levels {level: label}, the dataset's declared ones; FLASK's domains
    as `Domain` names them and None for FLASK's five levels (the prompt's own
    descriptions) where the dataset declares none."""
    if taxonomy.domains is None:
        domains = {key: str(label) for key, label in Domain.choices}
    else:
        domains = dict(taxonomy.domains)
    levels = None if taxonomy.difficulty is None else dict(taxonomy.difficulty)
    return domains, levels


class ChecklistKind(InstructionKind):
    key = JudgeRun.Kind.CHECKLIST.value
    label = JudgeRun.Kind.CHECKLIST.label
    form_label = "Suggest instance checklists (FLASK-Hard)"
    prompt_kind = PromptTemplate.Kind.CHECKLIST.value
    suggests = "checklists"

    def instructions(self, instructions):
        # FLASK-Hard's own checklists are never overwritten by a suggestion run.
        ids = [
            pk
            for pk, checklist in instructions.values_list("pk", "checklist")
            if not checklist
        ]
        return Instruction.objects.filter(pk__in=ids).order_by("position", "id")

    def nothing(self, *, dataset, options) -> DomainError:
        return DomainError(
            "nothing to annotate",
            [
                Problem(
                    f"dataset {dataset.name!r} has no instructions to annotate "
                    "without a checklist",
                    field="dataset",
                )
            ],
        )

    def default_name(self, options) -> str:
        return "checklists"

    def messages(self, instruction, specs, taxonomy) -> list[dict]:
        return prompts.render_checklist(
            instruction.text, instruction.reference_answer, list(specs)
        )

    def parse(self, ctx: CallContext, result: CallResult, text: str) -> None:
        items = parsing.parse_checklist(text, skill_keys=[s.key for s in ctx.skills])
        result.parsed = {"suggestion": {"checklist": items}}
