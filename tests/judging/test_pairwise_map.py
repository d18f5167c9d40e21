"""The mapping from presented verdicts (A/B/tie) to the original numbering (1/2/tie)."""

import pytest

from annotation.labels import map_verdict, unmap_verdict


@pytest.mark.parametrize(
    ("raw", "order", "expected"),
    [
        ("A", "ab", "1"),
        ("B", "ab", "2"),
        ("tie", "ab", "tie"),
        # Swapped order: response_2 was shown first, as A.
        ("A", "ba", "2"),
        ("B", "ba", "1"),
        ("tie", "ba", "tie"),
    ],
)
def test_map_verdict_follows_the_presented_order(raw, order, expected):
    assert map_verdict(raw, order) == expected


@pytest.mark.parametrize("raw", ["", "a", "b", "Tie", "1", "2", "C", " A", None])
@pytest.mark.parametrize("order", ["ab", "ba"])
def test_map_verdict_returns_blank_for_anything_else(raw, order):
    assert map_verdict(raw, order) == ""


@pytest.mark.parametrize("order", ["", "AB", "12", "21", "xy"])
def test_map_verdict_rejects_an_unknown_order(order):
    with pytest.raises(ValueError, match="order must be"):
        map_verdict("A", order)


@pytest.mark.parametrize("order", ["ab", "ba"])
@pytest.mark.parametrize("raw", ["A", "B", "tie"])
def test_unmap_verdict_inverts_map_verdict(raw, order):
    assert unmap_verdict(map_verdict(raw, order), order) == raw


def test_unmap_verdict_blank_for_unknown_verdict():
    assert unmap_verdict("", "ab") == ""
    assert unmap_verdict("A", "ba") == ""
