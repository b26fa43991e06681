"""load_queries on small files written here, the shape of the two committed query sets, and the
parts of the Nave's generator that can fail quietly (the sets against the real World English Bible
and Nave's module: tests/integration/retrieval/test_querysets_on_the_web.py)."""

import json
import re
from pathlib import Path

import pytest

from lectio.evaluation.naves import BibleFacts, KjvVerses, NaveTopic, WordCase
from lectio.evaluation.querysets import load_queries, select_part
from lectio.bible.refs import Ref

QUERIES = Path(__file__).resolve().parents[3] / "data" / "queries"


def _write(tmp_path, *lines) -> Path:
    path = tmp_path / "set.jsonl"
    path.write_text(
        "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"
    )
    return path


# --- loading ---------------------------------------------------------------------------


def test_loads_every_field_and_unions_the_relevant_refs(tmp_path):
    path = _write(
        tmp_path,
        {
            "id": "q1",
            "query": "anxiety",
            "relevant": ["luke_12_22"],
            "expected_top_5": ["phil_4_6", "1pet_5_7"],
            "expected_in_top_10": ["matt_6_25", "phil_4_6"],
            "should_not_appear": ["rom_8_28"],
            "must_include_text": ["anxious"],
            "principals": ["public", "user:alice"],
            "filters": {"testament": "new"},
        },
        "",
        {"query": "Jn 3:16"},
    )
    first, second = load_queries(path)
    assert first.relevant_set == {"luke_12_22", "phil_4_6", "1pet_5_7", "matt_6_25"}
    assert first.should_not_appear == ("rom_8_28",)
    assert first.principals == ("public", "user:alice")
    assert first.filters == {"testament": "new"}
    # Optional fields default to empty; an id is made from the file and line (3: blank line 2).
    assert second.id == "set-3"
    assert second.relevant_set == frozenset()
    with pytest.raises(AttributeError):
        first.query = "changed"  # frozen


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"query": "grace",', "not valid JSON"),
        ('["grace"]', "expected a JSON object"),
        ({"relevant": ["rom_8_28"]}, '"query" must be a non-empty string'),
        ({"query": "grace", "expected_top5": ["eph_2_8"]}, "unknown field.*expected_top5"),
        ({"query": "grace", "relevant": "eph_2_8"}, '"relevant" must be a list'),
        ({"query": "grace", "relevant": ["Romans 8:28"]}, "malformed verse id 'Romans 8:28'"),
        ({"query": "grace", "relevant": ["rom_17_1"]}, "Romans has 16 chapters"),
        ({"query": "grace", "relevant": ["xyz_1_1"]}, "unknown book id 'xyz'"),
        ({"query": "grace", "expected_top_5": ["rom_08_28"]}, "write 'rom_08_28' as 'rom_8_28'"),
        ({"query": "grace", "relevant": ["eph_2_8", "eph_2_8"]}, "eph_2_8 more than once"),
        (
            {"query": "love", "relevant": ["song_2_4"], "should_not_appear": ["song_2_4"]},
            "song_2_4 both relevant and in should_not_appear",
        ),
        ({"query": "grace", "filters": ["kind"]}, '"filters" must be a JSON object'),
    ],
)
def test_a_bad_line_names_the_file_and_line(tmp_path, line, problem):
    path = _write(tmp_path, {"id": "ok", "query": "fine", "relevant": ["rom_8_28"]}, line)
    with pytest.raises(ValueError, match=rf"set\.jsonl:2: .*{problem}"):
        load_queries(path)


def test_repeated_ids_are_refused(tmp_path):
    path = _write(tmp_path, {"id": "t1", "query": "a"}, {"id": "t1", "query": "b"})
    with pytest.raises(ValueError, match="set.jsonl:2: id 't1' already used on line 1"):
        load_queries(path)


# --- the committed sets ---------------------------------------------------------------


def test_theology_set_shape(theology):
    assert len(theology) >= 110
    assert [q.id for q in theology] == [f"t{n:03d}" for n in range(1, len(theology) + 1)]
    for query in theology:
        assert query.relevant_set, query.id
        assert 1 <= len(query.expected_top_5) <= 3, query.id
        assert set(query.expected_top_5) <= set(query.relevant), query.id
    assert sum(bool(q.should_not_appear) for q in theology) >= 10
    assert sum(bool(q.must_include_text) for q in theology) >= 5


def test_naves_set_shape(naves_set):
    assert len(naves_set) == 200
    for query in naves_set:
        assert query.id.startswith("nave-")
        assert 5 <= len(query.relevant) <= 40, query.id
        ordinals = [Ref.from_id(r).ordinal for r in query.relevant]
        assert ordinals == sorted(set(ordinals)), query.id  # canonical order, no repeats


# --- the Nave's generator ------------------------------------------------------------


