"""Small presentation helpers for the page templates."""

from __future__ import annotations

from django import template

from annotation.models import Difficulty, Domain
from annotation.scales import instance_rubric_points

register = template.Library()

# URL name -> top navigation section it belongs to.
NAV_SECTIONS = {
    "dataset-list": "datasets",
    "dataset-detail": "datasets",
    "instruction-detail": "datasets",
    "rubric-list": "rubrics",
    "rubric-detail": "rubrics",
    "rubric-import": "rubrics",
    "import-list": "imports",
    "import-new": "imports",
    "import-detail": "imports",
    "campaign-list": "campaigns",
    "campaign-new": "campaigns",
    "campaign-detail": "campaigns",
    "rate-home": "rate",
    "rate-next": "rate",
    "rate-history": "rate",
    "assignment-review": "rate",
}

STATUS_TONES = {
    "validated": "info",
    "queued": "neutral",
    "running": "info",
    "succeeded": "success",
    "invalid": "danger",
    "failed": "danger",
}


# Namespace -> section for the names the table above does not list: the navigation's
# one rule, so a new page lands in its section without touching the template.
NAV_PREFIXES = (
    ("annotation", "pairwise-", "pairwise"),
    ("annotation", "adjudication-", "adjudication"),
    ("annotation", "rater-", "raters"),
    ("judging", "judge-", "judges"),
    ("judging", "key-", "keys"),
    ("judging", "", "runs"),
    ("analysis", "agreement", "agreement"),
    ("analysis", "results", "results"),
    ("analysis", "leaderboard", "results"),
    ("analysis", "estimates", "results"),
    ("analysis", "reliability", "results"),
    ("analysis", "dataset-report", "results"),
    ("analysis", "instruction-", "datasets"),
    ("analysis", "dataset-workbench", "experiments"),
    ("analysis", "experiment", "experiments"),
    ("analysis", "dataset-", "datasets"),
    ("analysis", "metaeval", "metaeval"),
)


@register.filter
def nav_section(view_name: str | None) -> str:
    """`{{ request.resolver_match.view_name|nav_section }}` -> "datasets", "runs", ..."""
    namespace, _, name = (view_name or "").rpartition(":")
    for space, prefix, section in NAV_PREFIXES:
        if namespace == space and name.startswith(prefix):
            return section
    if namespace == "annotation":
        return NAV_SECTIONS.get(name, "")
    return ""


@register.filter
def status_tone(status: str) -> str:
    """The badge colour of an import status."""
    return STATUS_TONES.get(status, "neutral")


@register.filter
def preview_cell(value) -> str:
    """A parsed preview value as short text: lists joined, nothing as a dash."""
    if value is None or value == "" or value == []:
        return "—"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    return str(value)


@register.filter
def basename(path: str) -> str:
    """The last part of a file path (either separator), for a short file column."""
    text = str(path or "")
    return text.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or text


@register.filter
def percent_of(part: int, whole: int) -> int:
    """Share of `whole` in percent, for bar widths."""
    return round(100 * part / whole) if whole else 0


@register.filter
def humanise_key(value: str) -> str:
    """`logical_correctness` -> `Logical correctness` (for keys without a label)."""
    return str(value).replace("_", " ").capitalize()


@register.filter
def domain_label(key: str, dataset=None) -> str:
    """`natural_science` -> `Natural Science`; `{{ key|domain_label:dataset }}`: the
    label `dataset`'s own taxonomy gives the key."""
    if getattr(dataset, "taxonomy", None):
        labels = dataset.declared_taxonomy.domain_labels()
        if key in labels:
            return labels[key]
    return str(Domain(key).label) if key in Domain.values else humanise_key(key)


@register.filter
def difficulty_short(level: int | None, dataset=None) -> str:
    """1 -> `Simple lifestyle`, None -> `Unknown` (the level names without
    "knowledge"); `{{ level|difficulty_short:dataset }}`: the label of `dataset`'s
    own levels when it declares them."""
    if level is None:
        return "Unknown"
    if getattr(dataset, "taxonomy", None):
        taxonomy = dataset.declared_taxonomy
        if taxonomy.difficulty is not None:
            return taxonomy.difficulty_labels().get(level, f"level {level}")
    if level in Difficulty.values:
        return str(Difficulty(level).label).removesuffix(" knowledge")
    return "Unknown"


@register.filter
def lookup(mapping: dict, key: str):
    """`{{ row|lookup:column }}`: a dict value by a key held in a variable."""
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def rubric_points(rubric: dict | None) -> list[tuple[str, str]]:
    """An instruction's own rubric's (point, text) pairs in numeric order."""
    return instance_rubric_points(rubric)
