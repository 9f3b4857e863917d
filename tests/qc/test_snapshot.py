"""The snapshot a report is computed from (qc.loaders.load_snapshot), field by field: which labels
count, in what order, with which context, on a study small enough to write every array down.

The report tests check what reaches the page; these check the loader itself, so that a mistake in
it cannot hide behind an aggregate that happens to come out the same. Found by the mutation run of
qc/loaders.py (bench/MUTATION.md).
"""

from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from annotation.models import Assignment, GuideVersion, Label, Study, Unit, UnitOutput
from annotation.services import setup
from qc import loaders
from qc.models import ReportOptions
from tests.factories import UserFactory, enrol, make_study
from tests.qc.labels import add_labels, add_spa_label

pytestmark = pytest.mark.django_db


def units_of(study):
    return list(Unit.objects.filter(study=study).order_by("id"))


def ids(labels):
    return [lab.pk for lab in labels]


@pytest.fixture
def categorical():
    """Four units: hidden gold, attention, two production; labels of four purposes, a later
    duplicate, a label from two days ago, and an open production lease."""
    study = make_study(Study.TaskKind.CATEGORICAL, n_prompts=4, systems=("alpha",))
    gold, attention, first, second = units_of(study)
    setup.mark_gold(gold, {"choice": "unsafe"})
    setup.mark_gold(attention, {"choice": "safe"}, role=Unit.Role.ATTENTION)
    ann, bob, cy = (UserFactory(username=n) for n in ("snap-ann", "snap-bob", "snap-cy"))
    earlier = timezone.now() - timedelta(days=2)
    (p1,) = add_labels(study, [{"unit": first, "annotator": ann, "choice": "safe"}])
    (p2,) = add_labels(
        study, [{"unit": first, "annotator": bob, "choice": "unsafe", "created_at": earlier}]
    )
    (g1,) = add_labels(study, [{"unit": gold, "annotator": ann, "choice": "unsafe"}], "gold")
    # A late submit: the first lease had expired and the unit came back to the same annotator.
    Assignment.objects.filter(label=p1).update(status=Assignment.Status.EXPIRED)
    (dup,) = add_labels(study, [{"unit": first, "annotator": ann, "choice": "unsafe"}])
    (rep,) = add_labels(study, [{"unit": second, "annotator": cy, "choice": "safe"}], "repeat")
    (att,) = add_labels(
        study, [{"unit": attention, "annotator": cy, "choice": "safe"}], "attention"
    )
    now = timezone.now()
    Assignment.objects.create(
        study=study,
        unit=second,
        annotator=cy,
        purpose="production",
        status=Assignment.Status.LEASED,
        position=99,
        leased_at=now,
        expires_at=now + timedelta(minutes=30),
    )
    return {
        "study": study,
        "units": (gold, attention, first, second),
        "people": (ann, bob, cy),
        "labels": (p1, p2, g1, dup, rep, att),
        "earlier": earlier,
    }


def test_the_snapshot_counts_first_labels_on_production_and_gold_units_in_id_order(categorical):
    study = categorical["study"]
    gold, _, first, _ = categorical["units"]
    ann, bob, _ = categorical["people"]
    p1, p2, g1, *_ = categorical["labels"]
    snap = loaders.load_snapshot(study)
    assert snap.study_id == study.id
    assert snap.label_id.tolist() == [p1.pk, p2.pk, g1.pk]
    assert snap.unit.tolist() == [first.pk, first.pk, gold.pk]
    assert snap.annotator.tolist() == [ann.pk, bob.pk, ann.pk]
    assert snap.choice.tolist() == ["safe", "unsafe", "unsafe"]
    assert np.isnan(snap.score).all() and snap.winner.tolist() == [0, 0, 0]
    assert snap.label_gold.tolist() == [False, False, True]
    assert snap.later_duplicates == 1


