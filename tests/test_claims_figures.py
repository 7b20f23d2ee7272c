"""the figures' sentences against the numbers printed beside them (helpers: book_claims.py)."""

from __future__ import annotations

import numpy as np
import pytest
from book_claims import (
    CH10,
    _cells,
)

# -- panels compared side by side share one colour scale and show it -----------------------------


@pytest.mark.parametrize(
    "notebook, cell_id, scale",
    [
        ("05_multi_head_attention.ipynb", "c040-heads-maps", "attention_heatmap("),  # 0 to 1 by default
        (CH10, "ch10-heads", "vmin=0, vmax=top"),
        (CH10, "ch10-rollout", "vmin=0, vmax=top_share"),
        ("12_cross_attention.ipynb", "ch12-025", "vmin=0, vmax=top)"),  # every letter's map
        ("12_cross_attention.ipynb", "ch12-025", "vmin=0, vmax=top_rollout)"),  # every rollout map
    ],
)
def test_panels_that_are_compared_share_a_colour_scale_with_a_colour_bar(notebook, cell_id, scale):
    pytest.importorskip("matplotlib")  # not in the numpy-only tier
    from attncourse.plotting import attention_heatmap

    source = "".join(next(c for c in _cells(notebook) if c.get("id") == cell_id)["source"])
    assert scale in source and "fig.colorbar(" in source, cell_id
    if scale == "attention_heatmap(":
        import matplotlib

        matplotlib.use("Agg")
        image = attention_heatmap(np.full((2, 2), 0.5), colorbar=False).images[0]
        assert image.get_clim() == (0.0, 1.0)  # every panel on the same fixed scale
