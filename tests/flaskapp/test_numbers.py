"""Money and counts are formatted one way (issue 37, defect 23): cents, "< $0.01" for a
positive amount below a cent, "$0.00" only for zero, thousands separators; one filter
built into every template, which the commands call too."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.template import Context, Template

from flaskapp import numbers


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (0, "$0.00"),
        (None, "$0.00"),
        (Decimal("0.0000"), "$0.00"),
        (0.5, "$0.50"),
        ("0.5000", "$0.50"),
        (0.0015, "< $0.01"),
        (0.004999, "< $0.01"),
        (0.005, "$0.01"),
        (0.0149, "$0.01"),
        (1234.5, "$1,234.50"),
        (-2.5, "-$2.50"),
    ],
)
def test_money(amount, text):
    assert numbers.money(amount) == text


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (0.15, "$0.15"),
        (0.075, "$0.075"),
        (2.5, "$2.50"),
        (0, "$0.00"),
        (1500, "$1,500.00"),
    ],
)
def test_unit_price_keeps_a_fraction_of_a_cent(amount, text):
    assert numbers.unit_price(amount) == text


@pytest.mark.parametrize(
    ("value", "text"), [(73916, "73,916"), ("73916", "73,916"), (12, "12"), (None, "")]
)
def test_count(value, text):
    assert numbers.count(value) == text


def test_the_filters_are_built_into_every_template():
    # No {% load %}: the filters are builtins, one home for every page.
    html = Template("{{ c|money }} · {{ t|count }} tokens · {{ p|unit_price }}").render(
        Context({"c": 0.5, "t": 73916, "p": 0.075})
    )
    assert html == "$0.50 · 73,916 tokens · $0.075"


def test_no_other_money_filter():
    from judging.templatetags import judging_ui

    assert "money" not in judging_ui.register.filters


@pytest.mark.django_db
def test_the_run_list_shows_a_baseline_cost_as_zero_dollars(client_for, researcher):
    from django.urls import reverse

    from judging.models import JudgeConfig, JudgeRun
    from tests.factories import dataset_with_responses

    dataset = dataset_with_responses()
    config = JudgeConfig.objects.create(name="rouge", backend="baseline_rouge")
    JudgeRun.objects.create(
        config=config, dataset=dataset, name="rouge run", status="completed"
    )
    text = client_for(researcher).get(reverse("judging:run-list")).content.decode()
    assert "$0.0000" not in text and "$0.00" in text