def test_the_snapshot_counts_every_label_of_the_study_by_purpose(categorical):
    snap = loaders.load_snapshot(categorical["study"])
    labels = categorical["labels"]
    assert snap.label_count == 6 and snap.newest_label_id == max(ids(labels))
    assert snap.label_purposes == {"attention": 1, "gold": 1, "production": 3, "repeat": 1}
    assert (snap.label_count, snap.newest_label_id) == loaders.label_counts(categorical["study"].id)


def test_the_snapshot_lists_production_and_gold_units_with_their_context(categorical):
    study = categorical["study"]
    gold, attention, first, second = categorical["units"]
    snap = loaders.load_snapshot(study)
    counted = [gold, first, second]
    assert snap.unit_ids.tolist() == [u.pk for u in counted]
    assert snap.unit_overlap.tolist() == [u.overlap for u in counted]
    assert snap.unit_tokens.tolist() == [u.token for u in counted]
    assert snap.unit_gold.tolist() == [True, False, False]
    assert snap.production_units.tolist() == [first.pk, second.pk]
    assert snap.leased_units.tolist() == [second.pk]
    assert snap.unit_prompt.tolist() == ["p0", "p2", "p3"]
    assert snap.unit_systems.tolist() == ["alpha"] * 3
    assert snap.unit_output.tolist() == ["p0:alpha", "p2:alpha", "p3:alpha"]
    alpha = study.systems.get().pk
    # The design diagnostics count every unit's systems, attention checks included.
    assert snap.member_unit.tolist() == [gold.pk, attention.pk, first.pk, second.pk]
    assert snap.member_system.tolist() == [alpha] * 4
    assert snap.system_names == {alpha: "alpha"}
    assert snap.gold_units.tolist() == [gold.pk] and snap.gold_values.tolist() == ["unsafe"]


def test_the_snapshot_names_its_annotators_and_counts_them_by_day(categorical):
    ann, bob, _ = categorical["people"]
    p1, p2, g1, *_ = categorical["labels"]
    snap = loaders.load_snapshot(categorical["study"])
    assert snap.annotator_names == {ann.pk: "snap-ann", bob.pk: "snap-bob"}
    assert snap.annotators_total == 2
    assert snap.annotators_active_7d == 2
    earlier = timezone.localtime(categorical["earlier"]).date().isoformat()
    today = timezone.localdate().isoformat()
    assert snap.days == [(earlier, 1, p2.pk, 1), (today, 2, max(p1.pk, g1.pk), 1)]


def test_an_annotator_without_a_label_this_week_is_not_active(categorical):
    study = categorical["study"]
    _, bob, _ = categorical["people"]
    # Seven days and a half ago: outside the week, inside any longer window.
    last_week = timezone.now() - timedelta(days=7, hours=12)
    Label.objects.filter(annotator=bob).update(created_at=last_week)
    snap = loaders.load_snapshot(study)
    assert snap.annotators_total == 2 and snap.annotators_active_7d == 1


def test_a_study_of_one_output_still_names_its_prompt_system_and_output():
    study = make_study(Study.TaskKind.CATEGORICAL, n_prompts=1, systems=("alpha",))
    snap = loaders.load_snapshot(study)
    assert snap.unit_prompt.tolist() == ["p0"]
    assert snap.unit_systems.tolist() == ["alpha"]
    assert snap.unit_output.tolist() == ["p0:alpha"]


def test_a_score_of_zero_is_a_score_and_a_missing_one_is_nan():
    study = make_study(Study.TaskKind.CONTINUOUS, n_prompts=3, systems=("alpha",))
    a, b, c = units_of(study)
    person = UserFactory()
    add_labels(
        study,
        [
            {"unit": a, "annotator": person, "score": 0.0},
            {"unit": b, "annotator": person, "score": 100.0},
            {"unit": c, "annotator": person},
        ],
    )
    snap = loaders.load_snapshot(study)
    assert snap.score[:2].tolist() == [0.0, 100.0] and np.isnan(snap.score[2])
    assert snap.choice.tolist() == ["", "", ""]


