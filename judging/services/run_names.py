"""Default run names: distinct, and telling which judge, dataset and when.

A run created without a name gets "<judge> · <dataset>[ · <what>] · <date time>"
(the server's local time, to the minute), with " #2", " #3", ... when a run already
has that name, so two runs of the same judge on the same dataset never look alike
in a list.
"""

from __future__ import annotations

from django.utils import timezone

from judging.models import JudgeConfig, JudgeRun

NAME_MAX = JudgeRun._meta.get_field("name").max_length


def run_default_name(*, config: JudgeConfig, dataset, what: str = "") -> str:
    """A name no run has yet (see module); `what` names the kind of a non-pointwise
    run ("pairwise", "metadata", ...). Reads only; unique at the time of the call."""
    when = timezone.localtime().strftime("%Y-%m-%d %H:%M")
    parts = [config.name, dataset.name, *([what] if what else []), when]
    base = " · ".join(parts)[: NAME_MAX - 6]
    taken = set(
        # Within the dataset's workspace: another workspace's runs are not in the way.
        JudgeRun.objects.filter(
            workspace_id=dataset.workspace_id, name__startswith=base
        ).values_list("name", flat=True)
    )
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base} #{n}"
    return name
