"""Reading judge output: strict about meaning, tolerant about form."""

from __future__ import annotations

import json

import pytest

from annotation.importers.base import NA_WORDS
from judging.parsing import (
    ParseError,
    parse_checklist,
    parse_metadata,
    parse_pairwise,
    parse_pointwise,
)

SKILLS = [
    ("logical_correctness", "Logical Correctness"),
    ("readability", "Readability"),
    ("metacognition", "Metacognition"),
]


def scores(text: str, skills=SKILLS) -> dict:
    return parse_pointwise(text, skills).scores


# --- Forms ---------------------------------------------------------------------------------


def test_schema_shaped_json_gives_scores_and_feedback():
    text = json.dumps(
        {
            "logical_correctness": {"feedback": "The sum is right.", "score": 5},
            "readability": {"feedback": "Clear.", "score": 4},
            "metacognition": {"feedback": "Not relevant here.", "score": "N/A"},
        }
    )
    parsed = parse_pointwise(text, SKILLS)
    assert parsed.format == "json"
    assert parsed.scores == {
        "logical_correctness": 5,
        "readability": 4,
        "metacognition": None,
    }
    assert parsed.rationales["logical_correctness"] == "The sum is right."


def test_flat_json_in_a_code_fence():
    text = '```json\n{"logical_correctness": 3, "readability": "4", "metacognition": 2.0}\n```'
    parsed = parse_pointwise(text, SKILLS)
    assert parsed.format == "json"
    assert parsed.scores == {
        "logical_correctness": 3,
        "readability": 4,
        "metacognition": 2,
    }


def test_feedback_paragraphs_then_a_final_object():
    text = (
        "Logical Correctness: the final answer is right.\n\n"
        "Readability: well laid out, though long.\n\n"
        "Metacognition: it admits what it does not know.\n\n"
        '{"logical_correctness": 5, "readability": 3, "metacognition": 4}'
    )
    parsed = parse_pointwise(text, SKILLS)
    assert parsed.format == "json_object_in_text"
    assert parsed.scores == {
        "logical_correctness": 5,
        "readability": 3,
        "metacognition": 4,
    }
    assert parsed.rationales["readability"] == "well laid out, though long."


def test_python_dict_with_single_quotes_and_display_names():
    text = (
        "Here is my review.\n"
        "{'Logical Correctness': 2, 'Readability': 5, 'Metacognition': None}"
    )
    parsed = parse_pointwise(text, SKILLS)
    assert parsed.format == "json_object_in_text"
    assert parsed.scores == {
        "logical_correctness": 2,
        "readability": 5,
        "metacognition": None,
    }


def test_the_last_object_wins():
    text = (
        'A first draft: {"logical_correctness": 1, "readability": 1, "metacognition": 1}\n'
        'On reflection: {"logical_correctness": 4, "readability": 5, "metacognition": 3}'
    )
    assert scores(text) == {
        "logical_correctness": 4,
        "readability": 5,
        "metacognition": 3,
    }


def test_a_trailing_object_without_skills_does_not_hide_the_scores():
    text = (
        '{"logical_correctness": 4, "readability": 5, "metacognition": 3}\n{"note": 1}'
    )
    assert scores(text)["readability"] == 5


def test_braces_inside_feedback_strings_do_not_break_the_object():
    text = "Review:\n" + json.dumps(
        {
            "logical_correctness": {
                "feedback": "uses a dict like {'a': 1}",
                "score": 4,
            },
            "readability": {"feedback": "a lone } brace", "score": 3},
            "metacognition": {"feedback": "fine", "score": 5},
        }
    )
    assert scores(text) == {
        "logical_correctness": 4,
        "readability": 3,
        "metacognition": 5,
    }


def test_score_lines_with_markdown_and_the_last_occurrence_wins():
    text = (
        "**Logical Correctness**: 2\n"
        "- readability: 4/5\n"
        "1. Metacognition: N/A (no uncertainty involved)\n"
        "After a second look:\n"
        "Logical-Correctness: 3."
    )
    parsed = parse_pointwise(text, SKILLS)
    assert parsed.format == "lines"
    assert parsed.scores == {
        "logical_correctness": 3,
        "readability": 4,
        "metacognition": None,
    }


