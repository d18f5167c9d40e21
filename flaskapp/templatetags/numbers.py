"""`money`, `unit_price` and `count`: built into every template (settings TEMPLATES
`builtins`), so a page never formats a number its own way (flaskapp/numbers.py)."""

from __future__ import annotations

from django import template

from flaskapp import numbers

register = template.Library()
register.filter("money", numbers.money)
register.filter("unit_price", numbers.unit_price)
register.filter("count", numbers.count)
