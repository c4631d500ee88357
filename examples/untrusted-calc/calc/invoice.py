"""An invoice: line items, a discount and a tax rate."""
from .core import compute_total, apply_discount


class Invoice:
    def __init__(self, items, discount_percent=0, tax_percent=0):
        self.items = list(items)
        self.discount_percent = discount_percent
        self.tax_percent = tax_percent

    def subtotal(self):
        return compute_total(self.items)

    def total(self):
        discounted = apply_discount(compute_total(self.items), self.discount_percent)
        return discounted + (discounted * self.tax_percent + 50) // 100
