"""What an annotator is shown of a presentation (task_view), and the seeded draws behind it.

Pure functions, no database: these run everywhere, including the SQLite mutation runs where the
browser and PostgreSQL tests of the workbench skip.
"""

import random

import pytest

from annotation.presentation import (
    Member,
    draw,
    left_is_first,
    mix64,
    output_ids,
    task_view,
    uniform,
)

# output id -> (prompt id, prompt text, output text, system id)
TEXTS = {
    11: (1, "Prompt one", "one by system 7", 7),
    12: (1, "Prompt one", "one by system 8", 8),
    13: (1, "Prompt one", "one by system 9", 9),
    21: (2, "Prompt two", "two by system 7", 7),
    22: (2, "Prompt two", "two by system 8", 8),
    23: (2, "Prompt two", "two by system 9", 9),
}


def test_a_single_output_shows_its_prompt_and_text_only():
    view = task_view({"kind": "output", "output": 12}, TEXTS)
    assert view == {"kind": "output", "prompt": "Prompt one", "outputs": ["one by system 8"]}


def test_a_pair_shows_the_left_output_first_and_the_right_second():
    view = task_view({"kind": "pair", "left": 13, "right": 11}, TEXTS)
    assert view == {
        "kind": "pair",
        "prompt": "Prompt one",
        "outputs": ["one by system 9", "one by system 7"],
    }
    swapped = task_view({"kind": "pair", "left": 11, "right": 13}, TEXTS)
    assert swapped["outputs"] == ["one by system 7", "one by system 9"]


SPA = {
    "kind": "spa_batch",
    "letters": {"A": 9, "B": 7, "C": 8},
    "prompts": [2, 1],
    "writers": ["C", "A", "B"],
    "outputs": [22, 23, 21, 12, 13, 11],
    "questions": [
        {"comparison": 5, "reverse": False, "x": "B", "y": "C"},
        {"comparison": 6, "reverse": False, "x": "A", "y": "B"},
        {"comparison": 5, "reverse": True, "x": "C", "y": "B"},
    ],
}


def test_an_spa_batch_shows_prompts_in_reading_order_with_writer_letters_and_field_names():
    view = task_view(SPA, TEXTS)
    assert view == {
        "kind": "spa_batch",
        "prompts": [
            {
                "prompt": "Prompt two",
                "outputs": [
                    {"writer": "C", "text": "two by system 8", "field": "likert_0"},
                    {"writer": "A", "text": "two by system 9", "field": "likert_1"},
                    {"writer": "B", "text": "two by system 7", "field": "likert_2"},
                ],
            },
            {
                "prompt": "Prompt one",
                "outputs": [
                    {"writer": "C", "text": "one by system 8", "field": "likert_3"},
                    {"writer": "A", "text": "one by system 9", "field": "likert_4"},
                    {"writer": "B", "text": "one by system 7", "field": "likert_5"},
                ],
            },
        ],
        "writers": ["C", "A", "B"],
        "questions": [
            {"field": "p_0", "x": "B", "y": "C"},
            {"field": "p_1", "x": "A", "y": "B"},
            {"field": "p_2", "x": "C", "y": "B"},
        ],
    }


def test_an_spa_view_names_no_system_comparison_or_direction():
    view = task_view(SPA, TEXTS)
    flat = repr(view)
    assert "comparison" not in flat and "reverse" not in flat and "letters" not in flat
    for question in view["questions"]:
        assert set(question) == {"field", "x", "y"}


def test_an_spa_prompt_without_outputs_in_the_batch_is_left_out():
    presentation = dict(SPA, prompts=[3, 2, 1])
    assert [b["prompt"] for b in task_view(presentation, TEXTS)["prompts"]] == [
        "Prompt two",
        "Prompt one",
    ]


def test_output_ids_lists_every_output_in_display_order():
    assert output_ids({"kind": "output", "output": 12}) == [12]
    assert output_ids({"kind": "pair", "left": 13, "right": 11}) == [13, 11]
    assert output_ids(SPA) == [22, 23, 21, 12, 13, 11]
    assert output_ids({"kind": "spa_batch"}) == []


def test_mix64_is_splitmix64():
    # Published SplitMix64 outputs for state 0 (Vigna's splitmix64.c): the first two.
    golden = 0x9E3779B97F4A7C15
    first, second = 0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4
    assert mix64(golden) == first
    assert mix64(golden, first ^ golden) == second
    assert mix64() == golden
    # Parts are taken modulo 2**64.
    assert mix64(-1) == mix64((1 << 64) - 1)
    assert mix64(golden + (1 << 64)) == first


def test_uniform_is_the_hash_scaled_into_the_unit_interval():
    golden = 0x9E3779B97F4A7C15
    assert uniform(golden) == 0xE220A8397B1DCDAF / 2.0**64
    draws = [uniform(3, i) for i in range(2000)]
    assert all(0 <= u < 1 for u in draws)
    assert 0.45 < sum(draws) / len(draws) < 0.55


