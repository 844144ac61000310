"""Numeric comparisons of the oracle tests: how far vitattn's array is from a reference."""
import math

import numpy as np


def relative(got, ref):
    """max|got − ref| / max|ref| in float64, for bounds that scale with the reference.
    Shapes are compared first: inf when they differ (so any bound fails). When the reference
    is all zeros the figure is max|got| instead (0 only if got is zeros too); a caller that
    needs a non-zero reference checks that itself."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    if got.shape != ref.shape:
        return math.inf
    scale = np.abs(ref).max()
    return float(np.abs(got - ref).max() / scale) if scale > 0 else float(np.abs(got).max())
