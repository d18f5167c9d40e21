"""Critique runs (FLAMe's open-ended task): one written critique per response.

One call per response and sample, as pointwise runs (`ResponseKind`), but the prompt
is the critique task (`prompts.render_critique`, in the template's layout, frozen
in the run's snapshot): no rubric and no schema. A succeeded call writes one
`JudgeCritique`. A baseline judge cannot write one.
"""

from __future__ import annotations

from judging import parsing, prompts
from judging.kinds import CallContext, CallResult, Selection, Sizes, reask_start
from judging.kinds.pointwise import ResponseKind, response_chars, template_layout
from judging.models import JudgeCritique, JudgeRun, PromptTemplate
from judging.selectors.criteria import judge_run_critiques

# Estimate: the task text around the request, reference and answer; a critique of a
# few paragraphs.
CRITIQUE_PROMPT_CHARS = 900
CRITIQUE_OUTPUT_TOKENS = 350
CRITIQUES_SHOWN = 10  # on the run page


class CritiqueKind(ResponseKind):
    key = JudgeRun.Kind.CRITIQUE.value
    label = JudgeRun.Kind.CRITIQUE.label
    form_label = "Write an open-ended critique of each response"
    prompt_kind = PromptTemplate.Kind.CRITIQUE.value
    training_tasks = ("critique",)
    baseline_refusal = "a baseline judge cannot write a critique; choose an LLM judge"
    results_flags = {"is_critique": True}
    templates = {
        "prompt": "judging/kinds/critique_prompt.html",
        "page": "judging/kinds/critique_page.html",
    }

    def default_name(self, options) -> str:
        return "critiques"

    def snapshot_extra(self, *, config, options) -> dict:
        layout = config.prompt.layout if config.prompt else PromptTemplate.Layout.FLASK
        return {"kind": self.key, "layout": layout}

    def sizes(self, *, config, selection: Selection, extra_chars: int = 0) -> Sizes:
        """The critique task (no rubric) and a critique of `CRITIQUE_OUTPUT_TOKENS`."""
        responses = selection.items
        n = responses.count()
        chars = response_chars(config, responses) + n * CRITIQUE_PROMPT_CHARS
        return Sizes(
            calls=n * config.samples,
            items=n,
            input_chars=chars,
            output_tokens=CRITIQUE_OUTPUT_TOKENS,
        )

    def messages(self, batch, response, skills) -> list[dict]:
        snapshot = batch.claim.snapshot
        instruction = response.instruction
        return prompts.render_critique(
            instruction.text,
            response.text,
            reference=instruction.reference_answer or None,
            include_reference=snapshot["include_reference"],
            layout=snapshot.get("layout") or template_layout(batch.claim.template),
        )

    def parse(self, ctx: CallContext, result: CallResult, text: str) -> None:
        result.critique = parsing.parse_critique(text)
        result.parsed = {"critique_chars": len(result.critique)}

    def reask(self, reason: str, skills: list | None = None) -> str:
        return reask_start(reason) + (
            "Answer again in the requested format, with your critique."
        )

    def result_rows(self, run, results) -> list:
        return [
            JudgeCritique(
                run_id=run.pk,
                call_id=r.call_id,
                response_id=r.response_id,
                sample_index=r.sample_index,
                text=r.critique,
            )
            for r in results
            if r.critique
        ]

    def page_context(self, run) -> dict:
        critiques = judge_run_critiques(run=run)
        return {
            "critique_count": critiques.count(),
            "critiques": critiques[:CRITIQUES_SHOWN],
        }

    def results_queryset(self, calls):
        return calls.prefetch_related("critiques")
