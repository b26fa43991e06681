"""Chunk-size distributions: the long tail is information, so it is listed, not hidden."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from lectio.embedding.model import MAX_TEXT_TOKENS

# Per source first: two translations, or two people's notes, have sizes of their own.
GROUP = ["source_id", "kind", "granularity", "ruleset"]
PERCENTILES = (10, 50, 90, 99)
# What a screen shows of each group: a source has one kind and one ruleset, so source and
# granularity name the group, and these few columns fit beside the Dagster UI's panels in a
# 1600-pixel window (13 ran off it). The rest is in detail_markdown().
SUMMARY = ["source_id", "granularity", "count", "p50", "p90", "max", "over_model_limit"]


# What over_model_limit counts, in words beside it: a non-zero count read as a fault, though the
# chunkers keep a pericope or a long commentary entry whole on purpose.
OVER_LIMIT_NOTE = (f"over_model_limit counts chunks longer than the model's {MAX_TEXT_TOKENS} word pieces, such as "
                   "whole pericopes, which the chunking rules keep whole by design. Each is embedded in consecutive "
                   "windows of at most that length and given their token-weighted mean vector, so none is cut "
                   "off: a count here is the long tail, not a fault.")


def size_distribution(chunks: pd.DataFrame) -> pd.DataFrame:
    """One row per (source, kind, granularity, ruleset): token count percentiles and the longest
    chunk (detail_markdown() names the five longest)."""
    rows = []
    for key, group in chunks.groupby(GROUP, sort=True):
        tokens = group["tokens"].to_numpy()
        top = group.nlargest(1, "tokens")
        rows.append(
            {
                **dict(zip(GROUP, key)),
                "count": len(group),
                "min": int(tokens.min()),
                **{f"p{p}": int(np.percentile(tokens, p)) for p in PERCENTILES},
                "max": int(tokens.max()),
                "over_model_limit": int((tokens > MAX_TEXT_TOKENS).sum()),  # OVER_LIMIT_NOTE says why
                "longest": f"{top['chunk_id'].iloc[0]} ({int(top['tokens'].iloc[0])})",
            }
        )
    return pd.DataFrame(rows)


def detail_markdown(table: pd.DataFrame, chunks: pd.DataFrame, longest: int = 5) -> str:
    """Every column of size_distribution's `table` that SUMMARY leaves out, with the `longest`
    chunks of each group and their word pieces, as a Markdown table: the long tail by name,
    where a look at the text starts."""
    named = {key: ", ".join(f"{c} ({t})" for c, t in zip(top["chunk_id"], top["tokens"]))
             for key, group in chunks.groupby(GROUP, sort=True) for top in [group.nlargest(longest, "tokens")]}
    columns = [c for c in table.columns if c not in SUMMARY[2:] and c != "longest"]
    lines = ["|" + "|".join(columns) + f"|{longest} longest (word pieces)|", "|-" * (len(columns) + 1) + "|"]
    for row in table.itertuples(index=False):
        values = row._asdict()
        lines.append("|" + "|".join(str(values[c]) for c in columns) + f"|{named[tuple(values[c] for c in GROUP)]}|")
    return "\n".join(lines)


# Token-count bins of the text histogram; the last bound is the model's limit, past which a chunk
# is embedded in windows.
HISTOGRAM_BOUNDS = (16, 32, 64, 128, MAX_TEXT_TOKENS)


def histogram_markdown(chunks: pd.DataFrame, max_chars: int = 1000) -> str:
    """Chunk counts per token-count bin, a row per (kind, granularity), as a Markdown table of at
    most `max_chars` characters (a viewer shows short text inline and longer text behind a link:
    the Dagster UI's limit is 1,000). With too many groups for that, rows are per kind."""
    for group in (["kind", "granularity"], ["kind"]):
        text = _histogram_table(chunks, group)
        if len(text) < max_chars:
            return text
    return text


def _histogram_table(chunks: pd.DataFrame, group: list[str]) -> str:
    edges = [-0.5, *(b + 0.5 for b in HISTOGRAM_BOUNDS), np.inf]  # token counts are whole: ≤16 holds 16
    # The unit in every header: a bare "≤16" was read as a chunk count as often as a size.
    labels = [f"≤{b} tokens" for b in HISTOGRAM_BOUNDS] + [f">{HISTOGRAM_BOUNDS[-1]} tokens"]
    lines = ["|" + " / ".join(group) + "|" + "|".join(labels) + "|", "|-" + "|-:" * len(labels) + "|"]
    for key, rows in chunks.groupby(group, sort=True):
        counts = np.histogram(rows["tokens"], bins=edges)[0]
        name = " / ".join(key) if isinstance(key, tuple) else str(key)
        lines.append(f"|{name}|" + "|".join(_compact(int(n)) for n in counts) + "|")
    return "\n".join(lines)


def _compact(n: int) -> str:
    # Three characters or so per cell keeps a table of every group inline.
    if n < 1000:
        return str(n)
    if n < 10_000:
        return f"{n / 1000:.1f}k"
    return f"{n // 1000}k"


def _chunks(n: int) -> str:
    return f"{n:,} chunk" if n == 1 else f"{n:,} chunks"


def histogram_png(chunks: pd.DataFrame) -> bytes:
    import matplotlib.pyplot as plt

    fig = histogram_figure(chunks)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    return buffer.getvalue()


def histogram_figure(chunks: pd.DataFrame):
    """One panel per (kind, granularity): chunks by size in word pieces, on a log count axis, with
    the model's limit marked; each axis labelled and the limit named in a legend, so the plot
    reads on its own in the UI."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    groups = list(chunks.groupby(["kind", "granularity"], sort=True))
    # One set of bins from 0 past the model limit: a group of one chunk (or of equal sizes) then
    # gets a bar as wide as any other, where bins fitted to its own range were one token wide.
    top = max(int(chunks["tokens"].max()) if len(chunks) else 0, MAX_TEXT_TOKENS) + 1
    bins = np.linspace(0, top, 61)
    fig, axes = plt.subplots(len(groups), 1, figsize=(7, 2.2 * max(len(groups), 1)), squeeze=False)
    for ax, ((kind, granularity), group) in zip(axes[:, 0], groups):
        # log=True lets hist start its bars above zero; a log axis set afterwards left bars that
        # start at zero undrawn, so a group whose bins all held one chunk came out blank.
        ax.hist(group["tokens"], bins=bins, color="#4a6fa5", log=True)
        ax.set_ylim(bottom=0.7)
        # Counts as plain numbers at 1, 2, 5, 10, …, not 10⁰ with minor ticks labelled 6×10⁻¹.
        ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.axvline(MAX_TEXT_TOKENS, color="#b33", linestyle="--", linewidth=1,
                   label=f"model limit ({MAX_TEXT_TOKENS} word pieces)")
        ax.set_title(f"{kind} / {granularity}: {_chunks(len(group))}", fontsize=9)
        ax.set_ylabel("chunks (log)", fontsize=8)
        # On every panel: the UI shows the image in a scrolling dialog, where a label under the
        # last of eleven panels was out of sight of all the others.
        ax.set_xlabel("word pieces per chunk", fontsize=8)
        ax.tick_params(labelsize=8)
    axes[0, 0].legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return fig
