"""Line-item arithmetic, in integer cents so that sums are exact."""


def compute_total(items):
    """Sums quantity * unit price (in cents) over the line items."""
    total = 0
    for item in items:
        if item["quantity"] < 0:
            raise ValueError("negative quantity in line item %r" % item.get("name"))
        total += item["quantity"] * item["unit_cents"]
    return total


def apply_discount(total_cents, percent):
    """Takes percent off a total, rounding half up to the cent."""
    if not 0 <= percent <= 100:
        raise ValueError("discount must be between 0 and 100 percent")
    return total_cents - (total_cents * percent + 50) // 100
