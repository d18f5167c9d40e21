"""What every meta-evaluation and probe figure is called on a page, and what it means.

The one home for the names people read: the keys of
:func:`analysis.stats.metaeval.metaeval_report` (figures and ``counts``) and of the
probes of :mod:`analysis.stats.probes` (probe names and ``details``) map to a
plain-language label, a one-sentence explanation and the way the value is shown.
Views, templates (through ``analysis.templatetags.figures``) and charts ask
:func:`figure`; no page shows an internal key.

``kind`` is the display kind of the ``stat`` filter (``analysis.templatetags.
agreement_ui``): ``share`` for true proportions (shown as %), ``corr`` for
coefficients (kappa, correlations: 0.00), ``signed`` for differences (+0.00),
``count`` for whole numbers. Pure Python, no Django.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis import statistics


@dataclass(frozen=True)
class Figure:
    """A figure's page label, its explanation (one sentence), display kind and an
    optional short column heading."""

    label: str
    help: str
    kind: str = "share"
    short: str = ""

    @property
    def heading(self) -> str:
        return self.short or self.label


def _f(label: str, help_text: str, kind: str = "share", short: str = "") -> Figure:
    return Figure(label, help_text, kind, short)


_ORDERS = {"ab": "original order", "ba": "swapped order"}

FIGURES: dict[str, Figure] = {
    # --- agreement with the human votes --------------------------------------------
    "accuracy_ab": _f(
        "Accuracy, original order",
        "Share of (judge verdict, human vote) comparisons where the judge picked what "
        "the person picked, with the responses in their original order.",
        short="Acc. original",
    ),
    "accuracy_ba": _f(
        "Accuracy, swapped order",
        "The same share with the two responses shown the other way round (the verdict "
        "mapped back to the original numbering).",
        short="Acc. swapped",
    ),
    "accuracy_mean": _f(
        "Accuracy, mean of both orders",
        "Correct comparisons in both orders together, over pairs judged in both orders.",
        short="Acc. mean",
    ),
    "accuracy_both": _f(
        "Correct in both orders",
        "Share of comparisons where the judge matched the person in the original and "
        "in the swapped order.",
        short="Both orders",
    ),
    "kappa": _f(
        "Cohen's kappa",
        "Agreement between verdicts and votes beyond what chance alone would give, "
        "both orders pooled: 1 is perfect, 0 is chance level, below 0 worse than "
        "chance.",
        "corr",
        short="Kappa",
    ),
    "kappa_ab": _f(
        "Cohen's kappa, original order",
        "Chance-corrected agreement (1 perfect, 0 chance) in the original order only.",
        "corr",
    ),
    "kappa_ba": _f(
        "Cohen's kappa, swapped order",
        "Chance-corrected agreement (1 perfect, 0 chance) in the swapped order only.",
        "corr",
    ),
    "consistency": _f(
        "Positional consistency",
        "Share of pairs that get the same verdict whichever response is shown first.",
        short="Consistency",
    ),
    "first_position_share": _f(
        "Flipped pairs won by the first shown",
        "Of the pairs whose verdict changes with the order, the share where the "
        "response shown first won both times (a sign of position bias).",
    ),
    "second_position_share": _f(
        "Flipped pairs won by the second shown",
        "Of the pairs whose verdict changes with the order, the share where the "
        "response shown second won both times.",
    ),
    "rm_accuracy": _f(
        "Reward-model accuracy",
        "Accuracy as reward benchmarks count it: a match scores 1, a tie or unusable "
        "verdict 0.5, over votes that are not ties.",
        short="RM accuracy",
    ),
    "human_loo": _f(
        "Human ceiling (leave one out)",
        "How often one person's vote matches the majority of the other votes on the "
        "same pair: the accuracy a judge can hope to reach.",
    ),
    "human_loo_no_ties": _f(
        "Human ceiling without ties",
        "The human ceiling after leaving out votes and majorities that are ties.",
    ),
    # --- counts of metaeval_report --------------------------------------------------
    "pairs": _f("Pairs", "Response pairs the figures are computed on.", "count"),
    "pairs_with_votes": _f(
        "Pairs with a human vote", "Pairs at least one person voted on.", "count"
    ),
    "votes": _f("Human votes", "Every human vote on these pairs.", "count"),
    "human_votes_1": _f(
        "Votes for response 1", "Human votes that preferred response 1.", "count"
    ),
    "human_votes_2": _f(
        "Votes for response 2", "Human votes that preferred response 2.", "count"
    ),
    "human_votes_tie": _f(
        "Votes for a tie", "Human votes that called the pair a tie.", "count"
    ),
    "comparisons_both": _f(
        "Comparisons judged in both orders",
        "(Verdict, vote) comparisons on pairs with a verdict in both orders.",
        "count",
    ),
    "comparisons_both_no_ties": _f(
        "Tie-free comparisons judged in both orders",
        "The same comparisons without a tie on either side.",
        "count",
    ),
    "error_pairs": _f(
        "Pairs with an unusable verdict",
        "Pairs where at least one order produced no usable verdict; they are left "
        "out of consistency.",
        "count",
    ),
    "usable_pairs_both_orders": _f(
        "Pairs with a usable verdict in both orders",
        "Pairs where both orders gave 1, 2 or tie: the pairs consistency is computed on.",
        "count",
    ),
    "consistent_pairs": _f(
        "Pairs judged the same in both orders",
        "Pairs whose verdict does not change when the order is swapped.",
        "count",
    ),
    "inconsistent_pairs": _f(
        "Pairs judged differently in the two orders",
        "Pairs whose verdict changes when the order is swapped.",
        "count",
    ),
    "first_position_pairs": _f(
        "Flipped pairs won by the first shown",
        "Pairs where the response shown first won in both orders.",
        "count",
    ),
    "second_position_pairs": _f(
        "Flipped pairs won by the second shown",
        "Pairs where the response shown second won in both orders.",
        "count",
    ),
    "tie_inconsistent_pairs": _f(
        "Flipped pairs involving a tie",
        "Pairs judged a tie in one order and a win in the other.",
        "count",
    ),
    "loo_votes": _f(
        "Votes in the human ceiling",
        "Votes compared with a clear majority of the other votes on their pair.",
        "count",
    ),
    "loo_single_voter": _f(
        "Votes without another vote",
        "Votes left out of the human ceiling because nobody else voted on the pair.",
        "count",
    ),
    "loo_tied_majority": _f(
        "Votes without a clear majority of others",
        "Votes left out of the human ceiling because the other votes were split.",
        "count",
    ),
    "rm_comparisons": _f(
        "Comparisons in reward-model accuracy",
        "Comparisons with a human vote that is not a tie.",
        "count",
    ),
    "rm_human_ties": _f(
        "Human ties left out of reward-model accuracy",
        "Votes for a tie, which reward-model accuracy does not count.",
        "count",
    ),
    # --- probes ------------------------------------------------------------------------
    "order": _f(
        "Position bias",
        "Among pairs whose verdict flips when the responses swap places, the share "
        "where the response shown first won both times; 50% means no favoured "
        "position.",
    ),
    "length": _f(
        "Length bias",
        "Among pairs decided the same way in both orders, the share won by the longer "
        "response; 50% means length does not sway the judge.",
    ),
    "self_preference": _f(
        "Self-preference",
        "How much more often the judge picks a response of its own model family than "
        "people do on the same pairs (a tie counts half); 0 means no favouritism.",
        "signed",
    ),
    "bandwagon": _f(
        "Bandwagon cue",
        "How much more often verdicts follow a planted note saying which response "
        "most people liked than the same verdicts without the note; 0 means the note "
        "is ignored.",
        "signed",
    ),
    "attention": _f(
        "Distraction by an irrelevant sentence",
        "Share of verdicts that change when a sentence unrelated to the task is added "
        "to the prompt; 0% means the judge is not distracted.",
    ),
    "pointwise_length": _f(
        "Length bias of scores",
        "Rank correlation of the judge's scores with response length minus the same "
        "correlation for the human scores; 0 means the judge follows length no more "
        "than people do.",
        "signed",
    ),
    "score_inflation": _f(
        "Self-preference in scores",
        "How many points more the judge's scores exceed the human scores on responses "
        "of its own model family than on the others; 0 means no favouritism.",
        "signed",
    ),
    "halo": _f(
        "Halo effect",
        "Mean correlation between the scores one response gets on different skills, "
        "judge minus humans; above 0 the judge lets one impression colour every skill.",
        "signed",
    ),
    # --- probe details -----------------------------------------------------------------
    "usable_pairs": _f(
        "Pairs with a verdict in both orders",
        "Pairs where both orders produced a usable verdict (1, 2 or tie).",
        "count",
    ),
    "deviation": _f(
        "Distance from 50%",
        "How far the longer response's win rate is from 50%, in either direction.",
        "corr",
    ),
    "human": _f(
        "People preferring the longer response",
        "Share of human votes (ties left out) that went to the longer response, on "
        "pairs of different length.",
    ),
    "consistent_non_tie_pairs": _f(
        "Pairs decided the same way in both orders",
        "Pairs with the same winner (not a tie) whichever response was shown first.",
        "count",
    ),
    "equal_length_pairs": _f(
        "Pairs of equal length",
        "Decided pairs whose responses are equally long; length cannot explain them.",
        "count",
    ),
    "judge_rate": _f(
        "Judge picks its own family",
        "Share of the judge's verdicts that went to the response of its own family "
        "(a tie counts half).",
    ),
    "human_rate": _f(
        "People pick the judge's family",
        "Share of human votes on the same pairs that went to that response (a tie "
        "counts half).",
    ),
    "own_family_pairs": _f(
        "Pairs with one response of the judge's family",
        "Pairs where exactly one of the two responses comes from the judge's own "
        "model family.",
        "count",
    ),
    "inflation_own": _f(
        "Judge minus humans, own family",
        "Mean of the judge's score minus the human mean on responses of the judge's "
        "family, in score points.",
        "signed",
    ),
    "inflation_other": _f(
        "Judge minus humans, other models",
        "The same mean difference on responses of every other model.",
        "signed",
    ),
    "dropped_missing": _f(
        "Items left out (a score missing)",
        "Items without a judge score or without a human score; they are not used.",
        "count",
    ),
    "follow_cued": _f(
        "Verdicts following the cue",
        "Share of verdicts that pick the response the cue points at, with the cue.",
    ),
    "follow_base": _f(
        "Same verdicts without the cue",
        "Share of the same verdicts that pick that response when no cue is shown.",
    ),
    "flip_toward": _f(
        "Switched towards the cue",
        "Of the verdicts that went the other way without the cue, the share that "
        "switch to the cued response.",
    ),
    "flip_away": _f(
        "Switched away from the cue",
        "Of the verdicts that picked the cued response without the cue, the share "
        "that switch away from it.",
    ),
    "dropped_unusable": _f(
        "Verdicts left out (unusable)",
        "Verdict slots without a usable verdict with or without the cue.",
        "count",
    ),
    "changed_slots": _f(
        "Verdicts that changed",
        "Verdicts that differ once the irrelevant sentence is added.",
        "count",
    ),
    "judge_spearman": _f(
        "Judge scores vs length",
        "Spearman rank correlation of the judge's scores with response length.",
        "corr",
    ),
    "human_spearman": _f(
        "Human scores vs length",
        "Spearman rank correlation of the human scores with response length.",
        "corr",
    ),
    "judge_mean_r": _f(
        "Judge: correlation across skills",
        "Mean Pearson correlation of the judge's scores on two different skills of "
        "the same responses.",
        "corr",
    ),
    "human_mean_r": _f(
        "Humans: correlation across skills",
        "The same mean correlation for the human scores.",
        "corr",
    ),
    "skill_pairs": _f(
        "Skill pairs used",
        "Pairs of skills with a defined correlation for both the judge and the humans.",
        "count",
    ),
    "skill_pairs_undefined": _f(
        "Skill pairs left out",
        "Pairs of skills too sparsely scored (or constant) to correlate.",
        "count",
    ),
}

# "pairs" means different units in different places; the probes' own count:
PROBE_DETAIL_OVERRIDES: dict[str, Figure] = {
    "pairs": _f("Pairs used", "Pairs the probe is computed on.", "count"),
}

for _o, _name in _ORDERS.items():
    FIGURES[f"accuracy_{_o}_no_ties"] = _f(
        f"Accuracy without ties, {_name}",
        f"Accuracy in the {_name} after dropping comparisons where the verdict or "
        "the vote is a tie.",
    )
    FIGURES[f"kappa_{_o}_no_ties"] = _f(
        f"Cohen's kappa without ties, {_name}",
        f"Chance-corrected agreement in the {_name} without tie verdicts and votes.",
        "corr",
    )
    FIGURES[f"comparisons_{_o}"] = _f(
        f"Comparisons, {_name}",
        f"(Verdict, vote) comparisons in the {_name}: one per human vote.",
        "count",
    )
    FIGURES[f"comparisons_{_o}_no_ties"] = _f(
        f"Tie-free comparisons, {_name}",
        f"Comparisons in the {_name} without a tie on either side.",
        "count",
    )
    FIGURES[f"error_comparisons_{_o}"] = _f(
        f"Comparisons with an unusable verdict, {_name}",
        f"Comparisons whose verdict in the {_name} could not be read; counted as "
        "wrong.",
        "count",
    )
    FIGURES[f"judge_tie_comparisons_{_o}"] = _f(
        f"Comparisons the judge called a tie, {_name}",
        f"Comparisons where the judge's verdict in the {_name} was a tie.",
        "count",
    )
    FIGURES[f"missing_{_o}"] = _f(
        f"Pairs without a verdict, {_name}",
        f"Pairs the judge gave no verdict for in the {_name}; left out.",
        "count",
    )
    FIGURES[f"error_pairs_{_o}"] = _f(
        f"Pairs with an unusable verdict, {_name}",
        f"Pairs whose verdict in the {_name} could not be read.",
        "count",
    )
FIGURES["accuracy_mean_no_ties"] = _f(
    "Accuracy without ties",
    "Accuracy over both orders after dropping comparisons with a tie verdict or vote.",
)
FIGURES["accuracy_both_no_ties"] = _f(
    "Correct in both orders, without ties",
    "Share of tie-free comparisons matched in both orders.",
)
FIGURES["kappa_no_ties"] = _f(
    "Cohen's kappa without ties",
    "Chance-corrected agreement, both orders pooled, without tie verdicts and votes.",
    "corr",
)


def figure(key: str, *, probe_detail: bool = False) -> Figure:
    """The figure of `key`; an unknown key gets its words as the label (never the
    key itself) and no explanation. `probe_detail`: the key is a probe's detail."""
    if probe_detail and key in PROBE_DETAIL_OVERRIDES:
        return PROBE_DETAIL_OVERRIDES[key]
    found = FIGURES.get(key)
    if found is not None:
        return found
    words = str(key).replace("_", " ").strip()
    return Figure(words[:1].upper() + words[1:], "", "share")


