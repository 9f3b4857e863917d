"""The versioned guide: safe Markdown, versions with rulings, diffs, recalibration batches and
gold answers flagged by new rulings."""

import pytest

from annotation.models import GoldAnswer, GuideVersion, Ruling, Unit
from annotation.services import guides, setup
from annotation.services.training_items import TrainingError, resolve_items
from tests.factories import make_study

pytestmark = pytest.mark.django_db

HOSTILE = """# Storage

Rice kept on the counter is **Unsafe**.

<script>alert('x')</script>
<img src="x" onerror="alert('img')">
<a href="javascript:alert('js')">click</a>
<a href="/ok" hx-get="/api/steal" hx-trigger="load" onclick="alert(1)">ok link</a>
[md link](javascript:alert('md'))
<div hx-post="/x" style="color:red">styled</div>
<iframe src="https://example.org"></iframe>
"""


def test_guide_markdown_renders_inert_whatever_the_lead_writes():
    html = str(guides.render_markdown(HOSTILE))
    assert "<h1>Storage</h1>" in html and "<strong>Unsafe</strong>" in html
    lowered = html.lower()
    for bad in (
        "<script",
        "alert('x')",
        "onerror",
        "javascript:",
        "hx-",
        "onclick",
        "style=",
        "<iframe",
        "<img",
    ):
        assert bad not in lowered, bad
    assert 'href="/ok"' in html and "noopener" in html


def test_markdown_keeps_lists_tables_and_safe_links():
    html = str(
        guides.render_markdown(
            "- a\n- b\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\n[doc](https://example.org/a)"
        )
    )
    assert "<li>a</li>" in html and "<table>" in html and 'href="https://example.org/a"' in html


def test_versions_are_numbered_and_rulings_cite_real_items():
    study = make_study(n_prompts=3)
    v1 = guides.publish_version(study, body="Judge safety only.")
    item = resolve_items(study, "p1:alpha")
    v2 = guides.publish_version(
        study,
        body="Judge safety only.\nReheating does not make stored rice safe.",
        changes="Rice",
        rulings=[
            guides.NewRuling(
                "Reheat is not enough", "Counter rice stays Unsafe.", examples=tuple(item)
            )
        ],
    )
    assert (v1.number, v2.number) == (1, 2)
    ruling = Ruling.objects.get()
    assert ruling.guide_version == v2 and list(ruling.examples.all()) == item
    views = guides.rulings_in_force(study)
    assert [v.ruling for v in views] == [ruling] and views[0].newest
    assert "Output of alpha for prompt 1" in views[0].examples[0].outputs[0]
    assert guides.rulings_in_force(study, v1) == []


def test_the_newest_rulings_are_marked_and_older_ones_are_not():
    study = make_study(n_prompts=2)
    guides.publish_version(study, body="v1", rulings=[guides.NewRuling("Old", "old")])
    guides.publish_version(study, body="v2", rulings=[guides.NewRuling("New", "new")])
    views = guides.rulings_in_force(study)
    assert [(v.ruling.title, v.newest) for v in views] == [("New", True), ("Old", False)]


def test_an_item_reference_that_matches_nothing_names_the_entry():
    study = make_study(n_prompts=2)
    with pytest.raises(TrainingError) as error:
        resolve_items(study, "p0, p9:alpha", field="ruling_1")
    assert error.value.field == "ruling_1" and "item 2" in error.value.message
    assert "'p9:alpha'" in error.value.message


def test_a_bad_ruling_writes_nothing():
    study = make_study(n_prompts=2)
    with pytest.raises(TrainingError):
        guides.publish_version(study, body="x", rulings=[guides.NewRuling("Title", "")])
    assert not GuideVersion.objects.exists() and not Ruling.objects.exists()


def test_the_diff_marks_added_and_removed_lines_and_new_rulings():
    study = make_study(n_prompts=2)
    v1 = guides.publish_version(study, body="one\ntwo\nthree")
    v2 = guides.publish_version(
        study, body="one\n2\nthree\nfour", rulings=[guides.NewRuling("R", "because")]
    )
    diff = guides.diff_versions(v1, v2)
    ops = [(line.op, line.text) for line in diff.lines]
    assert ops == [
        ("same", "one"),
        ("removed", "two"),
        ("added", "2"),
        ("same", "three"),
        ("added", "four"),
    ]
    assert (diff.added, diff.removed) == (2, 1)
    assert [r.title for r in diff.rulings_added] == ["R"]


