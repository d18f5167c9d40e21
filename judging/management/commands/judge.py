"""`manage.py judge --dataset NAME --base-url URL --model MODEL [...] [--wait]`.

Creates a judge run (and, unless `--config NAME` names one, the judge config it uses)
and starts it; prints the run id. With `--wait` it prints a progress line every 2 s
and exits when the run ends: status 0 if it completed, 1 if it failed or was
cancelled. `--baseline rouge|length` judges without an LLM (no URL needed).

`--kind pairwise` judges the dataset's preference pairs in both orders (two calls per
pair and sample); `--category C ...` and `--sample N [--seed S]` choose the pairs,
`--no-ties` forbids a "tie" verdict, and `--probe bandwagon|attention [--cue TEXT]`
makes the run a bias probe. With `--wait` the summary adds the verdict counts.

`--few-shot K [--few-shot-rule random] [--few-shot-seed N]` shows the judge K
human-scored examples from the development split (spread over criteria and score
levels); `--few-shot-rule manual --few-shot-responses ID ...` names them. The run
never judges an example response.

`--reasoning-model [--reasoning-effort minimal|low|medium|high]` makes a new config a
reasoning model's (max_completion_tokens, no temperature; its temperature is 1), and
`--extra-body JSON` adds request fields (never ones the app sets: the field is named).
A config without the flag is adapted on the endpoint's documented refusals anyway.
"""

from __future__ import annotations

import time
from decimal import Decimal, InvalidOperation

from django.core.management.base import CommandError

from annotation.management.commands._cli import (
    add_workspace_option,
    command_dataset,
    command_user,
    not_in_workspace,
)
from annotation.management.commands._import_cli import refused
from annotation.models import Dataset
from flaskapp.commands import DataCommand
from flaskapp.errors import DomainError
from flaskapp.numbers import money
from judging import kinds, reasoning
from judging.fewshot import RULES, FewShotRequest
from judging.models import JudgeConfig, JudgeRun, PromptTemplate
from judging.selectors import runs as selectors
from judging.services.configs import judge_config_get_or_create
from judging.services.execution import judge_runs_recover
from judging.services.experiments import experiment_join_new_run
from judging.services.prompts import prompt_get_builtin
from judging.services.runs import judge_run_cancel, judge_run_create, judge_run_start
from judging.templatetags.judging_ui import duration

POLL_SECONDS = 2.0
BASELINES = {
    "rouge": JudgeConfig.Backend.BASELINE_ROUGE,
    "length": JudgeConfig.Backend.BASELINE_LENGTH,
}
# Options that define a new config (they are ignored with --config).
CONFIG_OPTIONS = (
    "base_url",
    "model",
    "api_key_env",
    "samples",
    "temperature",
    "max_tokens",
    "output_mode",
    "concurrency",
    "rpm",
    "tpm",
    "price_in",
    "price_out",
    "layout",
    "reasoning_model",
    "reasoning_effort",
    "extra_body",
    "logprobs",
    "top_logprobs",
    "price_cached_in",
    "batch_discount",
    "prompt_layout",
)
# The run options of the pairwise flags (refused, naming the kinds that take them,
# with a kind that does not).
FLAG_OPTIONS = {
    "category": "categories",
    "sample": "sample",
    "no_ties": "allow_tie",
    "probe": "probe",
    "cue": "cue",
}


def _decimal(value: str) -> Decimal:
    try:
        return Decimal(value)
    except InvalidOperation:
        raise ValueError(value) from None


def _reasoning_fields(options) -> dict:
    """The config fields of --reasoning-model, --reasoning-effort and --extra-body
    (a reasoning model's temperature is 1 unless --temperature says otherwise, which
    the service then refuses, naming it)."""
    fields: dict = {}
    if options["reasoning_model"]:
        fields["reasoning_model"] = True
        if options["temperature"] is None:
            fields["temperature"] = 1.0
    if options["reasoning_effort"] is not None:
        fields["reasoning_effort"] = options["reasoning_effort"]
    if options["extra_body"] is not None:
        value, why = reasoning.parse_extra_body(options["extra_body"])
        if value is None:
            raise CommandError(f"--extra-body {why}")
        fields["extra_body"] = value
    return fields


