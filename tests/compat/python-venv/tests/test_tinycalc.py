import sys

import tinycalc


def test_total_sums_price_times_quantity():
    assert tinycalc.total([(2, 3), (5, 1)]) == 11


def test_it_is_the_installed_wheel_from_the_venv():
    assert ".venv" in tinycalc.__file__, tinycalc.__file__
    assert sys.prefix != sys.base_prefix, "not running in the venv"