def test_left_is_first_follows_the_seeded_block_of_four():
    for seed in (0, 1, 99):
        for block in range(5):
            pattern = [True, True, False, False]
            random.Random(mix64(seed, block, 1)).shuffle(pattern)
            shown = [left_is_first(seed, 4 * block + offset) for offset in range(1, 5)]
            assert shown == pattern


def test_a_pair_draw_puts_the_canonical_first_output_left_when_the_block_says_so():
    members = [Member(11, 7, 1), Member(12, 8, 1)]
    for position in range(1, 9):
        view = draw("pair", members, seed=5, position=position)
        if left_is_first(5, position):
            assert view == {"kind": "pair", "left": 11, "right": 12}
        else:
            assert view == {"kind": "pair", "left": 12, "right": 11}


def test_an_output_draw_shows_the_first_member():
    assert draw("output", [Member(11, 7, 1)], seed=1, position=1) == {
        "kind": "output",
        "output": 11,
    }


def test_an_unknown_unit_kind_is_refused():
    with pytest.raises(ValueError, match="unknown unit kind 'triple'"):
        draw("triple", [Member(11, 7, 1)], seed=1, position=1)


def spa_members(prompts=(1, 2, 3), systems=(7, 8, 9), missing=()):
    return [Member(100 * p + s, s, p) for p in prompts for s in systems if (p, s) not in missing]


COMPARISONS = [(5, 7, 8), (6, 7, 9), (4, 8, 9)]


def check_spa_draw(p, members, comparisons, both_directions):
    systems = sorted({m.system_id for m in members})
    letters = [chr(ord("A") + i) for i in range(len(systems))]
    assert list(p["letters"]) == letters  # listed in letter order
    assert sorted(p["letters"].values()) == systems
    assert sorted(p["prompts"]) == sorted({m.prompt_id for m in members})
    assert sorted(p["writers"]) == letters
    by_cell = {(m.prompt_id, m.system_id): m.output_id for m in members}
    assert p["outputs"] == [
        by_cell[(pid, p["letters"][w])]
        for pid in p["prompts"]
        for w in p["writers"]
        if (pid, p["letters"][w]) in by_cell
    ]
    asked = [(cid, x, y) for cid, x, y in comparisons if x in systems and y in systems]
    forward = [q for q in p["questions"] if not q["reverse"]]
    reverse = [q for q in p["questions"] if q["reverse"]]
    assert p["questions"] == forward + reverse
    assert sorted(
        (q["comparison"], p["letters"][q["x"]], p["letters"][q["y"]]) for q in forward
    ) == sorted(asked)
    if both_directions and asked:
        assert sorted(
            (q["comparison"], p["letters"][q["y"]], p["letters"][q["x"]]) for q in reverse
        ) == sorted(asked)
        if len(reverse) > 1:
            assert reverse[0]["comparison"] != forward[-1]["comparison"]
    else:
        assert reverse == []


@pytest.mark.parametrize("both_directions", [False, True])
def test_an_spa_draw_letters_orders_and_asks_every_comparison_of_its_writers(both_directions):
    members = spa_members()
    for comparisons in (COMPARISONS, COMPARISONS[:2], COMPARISONS[:1], []):
        for position in range(1, 41):
            p = draw("spa_batch", members, 3, position, comparisons, both_directions)
            assert p["kind"] == "spa_batch"
            check_spa_draw(p, members, comparisons, both_directions)


def test_an_spa_draw_skips_comparisons_of_absent_writers_and_missing_cells():
    members = spa_members(systems=(7, 8), missing={(2, 8)})
    comparisons = [*COMPARISONS, (3, 8, 7)]
    for position in range(1, 21):
        p = draw("spa_batch", members, 11, position, comparisons, True)
        check_spa_draw(p, members, comparisons, True)
        assert len(p["outputs"]) == 5
        assert {q["comparison"] for q in p["questions"]} == {5, 3}


def test_spa_draws_vary_every_order_between_positions_and_replay_exactly():
    members = spa_members(prompts=(1, 2, 3, 4), systems=(7, 8, 9, 10))
    comparisons = [(1, 7, 8), (2, 7, 9), (3, 7, 10), (4, 8, 9), (5, 8, 10), (6, 9, 10)]
    draws = [draw("spa_batch", members, 21, pos, comparisons, True) for pos in range(1, 31)]
    for key in ("letters", "prompts", "writers", "questions"):
        assert len({repr(p[key]) for p in draws}) > 10, key
    # The twin rule moves a reverse question only when needed, and to a drawn place.
    firsts = {p["questions"][6]["comparison"] for p in draws}
    assert len(firsts) > 3
    again = [draw("spa_batch", members, 21, pos, comparisons, True) for pos in range(1, 31)]
    assert again == draws
    other_seed = [draw("spa_batch", members, 22, pos, comparisons, True) for pos in range(1, 31)]
    assert other_seed != draws
