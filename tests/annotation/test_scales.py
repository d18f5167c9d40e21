"""annotation.scales: the one rule for what a criterion's score may be."""

from types import SimpleNamespace

import pytest

from annotation.scales import CATEGORICAL, FLASK_SCALE, ORDINAL, scale_of


def ordinal(low, high, allow_na=True, anchors=None):
    return SimpleNamespace(
        kind=ORDINAL,
        scale_min=low,
        scale_max=high,
        scale_anchors=anchors or {},
        labels=[],
        allow_na=allow_na,
    )


def categorical(*keys, allow_na=False):
    return SimpleNamespace(
        kind=CATEGORICAL,
        scale_min=None,
        scale_max=None,
        scale_anchors={},
        labels=[
            {"key": k, "name": k.title(), "description": f"about {k}"} for k in keys
        ],
        allow_na=allow_na,
    )


def test_ordinal_zero_to_four_uses_own_digits():
    s = scale_of(ordinal(0, 4))
    assert s.values == (0, 1, 2, 3, 4)
    assert s.keys == tuple((str(v), v) for v in range(5))
    assert s.label == "0-4" and not s.is_flask
    assert s.parse("0") == (True, 0, "")
    assert s.parse(4.0) == (True, 4, "")
    ok, value, problem = s.parse(5)
    assert not ok and "outside the scale" in problem and "0-4" in problem


def test_one_to_ten_gets_zero_for_the_tenth():
    s = scale_of(ordinal(1, 10))
    assert s.key_of(10) == "0" and s.key_of(1) == "1" and s.key_of(9) == "9"
    assert s.normalised(1) == 0.0 and s.normalised(10) == 1.0


def test_eleven_points_leave_the_last_without_a_key():
    s = scale_of(ordinal(0, 10))
    assert s.key_of(0) == "1" and s.key_of(9) == "0" and s.key_of(10) == ""
    assert len(s.keys) == 10


def test_negative_scale_positional_keys():
    s = scale_of(ordinal(-2, 2))
    assert s.keys[0] == ("1", -2) and s.parse("-2") == (True, -2, "")


def test_na_rules():
    assert scale_of(ordinal(1, 7)).parse("N/A") == (True, None, "")
    ok, _, problem = scale_of(ordinal(1, 7, allow_na=False)).parse(None)
    assert not ok and "N/A is not allowed" in problem and "1-7" in problem
    ok, _, problem = scale_of(ordinal(1, 7)).parse(None, csv_cell=True)
    assert not ok and "is empty" in problem


def test_non_integers_and_booleans_are_refused():
    s = scale_of(ordinal(1, 5))
    assert not s.parse(3.5)[0]
    assert not s.parse(True)[0]
    assert not s.parse("four")[0]
    assert not s.parse(float("nan"))[0]
    assert not s.parse([3])[0]


def test_categorical_codes_and_names():
    s = scale_of(categorical("yes", "no"))
    assert s.values == (0, 1) and s.labels == ("yes", "no")
    assert s.parse("YES ") == (True, 0, "")
    assert s.parse("No") == (True, 1, "")
    assert s.label_of(1) == "no" and s.name_of(0) == "Yes"
    assert s.keys == (("1", 0), ("2", 1))
    ok, _, problem = s.parse("maybe")
    assert not ok and "'yes' or 'no'" in problem
    assert not s.parse(0)[0]  # a code is not a label
    assert not s.parse(None)[0]  # N/A not allowed
    assert s.accepts(1) and not s.accepts(2) and not s.accepts(None)


def test_builtin_flask_skill_anchors_fall_back_to_anchor_fields():
    skill = SimpleNamespace(
        kind=ORDINAL,
        scale_min=1,
        scale_max=5,
        scale_anchors={},
        labels=[],
        allow_na=True,
        **{f"anchor_{i}": f"text {i}" for i in range(1, 6)},
    )
    s = scale_of(skill)
    assert s.is_flask and dict(s.anchors)[3] == "text 3"
    assert FLASK_SCALE.values == s.values


@pytest.mark.parametrize("value", [1, 2, 3, 4, 5, None])
def test_flask_scale_accepts(value):
    assert FLASK_SCALE.accepts(value)


def test_scale_without_anchors_reads_no_anchor_field():
    class ValuesOnly(SimpleNamespace):
        # A deferred column: reading it would cost a query; here it raises.
        @property
        def scale_anchors(self):
            raise LookupError("scale_anchors read")

    skill = ValuesOnly(kind=ORDINAL, scale_min=1, scale_max=10, labels=[], allow_na=0)
    s = scale_of(skill, anchors=False)
    assert s.values == tuple(range(1, 11)) and not s.allow_na
    assert all(text == "" for _, text in s.anchors)
    assert s.parse("10") == (True, 10, "")
    with pytest.raises(LookupError):
        scale_of(skill)