def test_feedback_sentences_are_not_mistaken_for_scores():
    text = (
        "Logical Correctness: The answer reaches the right result.\n"
        "Readability: Clear and short.\n"
        "Metacognition: Not needed.\n"
        "Logical Correctness: 5\nReadability: 4\nMetacognition: NA"
    )
    parsed = parse_pointwise(text, SKILLS)
    assert parsed.scores == {
        "logical_correctness": 5,
        "readability": 4,
        "metacognition": None,
    }
    assert (
        parsed.rationales["logical_correctness"]
        == "The answer reaches the right result."
    )


# --- Meaning -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "label",
    [
        "logical_correctness",
        "Logical Correctness",
        "LOGICAL-CORRECTNESS",
        "logical correctness",
    ],
)
def test_keys_match_after_normalising_case_spaces_hyphens_underscores(label):
    text = json.dumps({label: 4, "readability": 4, "metacognition": 4})
    assert scores(text)["logical_correctness"] == 4


def test_no_substring_matching():
    two = [
        ("logical_correctness", "Logical Correctness"),
        ("logical_robustness", "Logical Robustness"),
    ]
    with pytest.raises(ParseError) as excinfo:
        parse_pointwise('{"Logical": 4, "logical_robustness": 3}', two)
    assert "logical_correctness" in excinfo.value.reason
    with pytest.raises(ParseError):
        parse_pointwise("Logical: 4\nLogical Robustness: 3", two)
    with pytest.raises(ParseError):
        parse_pointwise(
            '{"logical_correctness_score": 4, "logical_robustness": 3}', two
        )


@pytest.mark.parametrize("value", ["N/A", "n/a", "NA", None, "none", "Not applicable"])
def test_na_variants(value):
    text = json.dumps(
        {"logical_correctness": value, "readability": 3, "metacognition": 3}
    )
    assert scores(text)["logical_correctness"] is None


@pytest.mark.parametrize("word", sorted(NA_WORDS))
def test_every_na_word_of_the_importers_is_na_in_a_reply_too(word):
    text = json.dumps(
        {"logical_correctness": 4, "readability": word.upper(), "metacognition": 2}
    )
    assert scores(text) == {
        "logical_correctness": 4,
        "readability": None,
        "metacognition": 2,
    }


@pytest.mark.parametrize("value", [0, 6, 2.5, "high", True, "", [4], "4 stars"])
def test_bad_values_raise_naming_skill_and_value(value):
    text = json.dumps(
        {"logical_correctness": 3, "readability": value, "metacognition": 3}
    )
    with pytest.raises(ParseError) as excinfo:
        parse_pointwise(text, SKILLS)
    assert "readability" in str(excinfo.value)
    assert repr(value) in str(excinfo.value)


def test_bad_value_in_a_score_line_raises():
    with pytest.raises(ParseError, match="readability"):
        parse_pointwise(
            "Logical Correctness: 3\nReadability: 7\nMetacognition: 2", SKILLS
        )


def test_a_missing_skill_is_named():
    with pytest.raises(ParseError) as excinfo:
        parse_pointwise('{"logical_correctness": 3, "readability": 3}', SKILLS)
    assert "Metacognition (metacognition)" in excinfo.value.reason


def test_extra_keys_are_ignored():
    text = json.dumps(
        {
            "logical_correctness": 3,
            "readability": 3,
            "metacognition": 3,
            "harmlessness": 9,
        }
    )
    assert set(scores(text)) == {"logical_correctness", "readability", "metacognition"}


def test_scores_wrapped_with_separate_feedback():
    text = json.dumps(
        {
            "feedback": {"logical_correctness": "right", "readability": "ok"},
            "scores": {"logical_correctness": 5, "readability": 4},
        }
    )
    parsed = parse_pointwise(text, SKILLS[:2])
    assert parsed.scores == {"logical_correctness": 5, "readability": 4}
    assert parsed.rationales == {"logical_correctness": "right", "readability": "ok"}


@pytest.mark.parametrize(
    "text", ["", "   ", "I cannot evaluate this.", "{not json at all}"]
)
def test_no_scores_at_all(text):
    with pytest.raises(ParseError):
        parse_pointwise(text, SKILLS)


# --- Pairwise ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ('{"rationale": "A is right.", "winner": "A"}', "A"),
        ('{"rationale": "same", "winner": "tie"}', "tie"),
        ("B explains more.\nVerdict: B", "B"),
        ("Both fine.\nFinal verdict: [[A]]", "A"),
        ("Assistant B is better. [[B]]", "B"),
        ('Reasoning...\n{"winner": "Response B"}', "B"),
    ],
)
def test_pairwise_forms(text, verdict):
    assert parse_pairwise(text, allow_tie=True)[0] == verdict