def test_a_pairwise_snapshot_knows_each_units_canonical_sides_and_the_winners():
    study = make_study(Study.TaskKind.PAIRWISE, n_prompts=3, systems=("alpha", "beta"))
    make_study(Study.TaskKind.PAIRWISE, n_prompts=1, systems=("alpha", "beta"))  # not loaded
    one, two, check = units_of(study)
    alpha, beta = study.systems.order_by("name")
    setup.mark_gold(check, {"winner": "tie"}, role=Unit.Role.ATTENTION)  # not counted
    setup.mark_gold(two, {"winner": alpha.pk})  # an expert answer names the system by id
    person = UserFactory()
    add_labels(
        study,
        [
            {"unit": one, "annotator": person, "choice": "left", "winner": beta},
            {"unit": two, "annotator": person, "choice": "tie"},
        ],
    )
    snap = loaders.load_snapshot(study)
    assert snap.winner.tolist() == [beta.pk, 0]
    assert snap.pair_unit.tolist() == [one.pk, two.pk]
    sides = {u.pk: [m.output.system_id for m in u.members.order_by("position")] for u in (one, two)}
    assert snap.pair_left.tolist() == [sides[one.pk][0], sides[two.pk][0]]
    assert snap.pair_right.tolist() == [sides[one.pk][1], sides[two.pk][1]]
    names = {alpha.pk: "alpha", beta.pk: "beta"}
    assert snap.unit_systems.tolist() == [
        f"{names[sides[u.pk][0]]} | {names[sides[u.pk][1]]}" for u in (one, two)
    ]
    assert snap.unit_prompt.tolist() == ["p0", "p1"]
    assert snap.unit_output.tolist() == ["", ""]  # "prompt:system" names one output only
    assert snap.gold_units.tolist() == [two.pk] and snap.gold_values.tolist() == ["alpha"]
    assert snap.spa is None


def test_pairwise_units_list_their_own_systems_by_position_not_by_row_or_output_order():
    # comparisons alpha~beta and beta~gamma: two units on the one prompt, with different pairs
    study = make_study(Study.TaskKind.PAIRWISE, n_prompts=1, systems=("alpha", "beta", "gamma"))
    units = units_of(study)
    first, second = units[0].members.order_by("id")
    # swap the first unit's sides: the output shown first is now the later row, larger output id
    UnitOutput.objects.filter(pk=first.pk).update(position=2)
    UnitOutput.objects.filter(pk=second.pk).update(position=0)
    UnitOutput.objects.filter(pk=first.pk).update(position=1)
    shown = [[m.output.system.name for m in u.members.order_by("position")] for u in units]
    assert shown[0] == [second.output.system.name, first.output.system.name]
    assert len(units) == 2 and shown[0][1] != shown[1][1]
    snap = loaders.load_snapshot(study)
    assert snap.unit_systems.tolist() == [" | ".join(names) for names in shown]


def test_an_spa_snapshot_keeps_the_answers_and_ratings_of_counted_labels_only():
    study = make_study(
        Study.TaskKind.SPA,
        n_prompts=2,
        systems=("a", "b"),
        spa_exposure_m=2,
        spa_collect_likert=True,
    )
    (unit,) = units_of(study)
    comparison = study.comparisons.get()
    outputs = [m.output for m in unit.members.order_by("position").select_related("output")]
    ann, bob = UserFactory(), UserFactory()
    counted = add_spa_label(study, unit, ann, [(comparison, False, 70.0)], [(outputs[0], 4.0)])
    Assignment.objects.filter(label=counted).update(status=Assignment.Status.EXPIRED)
    later = add_spa_label(study, unit, ann, [(comparison, False, 10.0)], [(outputs[0], 1.0)])
    other = add_spa_label(study, unit, bob, [(comparison, True, 35.0)], [(outputs[1], 2.0)])
    Label.objects.filter(pk=other.pk).update(purpose="repeat")
    snap = loaders.load_snapshot(study)
    assert snap.label_id.tolist() == [counted.pk]
    answers, ratings = snap.spa["answers"], snap.spa["ratings"]
    assert answers.tolist() == [(counted.pk, ann.pk, comparison.pk, False, 70.0)]
    assert ratings.tolist() == [(counted.pk, ann.pk, outputs[0].system_id, outputs[0].pk, 4.0)]
    assert later.pk not in answers["label"].tolist()
    assert snap.unit_prompt.tolist() == ["p0 p1"] or snap.unit_prompt.tolist() == ["p1 p0"]
    assert sorted(snap.unit_systems[0].split(" | ")) == ["a", "b"]
    assert snap.unit_output.tolist() == [""]


