"""How every page, command and export shows money and counts (issue 37, defect 23): the
one rule, which the template filters of `flaskapp.templatetags.numbers` (built into
every template) and the commands call.

- `money(amount)`: a cost in dollars with cents and thousands separators ("$0.50",
  "$1,234.00"); an amount above zero that rounds to no cent is "< $0.01" (never
  "$0.0000"), and "$0.00" means exactly zero. Negative amounts keep their sign.
- `unit_price(amount)`: a price per million tokens, which can be a fraction of a cent
  per token and still matter: cents, or up to 4 decimals where cents would lose it
  ("$0.15", "$0.075", "$2.50").
- `count(n)`: an integer with thousands separators ("73,916"); anything else as is.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

CENT = Decimal("0.01")


def _decimal(value) -> Decimal | None:
    if value is None or value == "":
        return Decimal(0)
    try:
        amount = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None
    return amount if amount.is_finite() else None


def money(value) -> str:
    """A cost in dollars: "$0.00" only for zero, "< $0.01" for less than a cent."""
    amount = _decimal(value)
    if amount is None:
        return str(value)
    if amount == 0:
        return "$0.00"
    if abs(amount) < CENT / 2:
        return "< $0.01" if amount > 0 else "> -$0.01"
    rounded = amount.quantize(CENT, rounding=ROUND_HALF_UP)
    sign = "-" if rounded < 0 else ""
    return f"{sign}${abs(rounded):,.2f}"


def unit_price(value) -> str:
    """A price per 1M tokens: cents, or up to 4 decimals where cents would lose it."""
    amount = _decimal(value)
    if amount is None:
        return str(value)
    if amount == amount.quantize(CENT):
        return f"${amount:,.2f}"
    text = f"{amount:,.4f}".rstrip("0")
    return f"${text}"


def count(value) -> str:
    """An integer with thousands separators; other values unchanged."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return f"{int(value):,}"
    return "" if value is None else str(value)
