"""The engine's invariants as one check over the database, shared by the race and state tests."""

from collections import Counter

from django.db.models import Count, Q

from annotation.models import Assignment, Label, Unit


def assert_invariants(study, now=None) -> None:
    """Fail with a message naming the broken invariant, if any."""
    live = Q(status__in=["leased", "submitted"])
    held = Counter(
        dict(
            Assignment.objects.filter(live, study=study, purpose="production")
            .values_list("unit_id")
            .annotate(n=Count("id"))
        )
    )
    for unit_id, overlap, open_slots, role in Unit.objects.filter(study=study).values_list(
        "id", "overlap", "open_slots", "role"
    ):
        assert 0 <= open_slots <= overlap, f"unit {unit_id}: open_slots {open_slots}"
        if role == "production":
            assert open_slots == overlap - held[unit_id], (
                f"unit {unit_id}: open_slots {open_slots} but {held[unit_id]} live of {overlap}"
            )
        else:
            assert held[unit_id] == 0, f"{role} unit {unit_id} has production work"

    production_labels = Counter(
        Label.objects.filter(study=study, purpose="production").values_list("unit_id", flat=True)
    )
    overlaps = dict(Unit.objects.filter(study=study).values_list("id", "overlap"))
    for unit_id, n in production_labels.items():
        assert n <= overlaps[unit_id], f"unit {unit_id} has {n} production labels"
    pairs = Counter(
        Label.objects.filter(study=study, purpose="production").values_list(
            "annotator_id", "unit_id"
        )
    )
    assert not [p for p, n in pairs.items() if n > 1], "an annotator labelled a unit twice"

    submitted = set(
        Assignment.objects.filter(study=study, status="submitted").values_list("id", flat=True)
    )
    labelled = list(Label.objects.filter(study=study).values_list("assignment_id", flat=True))
    assert len(labelled) == len(set(labelled)), "two labels on one assignment"
    assert set(labelled) == submitted, "submitted assignments and labels disagree"
    for field in ("purpose", "unit_id", "annotator_id"):
        mismatched = Label.objects.filter(study=study).exclude(
            **{field: models_f(f"assignment__{field}")}
        )
        assert not mismatched.exists(), f"label {field} differs from its assignment"

    for a in Assignment.objects.filter(study=study, purpose="repeat").select_related("repeat_of"):
        original = a.repeat_of
        assert original is not None, "repeat without its original"
        assert original.purpose == "production" and original.status == "submitted"
        assert (original.unit_id, original.annotator_id) == (a.unit_id, a.annotator_id)
        assert a.position > original.position + study.repeat_min_gap_units

    golds = Counter(
        Assignment.objects.filter(study=study, purpose__in=["gold", "attention"]).values_list(
            "annotator_id", "unit_id"
        )
    )
    assert all(n == 1 for n in golds.values()), "a gold unit was served twice to one annotator"

    first = Assignment.objects.filter(study=study, position=1).exclude(purpose="production")
    assert not first.exists(), "an injected unit at position 1"
    if now is not None:
        open_leases = Counter(
            Assignment.objects.filter(study=study, status="leased", expires_at__gt=now).values_list(
                "annotator_id", flat=True
            )
        )
        assert all(n == 1 for n in open_leases.values()), "two open leases for one annotator"


def models_f(name):
    from django.db.models import F

    return F(name)