def test_pairwise_rationale():
    assert parse_pairwise("A is shorter but right.\nVerdict: A", allow_tie=False) == (
        "A",
        "A is shorter but right.",
    )


def test_pairwise_tie_is_refused_when_not_allowed():
    with pytest.raises(ParseError, match="tie"):
        parse_pairwise("Verdict: tie", allow_tie=False)


@pytest.mark.parametrize(
    "text", ["Both answers have merits.", '{"winner": "C+"}', "Verdict: maybe"]
)
def test_pairwise_without_a_verdict(text):
    with pytest.raises(ParseError):
        parse_pairwise(text, allow_tie=True)


# --- Metadata and checklist ------------------------------------------------------------------

DOMAINS = ["Humanities", "Natural Science", "Math", "Coding"]
KEYS = ["logical_correctness", "readability", "metacognition", "factuality"]


def test_metadata_matches_domain_labels_and_skill_keys():
    text = (
        "Sure.\n"
        '{"rationale": "a proof", "domains": ["math", "natural_science"], "difficulty": 4, '
        '"skills": ["logical_correctness", "Readability", "factuality"]}'
    )
    assert parse_metadata(text, domains=DOMAINS, skill_keys=KEYS) == {
        "domains": ["Math", "Natural Science"],
        "difficulty": 4,
        "skills": ["logical_correctness", "readability", "factuality"],
    }


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"domains": ["Astrology"]}, "Astrology"),
        ({"domains": ["Math", "Coding", "Humanities"]}, "1 or 2"),
        ({"difficulty": 9}, "difficulty"),
        ({"skills": ["logical"]}, "logical"),
        ({"skills": KEYS}, "1 to 3"),
    ],
)
def test_metadata_rejects_out_of_range_answers(change, reason):
    reply = {"domains": ["Math"], "difficulty": 3, "skills": ["readability"], **change}
    with pytest.raises(ParseError, match=reason):
        parse_metadata(json.dumps(reply), domains=DOMAINS, skill_keys=KEYS)


def test_metadata_difficulty_may_be_na():
    reply = {"domains": "Math", "difficulty": "N/A", "skills": ["readability"]}
    meta = parse_metadata(json.dumps(reply), domains=DOMAINS, skill_keys=KEYS)
    assert meta["difficulty"] is None and meta["domains"] == ["Math"]


def test_checklist_per_skill_mapping():
    text = json.dumps(
        {
            "logical_correctness": ["Is the total 42?", "Is the unit given?"],
            "readability": [],
            "general_questions": ["Does it answer in English?"],
        }
    )
    assert parse_checklist(text, skill_keys=KEYS) == [
        {"skill": "logical_correctness", "question": "Is the total 42?"},
        {"skill": "logical_correctness", "question": "Is the unit given?"},
        {"skill": None, "question": "Does it answer in English?"},
    ]


def test_checklist_item_list():
    text = json.dumps(
        {
            "checklist": [
                {"skill": "Readability", "question": "Short?"},
                {"skill": None, "question": "Polite?"},
            ]
        }
    )
    assert parse_checklist(text, skill_keys=KEYS) == [
        {"skill": "readability", "question": "Short?"},
        {"skill": None, "question": "Polite?"},
    ]


@pytest.mark.parametrize("label", [None, "none", "null", "N/A"])
def test_checklist_question_without_a_skill_is_a_general_question(label):
    text = json.dumps(
        {
            "checklist": [
                {"skill": label, "question": "Polite?"},
                {"skill": "Readability", "question": "Short?"},
            ]
        }
    )
    assert parse_checklist(text, skill_keys=KEYS) == [
        {"skill": None, "question": "Polite?"},
        {"skill": "readability", "question": "Short?"},
    ]


def test_checklist_rejects_unknown_skills_and_empty_lists():
    with pytest.raises(ParseError, match="harmlessness"):
        parse_checklist(
            '[{"skill": "harmlessness", "question": "Safe?"}]', skill_keys=KEYS
        )
    with pytest.raises(ParseError):
        parse_checklist('{"readability": []}', skill_keys=KEYS)


def test_a_reply_nested_too_deep_is_unreadable_not_a_crash():
    from judging.parsing import load_object

    assert load_object("[" * 5000 + "]" * 5000) is None
