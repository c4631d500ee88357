"""Plain-text rendering of an invoice."""
from .core import compute_total


def render(invoice):
    lines = []
    for item in invoice.items:
        cents = item["quantity"] * item["unit_cents"]
        lines.append("%-20s %3d x %8.2f = %9.2f" % (
            item["name"], item["quantity"], item["unit_cents"] / 100, cents / 100))
    lines.append("%-20s %29.2f" % ("subtotal", compute_total(invoice.items) / 100))
    lines.append("%-20s %29.2f" % ("total", invoice.total() / 100))
    return "\n".join(lines)