def test_kjv_ranges_expand_to_every_verse():
    kjv = KjvVerses()
    assert kjv.expand("Gen.1.1-Gen.1.3") == ["gen_1_1", "gen_1_2", "gen_1_3"]
    assert kjv.expand("Matt.5.47-Matt.6.2") == ["matt_5_47", "matt_5_48", "matt_6_1", "matt_6_2"]
    assert len(kjv.expand("Rom.2")) == 29  # a bare chapter is all of it
    assert kjv.expand("3John.1.14") == ["3john_1_14"]
    assert kjv.expand("PrAzar.1.2") is None  # apocrypha
    assert kjv.expand("Gen.1.40") is None  # no such verse


def test_person_and_place_topics_are_recognised():
    kjv = WordCase.of(
        [
            "And Aaron spake unto Moses; and Obed-edom dwelt in Edom.",
            "Remember the sabbath day. Thy word is a lamp. The LORD is God; the Lord's prayer.",
            "Abed-nego answered, and Tubal-cain wrought brass.",
        ]
    )
    web = WordCase.of(["Bezalel made the ark. Abundance of prayerfulness is not a word here."])
    facts = BibleFacts(frozenset(), kjv, web)
    assert facts.is_name("AARON")
    assert facts.is_name("EDOM")  # "Obed-edom" does not make "edom" a common word
    assert facts.is_name("ABED-NEGO")
    assert facts.is_name("BEZALEL")  # not in this KJV sample: judged on the WEB
    assert facts.is_name("BARTIMEUS (AARON)")  # heading unknown, so the parenthesis decides
    assert not facts.is_name("SABBATH")
    assert not facts.is_name("WORD OF GOD")
    assert not facts.is_name("PRAYERLESSNESS")  # used by neither Bible: kept
    assert facts.natural_case("LORD'S PRAYER") == "Lord's prayer"
    assert facts.natural_case("WORD OF GOD") == "Word of God"

    def opening(text):
        return NaveTopic("X", [], text).describes_person_or_place

    assert opening("A city on the Nile River")
    assert opening("A nephew of Barnabas")
    assert opening("1. Son of Hezron and an ancestor of Jesus")
    assert opening("A Benjamite")
    assert not opening("A venomous serpent")
    assert not opening("A Greek philosophy, inculcating doctrines of severe morality")
    assert not opening("Head of a pillar")


@pytest.mark.parametrize("line, problem", [
    ('{"query": "law", "filters": {"testament": "NT", "colour": "red"}}', "unknown key(s) colour"),
    ('{"query": "law", "filters": {"genre": "law\\u0000"}}', "genre must be a non-empty line"),
    ('{"query": "law", "principals": ["nobody,user:bob"]}', "is not a principal"),
])
def test_filters_and_principals_are_checked_with_their_line(tmp_path, line, problem):
    path = tmp_path / "q.jsonl"
    path.write_text('{"query": "grace"}\n' + line + "\n")
    with pytest.raises(ValueError, match=rf"q.jsonl:2: .*{re.escape(problem)}"):
        load_queries(path)


def test_every_search_filter_is_allowed(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"query": "law", "filters": {"testament": "NT", "genre": "epistle", "kind": "scripture", '
                    '"translation": "WEB", "tradition": "Reformed", "tier": "classic"}}\n')
    assert load_queries(path)[0].filters["genre"] == "epistle"


def test_each_set_splits_into_fixed_dev_and_test_parts():
    from lectio.evaluation.querysets import part_of, select_part

    queries = load_queries(QUERIES / "theology.jsonl")
    dev, test = select_part(queries, "dev"), select_part(queries, "test")
    assert len(dev) + len(test) == len(queries) and not {q.id for q in dev} & {q.id for q in test}
    assert 0.5 < len(dev) / len(queries) < 0.7  # about 60/40
    # Fixed by the id alone: the same id lands in the same part whatever else the file holds.
    assert [part_of(q.id) for q in dev] == ["dev"] * len(dev)
    assert part_of("theology-001") == part_of("theology-001")
    with pytest.raises(ValueError, match="part must be one of"):
        select_part(queries, "train")


def test_the_readers_sets_load_with_every_query_filtered_to_scripture():
    for name, size in (("henry_catechism", 585), ("openbible_topics", 1147)):
        queries = load_queries(QUERIES / f"{name}.jsonl")
        assert len(queries) == size and all(q.relevant_set for q in queries)
        assert all(q.filters == {"kind": "scripture"} for q in queries)
        dev, test = select_part(queries, "dev"), select_part(queries, "test")
        assert len(dev) + len(test) == size and dev and test


def test_the_gate_reads_the_dev_part_of_each_default_set_and_a_named_part_of_any():
    from lectio.evaluation.migration_gate import load_query_sets, split_spec

    sets = load_query_sets()
    assert set(sets) == {"theology", "henry_catechism", "openbible_topics"}
    for name, queries in sets.items():
        assert queries == select_part(load_queries(QUERIES / f"{name}.jsonl"), "dev")
    path = QUERIES / "naves.jsonl"
    assert split_spec(f"{path}:test") == (path, "test") and split_spec(path) == (path, "all")
    assert load_query_sets([f"{path}:test"])["naves"] == select_part(load_queries(path), "test")