def figure_rows(values: dict, *, probe_detail: bool = False) -> list[dict]:
    """Rows {"key", "label", "help", "kind", "value", "is_stat"} of a figures or
    counts dict, in its order: a result dict (value, ci, n) is a stat, anything else
    (a count) is shown as it is."""
    rows = []
    for key, value in (values or {}).items():
        f = figure(key, probe_detail=probe_detail)
        is_stat = isinstance(value, dict) and ("value" in value or "n" in value)
        rows.append(
            {
                "key": key,
                "label": f.label,
                "help": f.help,
                "kind": f.kind,
                "value": value,
                "is_stat": is_stat,
            }
        )
    return rows


def glossary(keys, *, probe_detail_keys=()) -> list[Figure]:
    """The figures of `keys` (then `probe_detail_keys`) with an explanation, each
    label once, in the order given: the page's list of what its figures mean."""
    seen, out = set(), []
    items = [(k, False) for k in keys] + [(k, True) for k in probe_detail_keys]
    for key, detail in items:
        f = figure(key, probe_detail=detail)
        if f.help and f.label not in seen:
            seen.add(f.label)
            out.append(f)
    return out


def agreement_glossary() -> list[Figure]:
    """The agreement statistics as the dashboard's glossary lists them: every
    statistic of :data:`analysis.statistics.REGISTRY` (the raters', then the
    judge's), its page label, glossary text, display kind and abbreviation."""
    return [
        Figure(s.label, s.glossary, s.format, s.abbreviation)
        for s in statistics.iter_glossary()
    ]
