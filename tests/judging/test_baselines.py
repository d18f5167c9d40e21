"""Baseline judges: ROUGE-L against hand-computed values, length quintiles."""

from __future__ import annotations

import random

import pytest

from judging.baselines import (
    lcs_length,
    length_scores,
    response_length,
    rouge_l_f1,
    score_from_unit,
)


def _lcs_by_table(a: list[str], b: list[str]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = (
                table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
            )
    return table[-1][-1]


@pytest.mark.parametrize(
    ("reference", "response", "expected"),
    [
        # LCS "police the gunman" = 3 of 4 and 4: P = R = 3/4.
        ("police killed the gunman", "police kill the gunman", 0.75),
        # LCS "the gunman" = 2: P = R = 1/2.
        ("police killed the gunman", "the gunman killed police", 0.5),
        # LCS 5; P = 5/5, R = 5/6, F = 2 * 1 * 5/6 / (11/6) = 10/11.
        ("the cat sat on the mat", "the cat on the mat", 10 / 11),
        # Case and punctuation do not matter.
        ("The CAT, sat!", "the cat sat", 1.0),
        ("a b c", "x y z", 0.0),
        ("", "anything", 0.0),
        ("anything", "", 0.0),
    ],
)
def test_rouge_l_f1_hand_computed(reference, response, expected):
    assert rouge_l_f1(reference, response) == pytest.approx(expected)


def test_rouge_l_is_symmetric_in_f1_and_handles_other_scripts():
    assert rouge_l_f1("a b c d", "a c") == pytest.approx(rouge_l_f1("a c", "a b c d"))
    assert rouge_l_f1("서울은 한국의 수도", "서울은 수도") == pytest.approx(0.8)


def test_bit_parallel_lcs_matches_the_table():
    rng = random.Random(7)
    for _ in range(300):
        a = [rng.choice("abcde") for _ in range(rng.randint(0, 40))]
        b = [rng.choice("abcdef") for _ in range(rng.randint(0, 40))]
        assert lcs_length(a, b) == _lcs_by_table(a, b)


def test_long_texts_are_scored_exactly():
    words = [f"w{i % 300}" for i in range(3000)]
    text = " ".join(words)
    assert rouge_l_f1(text, text) == 1.0
    assert lcs_length(words, words[::2]) == 1500


@pytest.mark.parametrize(
    ("x", "score"),
    [
        (0.0, 1),
        (0.099, 1),
        (0.1, 2),
        (0.2, 3),
        (0.34, 3),
        (0.35, 4),
        (0.5, 5),
        (1.0, 5),
        (float("nan"), 1),
    ],
)
def test_score_from_unit(x, score):
    assert score_from_unit(x) == score


def test_score_from_unit_custom_cuts_must_increase():
    assert score_from_unit(0.5, cuts=(0.2, 0.4, 0.6, 0.8)) == 3
    with pytest.raises(ValueError):
        score_from_unit(0.5, cuts=(0.5, 0.4, 0.6, 0.8))


def test_length_quintiles():
    assert length_scores([10, 20, 30, 40, 50]) == [1, 2, 3, 4, 5]
    assert length_scores([50, 10, 40, 20, 30]) == [5, 1, 4, 2, 3]
    assert length_scores(list(range(10))) == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert length_scores([]) == []


def test_equal_lengths_get_equal_scores_whatever_the_order():
    lengths = [5, 5, 5, 100, 1, 5]
    scores = length_scores(lengths)
    assert len({s for s, n in zip(scores, lengths, strict=True) if n == 5}) == 1
    assert scores[lengths.index(1)] < scores[0] < scores[lengths.index(100)]
    assert length_scores([7, 7, 7]) == [3, 3, 3]
    shuffled = [5, 100, 5, 1, 5, 5]
    by_length = dict(zip(lengths, scores, strict=True))
    assert length_scores(shuffled) == [by_length[n] for n in shuffled]


def test_response_length_counts_words():
    assert response_length("Hello, world! It's 42.") == 5
