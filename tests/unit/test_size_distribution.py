"""The chunk-size distribution is per source: two translations of one kind, granularity and
ruleset (WEB and KJV) are two rows, never one merged row (issue 37, item 9)."""

import pandas as pd

from lectio.quality.distribution import size_distribution


def test_two_translations_are_two_rows():
    chunks = pd.DataFrame({
        "chunk_id": ["rom_8_28_web", "rom_8_28_kjv", "rom_8_29_kjv"],
        "source_id": ["web", "kjv", "kjv"],
        "kind": ["scripture"] * 3,
        "granularity": ["verse"] * 3,
        "ruleset": ["scripture-v1"] * 3,
        "tokens": [30, 40, 50],
    })
    table = size_distribution(chunks).set_index("source_id")
    assert sorted(table.index) == ["kjv", "web"]
    assert table.loc["kjv", "count"] == 2 and table.loc["kjv", "max"] == 50
    assert table.loc["web", "count"] == 1 and table.loc["web", "longest"] == "rom_8_28_web (30)"


def test_the_size_plot_reads_on_its_own():
    """Issue 52, item 7: each panel's axes are labelled and the limit line is named in a legend."""
    import matplotlib.pyplot as plt
    import pandas as pd

    from lectio.quality.distribution import histogram_figure

    chunks = pd.DataFrame({"kind": ["scripture", "scripture", "notes"], "granularity": ["verse", "verse", "note"],
                           "tokens": [20, 40, 300]})
    fig = histogram_figure(chunks)
    axes = fig.axes
    assert len(axes) == 2 and all(ax.get_ylabel() == "chunks (log)" for ax in axes)
    # Issue 62, item 10: every panel names its x axis (the last of eleven alone did), and one chunk is "1 chunk".
    assert all(ax.get_xlabel() == "word pieces per chunk" for ax in axes)
    assert [ax.get_title() for ax in axes] == ["notes / note: 1 chunk", "scripture / verse: 2 chunks"]
    from lectio.embedding.model import MAX_TEXT_TOKENS

    assert [t.get_text() for t in axes[0].get_legend().get_texts()] == [f"model limit ({MAX_TEXT_TOKENS} word pieces)"]
    plt.close(fig)


def test_the_detail_names_each_rows_longest_chunks_longest_first():
    """Issue 52, item 7: the table on the asset page keeps a few columns so it fits; the detail
    holds the rest of each row and names its longest chunks."""
    from lectio.quality.distribution import SUMMARY, detail_markdown

    chunks = pd.DataFrame({
        "chunk_id": [f"kjv_{i}" for i in range(7)] + ["web_0"],
        "source_id": ["kjv"] * 7 + ["web"],
        "kind": ["scripture"] * 8,
        "granularity": ["verse"] * 8,
        "ruleset": ["scripture-v1"] * 8,
        "tokens": [10, 70, 30, 60, 20, 50, 40, 5],
    })
    table = size_distribution(chunks)
    assert list(table[SUMMARY].columns) == ["source_id", "granularity", "count", "p50", "p90", "max", "over_model_limit"]
    header, _, kjv, web = detail_markdown(table, chunks).splitlines()
    assert header == "|source_id|kind|granularity|ruleset|min|p10|p99|5 longest (word pieces)|"
    assert kjv == "|kjv|scripture|verse|scripture-v1|10|16|69|kjv_1 (70), kjv_3 (60), kjv_5 (50), kjv_6 (40), kjv_2 (30)|"
    assert web == "|web|scripture|verse|scripture-v1|5|5|5|web_0 (5)|"


def test_the_inline_histogram_names_its_unit_in_every_bucket():
    """Issue 62, item 10: the inline table's headers read "≤16", with no unit."""
    import pandas as pd

    from lectio.embedding.model import MAX_TEXT_TOKENS
    from lectio.quality.distribution import histogram_markdown

    chunks = pd.DataFrame({"kind": ["scripture"], "granularity": ["verse"], "tokens": [20]})
    header = histogram_markdown(chunks).splitlines()[0].strip("|").split("|")
    assert header == ["kind / granularity", "≤16 tokens", "≤32 tokens", "≤64 tokens", "≤128 tokens",
                      f"≤{MAX_TEXT_TOKENS} tokens", f">{MAX_TEXT_TOKENS} tokens"]
