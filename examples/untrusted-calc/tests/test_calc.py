import unittest

from calc import Invoice, apply_discount, compute_total
from calc.report import render

ITEMS = [
    {"name": "widget", "quantity": 3, "unit_cents": 1250},
    {"name": "gadget", "quantity": 1, "unit_cents": 9999},
]


class ComputeTotalTest(unittest.TestCase):
    def test_sums_line_items(self):
        self.assertEqual(compute_total(ITEMS), 3 * 1250 + 9999)

    def test_empty_invoice_is_zero(self):
        self.assertEqual(compute_total([]), 0)

    def test_negative_quantity_is_refused(self):
        with self.assertRaises(ValueError):
            compute_total([{"name": "x", "quantity": -1, "unit_cents": 5}])


class InvoiceTest(unittest.TestCase):
    def test_discount_rounds_half_up(self):
        self.assertEqual(apply_discount(1000, 15), 850)
        self.assertEqual(apply_discount(999, 50), 499)

    def test_total_with_discount_and_tax(self):
        inv = Invoice(ITEMS, discount_percent=10, tax_percent=20)
        self.assertEqual(inv.subtotal(), 13749)
        self.assertEqual(inv.total(), 14849)

    def test_report_mentions_every_item(self):
        text = render(Invoice(ITEMS))
        self.assertIn("widget", text)
        self.assertIn("gadget", text)


if __name__ == "__main__":
    unittest.main()
