"""The bias probes of pairwise runs: what each pair's calls are shown (a bandwagon
cue naming a position, or an irrelevant sentence) and what `call.parsed` records.
Pure functions of the pair ids, the seed and the cue; the pairwise kind
(`judging.kinds.pairwise`) uses them when a pairwise run is created."""

from __future__ import annotations

import random

from annotation.labels import map_verdict
from judging.models import JudgeRun

BANDWAGON_CUE = "Most people who read both answers preferred answer {target}."
# Sentences with nothing to do with any request (attention probes), in our own words.
ATTENTION_SENTENCES = (
    "The museum's east wing reopens after its renovation next spring.",
    "Honeybees can visit several thousand flowers in a single day.",
    "The regional train timetable changes on the first Sunday of each month.",
    "Copper slowly turns green when it is left out in the rain for years.",
    "The city library lends board games as well as books.",
    "Some lighthouses still keep a fog bell next to the lamp.",
)


def probe_cues(
    probe: str, pair_ids: list[int], seed: int, cue: str
) -> tuple[dict[int, dict], dict]:
    """Per pair, what a probe injects; and the run's `probe_settings`.

    Bandwagon: the cue names position A for one half of the pairs and B for the other
    (a seeded shuffle; with an odd count A gets the extra one), the same position in
    both orders, so each of a pair's responses is the target once. Attention: one
    irrelevant sentence per pair, drawn with the seed.
    """
    if not probe:
        return {}, {}
    rng = random.Random(seed)
    if probe == JudgeRun.Probe.BANDWAGON:
        template = cue or BANDWAGON_CUE
        shuffled = list(pair_ids)
        rng.shuffle(shuffled)
        half = (len(shuffled) + 1) // 2
        targets = {pid: ("A" if i < half else "B") for i, pid in enumerate(shuffled)}
        per_pair = {
            pid: {
                "kind": probe,
                "cue": template.replace("{target}", target),
                "cue_target": target,
            }
            for pid, target in targets.items()
        }
        settings_ = {
            "seed": seed,
            "cue": template,
            "targets": {"A": half, "B": len(shuffled) - half},
        }
        return per_pair, settings_
    sentences = [cue] if cue else list(ATTENTION_SENTENCES)
    per_pair = {
        pid: {"kind": probe, "cue": sentences[rng.randrange(len(sentences))]}
        for pid in pair_ids
    }
    return per_pair, {"seed": seed, "sentences": sentences}


PAIR_ORDERS = ("ab", "ba")


def probe_record(cue: dict | None, order: str) -> dict | None:
    """What `call.parsed` starts with: the probe shown to this call, if any."""
    if cue is None:
        return None
    record = dict(cue)
    if "cue_target" in record:
        record["cue_target_original"] = map_verdict(record["cue_target"], order)
    return {"probe": record}