def test_an_spa_batch_of_three_outputs_names_its_prompt_and_every_system():
    study = make_study(Study.TaskKind.SPA, n_prompts=1, systems=("a", "b", "c"), spa_exposure_m=1)
    (unit,) = units_of(study)
    shown = [m.output.system.name for m in unit.members.order_by("position")]
    assert sorted(shown) == ["a", "b", "c"]
    snap = loaders.load_snapshot(study)
    assert snap.unit_prompt.tolist() == ["p0"]
    assert snap.unit_systems.tolist() == [" | ".join(shown)]
    assert snap.unit_output.tolist() == [""]


def test_a_cut_keeps_only_the_pools_labels_and_the_guide_versions():
    study = make_study(Study.TaskKind.CATEGORICAL, n_prompts=2, systems=("alpha",))
    one, two = units_of(study)
    inside, outside = enrol(study, pool="expert").user, enrol(study, pool="open_crowd").user
    labels = add_labels(
        study,
        [
            {"unit": one, "annotator": inside, "choice": "safe"},
            {"unit": one, "annotator": outside, "choice": "safe"},
            {"unit": two, "annotator": inside, "choice": "unsafe"},
        ],
    )
    ReportOptions.objects.create(study=study, pool="expert")
    snap = loaders.load_snapshot(study)
    assert snap.label_id.tolist() == [labels[0].pk, labels[2].pk]
    assert snap.label_count == 3  # the fingerprint still counts every label


# The report's settings ------------------------------------------------------------------------


def test_every_setting_changes_the_settings_hash():
    base = loaders.ReportConfig(task_kind="categorical")
    changed = {
        "task_kind": "ordinal",
        "categories": ("a", "b"),
        "category_texts": (("a", "A"),),
        "spa_tau": 1.1,
        "spa_both_directions": True,
        "comparisons": ((1, 2, "x", 3, "y", ""),),
        "systems": ((2, "x"),),
        "unanimous_view": True,
        "clamp_gold": True,
        "pool": "A",
        "guide_version": 2,
        "ordinal_as_interval": True,
        "n_boot": 999,
        "n_boot_over_time": 99,
        "seed": 1,
        "version": loaders.REPORT_VERSION + 1,
    }
    assert set(changed) == set(base.as_dict())
    hashes = {base.settings_hash}
    listed = {"category_texts", "comparisons", "systems"}
    for name, value in changed.items():
        other = loaders.ReportConfig(**{"task_kind": "categorical", name: value})
        shown = [list(v) for v in value] if name in listed else value
        assert other.as_dict()[name] == (list(value) if name == "categories" else shown)
        hashes.add(other.settings_hash)
    assert len(hashes) == len(changed) + 1


def test_the_settings_hash_is_the_sha256_of_the_sorted_compact_settings():
    import hashlib
    import json

    config = loaders.ReportConfig(task_kind="likert", categories=(1.0, 2.0), seed=3)
    raw = json.dumps(config.as_dict(), sort_keys=True, separators=(",", ":"))
    assert config.settings_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert loaders.fingerprint(5, 9, "abc") == hashlib.sha256(b"5:9:abc").hexdigest()


