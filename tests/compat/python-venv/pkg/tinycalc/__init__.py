"""tinycalc: line items and their total."""


def total(items):
    return sum(price * qty for price, qty in items)