def test_recalibration_items_are_drawn_from_the_cited_items_as_calibration_copies():
    study = make_study(n_prompts=4)
    cited = resolve_items(study, "p0, p1")
    version = guides.publish_version(
        study,
        body="v1",
        rulings=[guides.NewRuling("R", "because", examples=tuple(cited))],
        requires_recalibration=True,
        seed=1,
    )
    batch = list(version.recalibration_units.all())
    # every distinct cited item once, up to the batch size
    assert len(batch) == min(len({u.pk for u in cited}), guides.RECALIBRATION_BATCH)
    assert all(u.role == Unit.Role.CALIBRATION for u in batch)
    cited_outputs = {m.output_id for u in cited for m in u.members.all()}
    assert all(m.output_id in cited_outputs for u in batch for m in u.members.all())
    # the real units keep their role and slots
    assert all(Unit.objects.get(pk=u.pk).role == Unit.Role.PRODUCTION for u in cited)


def test_a_recalibration_batch_drawn_from_many_cited_items_has_exactly_the_batch_size():
    study = make_study(n_prompts=6)
    cited = resolve_items(study, "p0, p1, p2, p3, p4, p5")
    assert len({u.pk for u in cited}) > guides.RECALIBRATION_BATCH
    version = guides.publish_version(
        study,
        body="v1",
        rulings=[guides.NewRuling("R", "because", examples=tuple(cited))],
        requires_recalibration=True,
        seed=1,
    )
    batch = list(version.recalibration_units.all())
    assert len(batch) == guides.RECALIBRATION_BATCH
    sources = [frozenset(m.output_id for m in u.members.all()) for u in batch]
    assert len(set(sources)) == len(batch)  # no cited item drawn twice


def test_a_recalibration_version_without_items_is_refused():
    study = make_study(n_prompts=2)
    with pytest.raises(TrainingError) as error:
        guides.publish_version(study, body="v", requires_recalibration=True)
    assert error.value.field == "recalibration_items"
    assert not GuideVersion.objects.exists()


def test_gold_answers_on_cited_items_are_flagged_until_confirmed_or_updated():
    study = make_study(n_prompts=3)
    gold_unit = unit_of_system(study, "p1", "alpha")
    other_gold = unit_of_system(study, "p2", "alpha")
    setup.mark_gold(gold_unit, {"choice": "safe"})
    setup.mark_gold(other_gold, {"choice": "safe"})
    guides.publish_version(study, body="v1")
    guides.publish_version(
        study,
        body="v2",
        rulings=[
            guides.NewRuling("Rice", "Unsafe", examples=tuple(resolve_items(study, "p1:alpha")))
        ],
    )
    flagged = list(guides.flagged_gold(study))
    assert [g.unit_id for g in flagged] == [gold_unit.pk]
    guides.resolve_flag(flagged[0], answer="unsafe")
    gold = GoldAnswer.objects.get(unit=gold_unit)
    assert gold.value == {"choice": "unsafe"} and gold.flagged_by_ruling is None
    assert gold.guide_version.number == 2
    assert not guides.flagged_gold(study).exists()


def unit_of_system(study, prompt_id, system):
    return Unit.objects.get(
        study=study, prompt__external_id=prompt_id, members__output__system__name=system
    )


def test_rulings_in_force_and_drafts_are_each_studys_own():
    study, other = make_study(n_prompts=2), make_study(n_prompts=2)
    guides.publish_version(study, body="v1", rulings=[guides.NewRuling("Ours", "ours")])
    guides.publish_version(other, body="v1", rulings=[guides.NewRuling("Theirs", "theirs")])
    guides.publish_version(other, body="v2", rulings=[guides.NewRuling("Theirs too", "2")])
    Ruling.objects.create(study=study, title="Our draft", text="d")
    Ruling.objects.create(study=other, title="Their draft", text="d")
    assert [v.ruling.title for v in guides.rulings_in_force(study)] == ["Ours"]
    assert [r.title for r in guides.draft_rulings(study)] == ["Our draft"]
    assert [v.ruling.title for v in guides.rulings_in_force(other)] == ["Theirs too", "Theirs"]