class Command(DataCommand):
    help = (
        "Start a judge run over a dataset and print its id. With --wait, show progress "
        "every 2 s and exit 0 when the run completes, 1 when it fails or is cancelled."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Dataset name.")
        add_workspace_option(parser, creates=True)
        judge = parser.add_argument_group(
            "judge (one of --base-url, --config, --baseline)"
        )
        judge.add_argument("--base-url", help="OpenAI-compatible endpoint URL.")
        judge.add_argument("--model", help="Judge model name at the endpoint.")
        judge.add_argument(
            "--config",
            help="Reuse the judge config of this name (ignores its options).",
        )
        judge.add_argument(
            "--baseline",
            choices=sorted(BASELINES),
            help="An LLM-free baseline judge (ROUGE-L vs reference, or length).",
        )
        judge.add_argument(
            "--api-key-env",
            default="",
            help="NAME of the environment variable holding the API key (not the key).",
        )
        judge.add_argument("--samples", type=int, help="Samples per response (n).")
        judge.add_argument("--temperature", type=float)
        judge.add_argument("--max-tokens", type=int)
        judge.add_argument(
            "--output-mode", choices=[c for c, _ in JudgeConfig.OutputMode.choices]
        )
        judge.add_argument(
            "--concurrency", type=int, help="Max concurrent requests to the endpoint."
        )
        judge.add_argument("--rpm", type=int, help="Requests per minute limit.")
        judge.add_argument("--tpm", type=int, help="Tokens per minute limit.")
        judge.add_argument(
            "--price-in", type=_decimal, help="Price per million input tokens."
        )
        judge.add_argument(
            "--price-out", type=_decimal, help="Price per million output tokens."
        )
        judge.add_argument(
            "--price-cached-in",
            type=_decimal,
            help="Price per million cached input tokens (default: the input price).",
        )
        judge.add_argument(
            "--batch-discount",
            type=int,
            metavar="PERCENT",
            help="Discount on calls made through the Batch API, 0-100 (default 50).",
        )
        judge.add_argument(
            "--prompt-layout",
            choices=[c.value for c in JudgeConfig.PromptLayout],
            help="Cache-friendly (default for a new config: shared text first, the "
            "response last) or the template's own order.",
        )
        judge.add_argument(
            "--layout",
            choices=["flask", "flame"],
            help="Prompt layout of a new config: FLASK (default) or FLAMe's "
            "INSTRUCTIONS / CONTEXT / EVALUATION text-to-text layout.",
        )
        judge.add_argument(
            "--reasoning-model",
            action="store_true",
            help="A reasoning model: send max_completion_tokens and no temperature "
            "(the config's temperature is 1).",
        )
        judge.add_argument(
            "--reasoning-effort",
            help=f"Reasoning effort sent to a reasoning model: "
            f"{', '.join(reasoning.EFFORTS)}.",
        )
        judge.add_argument(
            "--extra-body",
            metavar="JSON",
            help="Extra request fields as a JSON object, e.g. '{\"top_k\": 20}' (not "
            "messages, model, response_format, max_tokens, temperature, ...).",
        )
        judge.add_argument(
            "--logprobs",
            action="store_true",
            help="Ask for token log-probabilities and store each score's "
            "probability-weighted value (expected_score) next to it.",
        )
        judge.add_argument(
            "--top-logprobs",
            type=int,
            help="Alternatives per token with --logprobs (1-20; default 5).",
        )
        judge.add_argument(
            "--dev-server",
            action="store_true",
            help="Mark the config as the built-in fake judge server (a dev tool).",
        )
        run = parser.add_argument_group("run")
        run.add_argument(
            "--models", nargs="+", default=[], metavar="M", help="Only these models."
        )
        run.add_argument(
            "--limit",
            type=int,
            metavar="N",
            help="Only the first N instructions (N counts instructions, not calls: "
            "each brings one call per selected model's response and sample).",
        )
        run.add_argument(
            "--max-calls",
            type=int,
            metavar="N",
            help="At most N calls: the first responses, in instruction order, whose "
            "calls (responses x samples) fit (pointwise and critique runs).",
        )
        run.add_argument(
            "--kind",
            choices=[k.key for k in kinds.creatable()],
            default=kinds.default().key,
            help="Score (or label) responses on the rubric's criteria (default), "
            "write an open-ended critique of each response, compare the dataset's "
            "preference pairs in both orders, or suggest instruction "
            "metadata/checklists.",
        )
        pairwise = parser.add_argument_group("pairwise runs (--kind pairwise)")
        pairwise.add_argument(
            "--category",
            nargs="+",
            default=[],
            metavar="C",
            help="Only pairs of these categories.",
        )
        pairwise.add_argument(
            "--sample", type=int, help="Only a random sample of N pairs (seeded)."
        )
        pairwise.add_argument(
            "--seed", type=int, default=0, help="Seed of the sample and the probe."
        )
        pairwise.add_argument(
            "--no-ties",
            action="store_true",
            help='Do not allow "tie" verdicts (the judge must pick A or B).',
        )
        pairwise.add_argument(
            "--probe",
            choices=["bandwagon", "attention"],
            default="",
            help="Inject a cue naming an answer (bandwagon) or an irrelevant "
            "sentence (attention).",
        )
        pairwise.add_argument(
            "--cue",
            default="",
            help="Custom probe text (bandwagon: must contain {target}).",
        )
        few = parser.add_argument_group("few-shot examples (pointwise runs)")
        few.add_argument(
            "--few-shot",
            type=int,
            metavar="K",
            help="Show the judge K human-scored examples from the development split.",
        )
        few.add_argument(
            "--few-shot-rule",
            choices=RULES,
            default="random",
            help="random: spread over criteria and score levels (seeded); manual: "
            "the responses of --few-shot-responses.",
        )
        few.add_argument(
            "--few-shot-seed", type=int, default=0, help="Seed of the random rule."
        )
        few.add_argument(
            "--few-shot-responses",
            nargs="+",
            type=int,
            default=[],
            metavar="ID",
            help="The example responses (rule manual; development split only).",
        )
        few.add_argument(
            "--few-shot-criteria",
            nargs="+",
            default=[],
            metavar="KEY",
            help="Only examples of these criteria.",
        )
        run.add_argument("--name", default="", help="Run name.")
        run.add_argument(
            "--budget",
            type=_decimal,
            help="Spend cap of the run (default: the judge's default budget): no call "
            "starts that could take its cost past it. With --resume, the new cap.",
        )
        run.add_argument(
            "--resume",
            type=int,
            metavar="RUN_ID",
            help="Resume this run of the dataset (e.g. one stopped at its budget, "
            "with a higher --budget) instead of creating one.",
        )
        run.add_argument(
            "--cancel",
            type=int,
            metavar="RUN_ID",
            help="Cancel this run of the dataset instead of creating one (a Batch API "
            "run's open batches are cancelled at the provider, with or without a "
            "worker); resume it later with --resume.",
        )
        run.add_argument(
            "--experiment",
            type=int,
            help="Add the run to this experiment before it starts (it must cover the "
            "experiment's items; otherwise nothing is started and the run is removed).",
        )
        run.add_argument(
            "--user",
            help="Run as this user (researcher or admin; default: the first admin).",
        )
        run.add_argument(
            "--wait", action="store_true", help="Show progress until the run ends."
        )
        run.add_argument(
            "--batch",
            action="store_true",
            help="Send the calls through the provider's Batch API (files and batches; "
            "results within 24h, at the batch price).",
        )

    def handle(self, *args, **options):
        user = command_user(options["user"])
        dataset = command_dataset(options)
        if options["resume"] is not None:
            self._resume(options, user, dataset)
            return
        if options["cancel"] is not None:
            self._cancel(options, user, dataset)
            return
        config = self._config(options, user, dataset.workspace)
        task = kinds.get(options["kind"])
        foreign = [
            flag
            for flag, option in FLAG_OPTIONS.items()
            if options.get(flag) and option not in task.takes
        ]
        if foreign:
            takers = [
                k.key
                for k in kinds.creatable()
                if all(FLAG_OPTIONS[flag] in k.takes for flag in foreign)
            ]
            raise CommandError(
                ", ".join(f"--{flag.replace('_', '-')}" for flag in foreign)
                + " need --kind "
                + " or ".join(takers)
            )
        try:
            run = judge_run_create(
                config=config,
                dataset=dataset,
                user=user,
                kind=options["kind"],
                models=options["models"] if "models" in task.takes else None,
                instruction_limit=options["limit"],
                max_calls=options["max_calls"],
                categories=options["category"],
                sample=options["sample"],
                seed=options["seed"],
                allow_tie=not options["no_ties"],
                probe=options["probe"],
                cue=options["cue"],
                name=options["name"],
                few_shot=FewShotRequest(
                    k=options["few_shot"],
                    rule=options["few_shot_rule"],
                    seed=options["few_shot_seed"],
                    response_ids=tuple(options["few_shot_responses"]),
                    criteria=tuple(options["few_shot_criteria"]),
                ),
                batch=options["batch"],
                budget=options["budget"],
            )
            estimate = run.estimate or {}
            self.stdout.write(
                f"Run {run.pk}: {run.name} · {run.total_calls:,} calls · estimate "
                f"{estimate.get('input_tokens', 0) + estimate.get('output_tokens', 0):,}"
                f" tokens, {money(estimate.get('cost', 0))}"
            )
            if options.get("experiment"):
                self._join(run, options["experiment"], user)
            run = judge_run_start(run=run, user=user)
        except DomainError as exc:
            raise refused(exc, self.stderr) from exc
        if not options["wait"]:
            self.stdout.write(
                f"Started. Follow it with `manage.py judge ... --wait` or at /runs/{run.pk}/."
            )
            return
        self._wait(run)

    def _resume(self, options: dict, user, dataset: Dataset) -> None:
        """Start run `--resume` of the dataset again, with `--budget` as its new cap
        when given (`judge_run_start`); the service refuses a cap with no room."""
        run = JudgeRun.objects.filter(pk=options["resume"], dataset=dataset).first()
        if run is None:
            raise CommandError(
                f"--resume: no run {options['resume']} of dataset {dataset.name!r}"
            )
        try:
            run = judge_run_start(run=run, user=user, budget=options["budget"])
        except DomainError as exc:
            raise refused(exc, self.stderr) from exc
        self.stdout.write(f"Run {run.pk}: {run.get_status_display().lower()}.")
        if options["wait"]:
            self._wait(run)

    def _cancel(self, options: dict, user, dataset: Dataset) -> None:
        """Cancel run `--cancel` of the dataset (`judge_run_cancel`) and say what came
        of each of its provider batches."""
        run = JudgeRun.objects.filter(pk=options["cancel"], dataset=dataset).first()
        if run is None:
            raise CommandError(
                f"--cancel: no run {options['cancel']} of dataset {dataset.name!r}"
            )
        run = judge_run_cancel(run=run, user=user)
        self.stdout.write(f"Run {run.pk}: {run.get_status_display().lower()}.")
        for batch in run.batches.exclude(cancel_note="").order_by("pk"):
            self.stdout.write(
                f"  batch {batch.pk} ({batch.batch_id or 'no id'}): {batch.cancel_note}"
            )

    def _join(self, run: JudgeRun, experiment_id: int, user) -> None:
        """Add the new (not yet started) run to the experiment, or remove it
        (:func:`experiment_join_new_run`): a refused command leaves nothing behind."""
        experiment = experiment_join_new_run(
            user=user, experiment_id=experiment_id, run=run
        )
        self.stdout.write(f"Added to experiment {experiment.pk}: {experiment.name}")

    def _config(self, options, user, workspace) -> JudgeConfig:
        chosen = [k for k in ("config", "baseline", "base_url") if options[k]]
        if len(chosen) != 1:
            raise CommandError(
                "give exactly one of --base-url URL --model MODEL, --config NAME or "
                "--baseline rouge|length"
            )
        if options["config"]:
            config = JudgeConfig.objects.filter(
                name=options["config"], workspace=workspace
            ).first()
            if config is None:
                raise not_in_workspace(
                    "--config", "judge config", options["config"], workspace
                )
            ignored = [
                f"--{k.replace('_', '-')}" for k in CONFIG_OPTIONS if options.get(k)
            ]
            if ignored:
                self.stderr.write(
                    f"Using config {config.name!r} as it is; ignored: {', '.join(ignored)}"
                )
            return config
        if options["baseline"]:
            backend = BASELINES[options["baseline"]]
            fields = {"backend": backend, "name": f"baseline-{options['baseline']}"}
        else:
            if not options["model"]:
                raise CommandError("--base-url needs --model")
            fields = {
                "backend": JudgeConfig.Backend.OPENAI,
                "base_url": options["base_url"],
                "model": options["model"],
                "api_key_env": options["api_key_env"],
                "is_dev_server": options["dev_server"],
                "prompt": prompt_get_builtin(
                    PromptTemplate.Kind.POINTWISE, layout=options["layout"] or "flask"
                ),
            }
            optional = {
                "samples": "samples",
                "temperature": "temperature",
                "max_tokens": "max_tokens",
                "output_mode": "output_mode",
                "concurrency": "max_concurrency",
                "rpm": "requests_per_minute",
                "tpm": "tokens_per_minute",
                "price_in": "price_input_per_m",
                "price_out": "price_output_per_m",
                "top_logprobs": "top_logprobs",
                "price_cached_in": "price_cached_input_per_m",
                "batch_discount": "batch_discount_percent",
                "prompt_layout": "prompt_layout",
            }
            if options["logprobs"]:
                fields["logprobs"] = True
            for option, name in optional.items():
                if options[option] is not None:
                    fields[name] = options[option]
            fields.update(_reasoning_fields(options))
        try:
            # The operator at the shell may set any endpoint the rules allow: the
            # key variable must still be declared and the host allowed.
            config, created = judge_config_get_or_create(
                user=user, operator=True, workspace=workspace, **fields
            )
        except DomainError as exc:
            raise refused(exc, self.stderr) from exc
        if created:
            self.stdout.write(f"Created judge config {config.name!r} (id {config.pk}).")
        return config

    def _wait(self, run: JudgeRun) -> None:
        started = time.monotonic()
        try:
            while True:
                run.refresh_from_db()
                progress = selectors.judge_run_progress(run=run)
                self.stdout.write(self._line(run, progress, time.monotonic() - started))
                if run.status != JudgeRun.Status.RUNNING:
                    break
                # Waiting is also watching: a driver whose worker died is replaced
                # without beat (the same routine every worker runs).
                judge_runs_recover()
                time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            self.stdout.write(
                f"Stopped waiting; run {run.pk} goes on (cancel it on /runs/{run.pk}/)."
            )
            raise SystemExit(130) from None
        c = selectors.judge_run_progress(run=run).counts
        summary = (
            f"Run {run.pk} {run.get_status_display().lower()}: {c.succeeded:,} done, "
            f"{c.failed:,} failed, {c.tokens:,} tokens, {money(c.cost)}"
        )
        summary += kinds.get(run.kind).wait_summary(run)
        if run.status == JudgeRun.Status.COMPLETED:
            self.stdout.write(summary)
            return
        if run.status == JudgeRun.Status.PENDING and not c.open:
            self.stdout.write(f"Run {run.pk}: nothing to do.")
            return
        raise CommandError(summary, returncode=1)

    @staticmethod
    def _line(run: JudgeRun, progress, waited: float) -> str:
        c = progress.counts
        eta = (
            duration(progress.eta_seconds) if progress.eta_seconds is not None else "–"
        )
        return (
            f"[{duration(int(waited))}] {run.status}: done {c.succeeded:,}/{c.total:,} · "
            f"failed {c.failed:,} · in flight {progress.requests_in_flight or 0:,} "
            f"(claimed {c.running:,}) · "
            f"{progress.calls_per_second:.1f} calls/s · {c.tokens:,} tokens · "
            f"{money(c.cost)} · ETA {eta}"
        )
