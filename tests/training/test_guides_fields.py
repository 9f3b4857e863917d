"""The guide's read side and refusals field by field: what the sanitiser keeps, the diff's line
numbers and rulings, the order rulings are listed in, which drafts a page shows, where a bad
ruling is refused and why, and which gold answers a ruling flags.

Added after the mutation run of annotation/services/guides.py (bench/MUTATION.md), where each of
these could change without any test noticing.
"""

import pytest

from annotation.models import Unit
from annotation.services import calibration, guides, setup
from annotation.services.training_items import TrainingError, resolve_items
from tests.factories import UserFactory, enrol, make_study

pytestmark = pytest.mark.django_db


# --- the sanitiser -------------------------------------------------------------------------------


def test_an_empty_guide_renders_as_nothing():
    assert str(guides.render_markdown("")) == ""
    assert str(guides.render_markdown(None)) == ""


def test_links_other_than_http_https_and_mailto_lose_their_target():
    html = str(
        guides.render_markdown(
            "[ftp](ftp://example.org/f) [call](tel:+4412345) [web](https://example.org/w) "
            "[mail](mailto:lead@example.org) [page](/studies/)"
        )
    )
    assert "ftp:" not in html and "tel:" not in html
    for kept in ("https://example.org/w", "mailto:lead@example.org", "/studies/"):
        assert f'href="{kept}"' in html


def test_every_kept_link_opens_without_referrer_or_endorsement():
    html = str(guides.render_markdown("[doc](https://example.org/a)"))
    assert html == (
        '<p><a href="https://example.org/a" rel="noopener noreferrer nofollow">doc</a></p>'
    )


def test_attributes_outside_the_allow_list_are_dropped_even_harmless_ones():
    html = str(
        guides.render_markdown(
            '<table><tr><td colspan="2" align="left">cell</td></tr></table>\n\n'
            '<blockquote cite="https://example.org">quoted</blockquote>\n\n'
            '<ol start="3"><li>third</li></ol>'
        )
    )
    assert "<td>cell</td>" in html and "<blockquote>quoted</blockquote>" in html
    assert "colspan" not in html and "align=" not in html and "cite=" not in html
    assert '<ol start="3">' in html


def test_style_blocks_and_comments_leave_no_trace_in_the_page():
    html = str(
        guides.render_markdown(
            "<style>body { display: none }</style>\n\nVisible.\n\n<!-- note to self: draft -->"
        )
    )
    assert html.strip() == "<p>Visible.</p>"


# --- the diff ------------------------------------------------------------------------------------


def test_the_diff_numbers_each_line_in_the_version_it_belongs_to():
    study = make_study(n_prompts=2)
    v1 = guides.publish_version(study, body="one\ntwo\nthree\nfive")
    v2 = guides.publish_version(study, body="zero\none\n2\nthree\nfive")
    diff = guides.diff_versions(v1, v2)
    assert [(x.op, x.old_number, x.new_number, x.text) for x in diff.lines] == [
        ("added", None, 1, "zero"),
        ("same", 1, 2, "one"),
        ("removed", 2, None, "two"),
        ("added", None, 3, "2"),
        ("same", 3, 4, "three"),
        ("same", 4, 5, "five"),
    ]
    assert (diff.old, diff.new) == (v1, v2)


def test_moving_a_section_of_a_long_guide_with_repeated_lines_shows_only_that_section():
    # 70 sections of three lines, two of them the same in every section: over 200 lines, where
    # difflib's "popular line" heuristic would show the whole guide as removed and added.
    sections = [["| item | note |", "|---|---|", f"| {i} | x |"] for i in range(70)]
    study = make_study(n_prompts=2)
    v1 = guides.publish_version(study, body="\n".join(line for s in sections for line in s))
    moved = sections[1:] + sections[:1]
    v2 = guides.publish_version(study, body="\n".join(line for s in moved for line in s))
    diff = guides.diff_versions(v1, v2)
    assert (diff.added, diff.removed) == (3, 3)


def test_the_diff_lists_the_rulings_of_the_versions_in_between_only():
    study, other = make_study(n_prompts=2), make_study(n_prompts=2)
    guides.publish_version(other, body="o1", rulings=[guides.NewRuling("Theirs", "t")])
    guides.publish_version(other, body="o2", rulings=[guides.NewRuling("Theirs 2", "t")])
    v1 = guides.publish_version(study, body="v1", rulings=[guides.NewRuling("In v1", "a")])
    draft = guides.record_ruling(study, title="Draft for v3", text="c")
    guides.publish_version(study, body="v2", rulings=[guides.NewRuling("In v2", "b")])
    v3 = guides.publish_version(
        study, body="v3", rulings=[guides.NewRuling("In v3", "d")], include_drafts=[draft]
    )
    guides.publish_version(study, body="v4", rulings=[guides.NewRuling("In v4", "e")])
    titles = [r.title for r in guides.diff_versions(v1, v3).rulings_added]
    # by version, then as recorded: the draft (recorded before v2) comes with v3's
    assert titles == ["In v2", "Draft for v3", "In v3"]


