"""untrusted-calc: invoice arithmetic."""
from .core import compute_total, apply_discount
from .invoice import Invoice

__all__ = ["compute_total", "apply_discount", "Invoice"]