def test_the_report_config_reads_the_study_and_the_leads_options(settings):
    settings.CONCORD_QC_BOOTSTRAP = 77
    settings.CONCORD_QC_BOOTSTRAP_OVER_TIME = 11
    study = make_study(Study.TaskKind.PAIRWISE, n_prompts=1, systems=("x", "y"))
    config = loaders.report_config(study)
    x, y = study.systems.order_by("id")
    comparison = study.comparisons.get()
    assert config.task_kind == "pairwise"
    assert config.systems == ((x.pk, "x"), (y.pk, "y"))
    assert config.comparisons == ((comparison.pk, x.pk, "x", y.pk, "y", comparison.expected),)
    assert (config.n_boot, config.n_boot_over_time) == (77, 11)
    assert (config.unanimous_view, config.clamp_gold, config.pool) == (False, False, "")
    assert (config.guide_version, config.ordinal_as_interval) == (None, False)
    ReportOptions.objects.create(
        study=study,
        unanimous_view=True,
        clamp_gold=True,
        pool="B",
        guide_version=3,
        ordinal_as_interval=True,
    )
    config = loaders.report_config(study)
    assert (config.unanimous_view, config.clamp_gold, config.pool) == (True, True, "B")
    assert (config.guide_version, config.ordinal_as_interval) == (3, True)


def test_the_declared_scale_and_its_texts_per_task_kind():
    labels = {"labels": [{"value": "lo", "text": "Low"}, {"value": "hi", "text": ""}]}
    points = [{"value": 1, "text": "Poor"}, {"value": 2.5, "text": ""}, {"value": 3, "text": "3"}]
    for kind in ("categorical", "ordinal"):
        study = Study(task_kind=kind, label_scheme=labels)
        assert loaders.declared_categories(study) == ("lo", "hi")
        assert loaders.declared_texts(study) == (("lo", "Low"), ("hi", "hi"))
    likert = Study(task_kind="likert", label_scheme={"points": points})
    spa = Study(task_kind="spa", label_scheme={"likert_points": points})
    for study in (likert, spa):
        assert loaders.declared_categories(study) == (1.0, 2.5, 3.0)
        assert loaders.declared_texts(study) == ((1.0, "1 (Poor)"), (2.5, "2.5"), (3.0, "3"))
    for kind in ("continuous", "pairwise"):
        study = Study(task_kind=kind, label_scheme={"points": points})
        assert loaders.declared_categories(study) == () and loaders.declared_texts(study) == ()
    assert loaders.declared_texts(Study(task_kind="spa", label_scheme={})) == ()


def test_first_labels_keep_the_lowest_id_per_annotator_and_unit_whatever_the_id_size():
    label_id = np.arange(1, 7)
    annotator = np.array([5, 5, 6, 5, 6, 7])
    unit = np.array([1, 2, 1, 1, 1, 2])
    expected = [True, True, True, False, False, True]
    assert loaders.first_labels(label_id, annotator, unit).tolist() == expected
    big = np.int64(2**40)
    assert loaders.first_labels(label_id, annotator + big, unit).tolist() == expected
    assert loaders.first_labels(label_id, annotator, unit + big).tolist() == expected
    assert loaders.first_labels(label_id, annotator - 10, unit).tolist() == expected
    assert loaders.first_labels(np.zeros(0), np.zeros(0), np.zeros(0)).tolist() == []


def test_a_pool_cut_reads_the_pool_of_this_studys_enrolment_only():
    study = make_study(Study.TaskKind.CATEGORICAL, n_prompts=1, systems=("alpha",))
    other = make_study(Study.TaskKind.CATEGORICAL, n_prompts=1, systems=("alpha",))
    (unit,) = units_of(study)
    crowd_here = enrol(study, pool="open_crowd").user
    enrol(other, user=crowd_here, pool="expert")  # an expert elsewhere, not in this study
    expert = enrol(study, pool="expert").user
    labels = add_labels(
        study,
        [
            {"unit": unit, "annotator": crowd_here, "choice": "safe"},
            {"unit": unit, "annotator": expert, "choice": "safe"},
        ],
    )
    ReportOptions.objects.create(study=study, pool="expert")
    assert loaders.load_snapshot(study).label_id.tolist() == [labels[1].pk]