# --- rulings in force and drafts ----------------------------------------------------------------


def test_rulings_are_listed_newest_version_first_then_newest_first_with_their_version():
    study = make_study(n_prompts=2)
    draft = guides.record_ruling(study, title="Drafted early", text="d")
    guides.publish_version(study, body="v1", rulings=[guides.NewRuling("Old", "o")])
    guides.publish_version(
        study,
        body="v2",
        rulings=[guides.NewRuling("First of v2", "a"), guides.NewRuling("Second of v2", "b")],
        include_drafts=[draft],
    )
    views = guides.rulings_in_force(study)
    assert [(v.ruling.title, v.version, v.newest) for v in views] == [
        ("Second of v2", 2, True),
        ("First of v2", 2, True),
        ("Drafted early", 2, True),  # recorded before version 1, published with version 2
        ("Old", 1, False),
    ]


def test_drafts_of_a_session_are_the_studys_drafts_and_the_sessions_own():
    study = make_study(n_prompts=3)
    raters = [enrol(study, user=UserFactory()).user for _ in range(2)]
    units = resolve_items(study, "p0:alpha, p1:alpha")
    session = calibration.open_session(study, title="Week", raters=raters, units=units)
    other = calibration.open_session(study, title="Week 2", raters=raters, units=units)
    guides.record_ruling(study, title="Lead's own", text="a")
    guides.record_ruling(study, title="From the session", text="b", session=session)
    guides.record_ruling(study, title="From the other", text="c", session=other)
    assert [r.title for r in guides.draft_rulings(study)] == [
        "Lead's own",
        "From the session",
        "From the other",
    ]
    assert [r.title for r in guides.draft_rulings(study, session)] == ["From the session"]


# --- refusals ------------------------------------------------------------------------------------


def refusal(**ruling):
    study = make_study(n_prompts=2)
    with pytest.raises(TrainingError) as error:
        guides.publish_version(
            study, body="v", rulings=[guides.NewRuling("Fine", "ok"), guides.NewRuling(**ruling)]
        )
    return error.value.field, error.value.message


def test_a_ruling_without_a_title_is_refused_on_its_row():
    assert refusal(title="  ", text="why") == ("ruling_2", "a ruling needs a short title")


def test_a_ruling_title_may_have_200_characters_and_no_more():
    assert refusal(title="t" * 201, text="why") == (
        "ruling_2",
        "the title is longer than 200 characters",
    )
    study = make_study(n_prompts=2)
    guides.publish_version(study, body="v", rulings=[guides.NewRuling("t" * 200, "why")])
    assert [len(v.ruling.title) for v in guides.rulings_in_force(study)] == [200]


def test_a_ruling_without_its_decision_is_refused_naming_it():
    assert refusal(title="Rice", text=" ") == ("ruling_2", "ruling 'Rice' needs its decision text")


def test_a_draft_ruling_is_refused_on_the_title_field():
    study = make_study(n_prompts=2)
    with pytest.raises(TrainingError) as error:
        guides.record_ruling(study, title="", text="why")
    assert (error.value.field, error.value.message) == ("title", "a ruling needs a short title")


# --- recalibration draw and flagged gold ---------------------------------------------------------


def test_the_same_seed_draws_the_same_recalibration_batch():
    study = make_study(n_prompts=12, systems=("alpha",))
    cited = tuple(resolve_items(study, ", ".join(f"p{i}" for i in range(12))))
    drawn = []
    for n in (1, 2):
        version = guides.publish_version(
            study,
            body=f"v{n}",
            rulings=[guides.NewRuling(f"R{n}", "because", examples=cited)],
            requires_recalibration=True,
            seed=7,
        )
        drawn.append(
            {
                Unit.objects.get(pk=u.pk).prompt.external_id
                for u in version.recalibration_units.all()
            }
        )
    assert len(drawn[0]) == guides.RECALIBRATION_BATCH and drawn[0] == drawn[1]


def test_a_ruling_without_examples_does_not_stop_the_next_one_flagging_gold():
    study = make_study(n_prompts=3)
    gold_unit = resolve_items(study, "p1:alpha")[0]
    setup.mark_gold(gold_unit, {"choice": "safe"})
    guides.publish_version(
        study,
        body="v1",
        rulings=[
            guides.NewRuling("General", "no example"),
            guides.NewRuling("Rice", "Unsafe", examples=(gold_unit,)),
        ],
    )
    assert [(g.unit_id, g.flagged_by_ruling.title) for g in guides.flagged_gold(study)] == [
        (gold_unit.pk, "Rice")
    ]


def test_each_study_sees_only_its_own_flagged_gold():
    study, other = make_study(n_prompts=2), make_study(n_prompts=2)
    for s in (study, other):
        unit = resolve_items(s, "p0:alpha")[0]
        setup.mark_gold(unit, {"choice": "safe"})
        guides.publish_version(
            s, body="v1", rulings=[guides.NewRuling("Rice", "Unsafe", examples=(unit,))]
        )
    assert [g.unit.study_id for g in guides.flagged_gold(study)] == [study.pk]
