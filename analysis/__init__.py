"""Concord's statistics core: pure numpy/scipy functions over long-format label arrays.

No Django import anywhere in this package; workers, tests and notebooks call the same code.
"""
