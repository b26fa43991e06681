"""Chunk-size distributions: the long tail is information, so it is listed, not hidden."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from lectio.embedding.model import MAX_TEXT_TOKENS

GROUP = ["kind", "granularity", "ruleset"]
PERCENTILES = (10, 50, 90, 99)


def size_distribution(chunks: pd.DataFrame, longest: int = 5) -> pd.DataFrame:
    """One row per (kind, granularity, ruleset): token count percentiles and the longest chunks."""
    rows = []
    for key, group in chunks.groupby(GROUP, sort=True):
        tokens = group["tokens"].to_numpy()
        top = group.nlargest(longest, "tokens")
        rows.append(
            {
                **dict(zip(GROUP, key)),
                "count": len(group),
                "min": int(tokens.min()),
                **{f"p{p}": int(np.percentile(tokens, p)) for p in PERCENTILES},
                "max": int(tokens.max()),
                # Past this the model would truncate; such chunks are embedded in windows.
                "over_model_limit": int((tokens > MAX_TEXT_TOKENS).sum()),
                "longest": ", ".join(f"{c} ({t})" for c, t in zip(top["chunk_id"], top["tokens"])),
            }
        )
    return pd.DataFrame(rows)


def histogram_png(chunks: pd.DataFrame) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = list(chunks.groupby(["kind", "granularity"], sort=True))
    fig, axes = plt.subplots(len(groups), 1, figsize=(7, 2.2 * max(len(groups), 1)), squeeze=False)
    for ax, ((kind, granularity), group) in zip(axes[:, 0], groups):
        ax.hist(group["tokens"], bins=60, color="#4a6fa5")
        ax.axvline(MAX_TEXT_TOKENS, color="#b33", linestyle="--", linewidth=1)
        ax.set_title(f"{kind} / {granularity}: {len(group):,} chunks", fontsize=9)
        ax.set_yscale("log")
        ax.tick_params(labelsize=8)
    axes[-1, 0].set_xlabel("tokens (dashed: model limit)", fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    return buffer.getvalue()