def test_a_pool_and_a_guide_version_cut_keep_the_labels_that_meet_both():
    study = make_study(Study.TaskKind.CATEGORICAL, n_prompts=2, systems=("alpha",))
    one, two = units_of(study)
    first = GuideVersion.objects.create(study=study, number=1, body="v1")
    second = GuideVersion.objects.create(study=study, number=2, body="v2")
    expert, crowd = enrol(study, pool="expert").user, enrol(study, pool="open_crowd").user
    rows = [
        (expert, one, first),  # both: kept
        (expert, two, second),  # the pool only
        (crowd, one, first),  # the guide version only
        (crowd, two, second),  # neither
    ]
    labels = add_labels(
        study, [{"unit": u, "annotator": who, "choice": "safe"} for who, u, _ in rows]
    )
    for label, (_, _, version) in zip(labels, rows, strict=True):
        Label.objects.filter(pk=label.pk).update(guide_version=version)
    ReportOptions.objects.create(study=study, pool="expert", guide_version=1)
    assert loaders.load_snapshot(study).label_id.tolist() == [labels[0].pk]


def test_labels_of_another_study_never_enter_a_snapshot(categorical):
    other = make_study(Study.TaskKind.CATEGORICAL, n_prompts=1, systems=("alpha",))
    (unit,) = units_of(other)
    (elsewhere,) = add_labels(other, [{"unit": unit, "annotator": UserFactory(), "choice": "x"}])
    setup.mark_gold(unit, {"choice": "safe"})
    now = timezone.now()
    leases = [
        (other, unit, "production"),
        (categorical["study"], categorical["units"][2], "repeat"),
    ]
    for study, leased_unit, purpose in leases:
        Assignment.objects.create(
            study=study,
            unit=leased_unit,
            annotator=UserFactory(),
            purpose=purpose,
            status=Assignment.Status.LEASED,
            position=1,
            leased_at=now,
            expires_at=now + timedelta(minutes=30),
        )
    snap = loaders.load_snapshot(categorical["study"])
    assert elsewhere.pk not in snap.label_id.tolist()
    assert snap.label_id.tolist() == ids(categorical["labels"][:3])
    gold, _, first, second = categorical["units"]
    assert snap.unit_ids.tolist() == [gold.pk, first.pk, second.pk]
    assert snap.gold_units.tolist() == [gold.pk] and snap.gold_values.tolist() == ["unsafe"]
    # Only production leases of this study count as open slots.
    assert snap.leased_units.tolist() == [second.pk]


def test_a_day_counts_each_of_its_annotators_once():
    """Two annotators on one day, one of them twice: the day has three labels and two
    annotators (the over-time chart's "annotators per day")."""
    study = make_study(Study.TaskKind.CATEGORICAL, n_prompts=3, systems=("alpha",))
    one, two, three = units_of(study)
    ann, bob, cy = (UserFactory(username=n) for n in ("day-ann", "day-bob", "day-cy"))
    earlier = timezone.now() - timedelta(days=2)
    labels = add_labels(
        study,
        [
            {"unit": one, "annotator": ann, "choice": "safe"},
            {"unit": two, "annotator": ann, "choice": "safe"},
            {"unit": one, "annotator": bob, "choice": "unsafe"},
            {"unit": three, "annotator": cy, "choice": "safe", "created_at": earlier},
        ],
    )
    snap = loaders.load_snapshot(study)
    day = timezone.localtime(earlier).date().isoformat()
    today = timezone.localdate().isoformat()
    assert snap.days == [(day, 1, labels[3].pk, 1), (today, 3, labels[2].pk, 2)]
