"""What the lead's test builder proposes: real items on which production raters split (boundary)
or agreed (easy), counted in the study's own answers, in the order the builder shows them.

Added after the mutation run of annotation/services/qualification.py (bench/MUTATION.md): the
proposals' order, the two-label threshold, pairwise and Likert splits, and items already in the
test were not checked by any test.
"""

import pytest
from django.urls import reverse

from annotation.models import Membership, Study, UnitOutput
from annotation.services import qualification
from tests.factories import MembershipFactory, enrol, make_study
from tests.qc.labels import add_labels
from tests.training.helpers import unit_of

pytestmark = pytest.mark.django_db

SAFE, UNSAFE = {"choice": "safe"}, {"choice": "unsafe"}


def labelled(study, answers: dict):
    """Production labels: prompt id -> one dict of label fields per rater."""
    raters = [enrol(study).user for _ in range(max(len(fields) for fields in answers.values()))]
    add_labels(
        study,
        [
            {"unit": unit_of(study, prompt), "annotator": raters[i], **fields}
            for prompt, labels in answers.items()
            for i, fields in enumerate(labels)
        ],
    )


def proposals(client, study):
    """The builder's boundary and easy proposals as (prompt id, split, labels), in page order."""
    client.force_login(MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user)
    context = client.get(reverse("qualification-builder", args=[study.token])).context

    def rows(name):
        return [(r["c"].unit.prompt.external_id, r["c"].split, r["c"].n) for r in context[name]]

    return rows("boundary"), rows("easy")


def test_the_most_disputed_items_come_first_then_the_most_labelled_from_two_labels_up(client):
    study = make_study(n_prompts=6, systems=("alpha",))
    labelled(
        study,
        {
            "p0": [SAFE, UNSAFE],  # 1:1, two labels
            "p1": [SAFE, UNSAFE, SAFE, UNSAFE],  # 2:2, four labels
            "p2": [SAFE, UNSAFE, SAFE],  # 2:1
            "p3": [SAFE, SAFE, SAFE],
            "p4": [UNSAFE, UNSAFE, UNSAFE, UNSAFE],
            "p5": [SAFE, SAFE],
        },
    )
    boundary, easy = proposals(client, study)
    assert [(prompt, dict(split), n) for prompt, split, n in boundary] == [
        ("p1", {"Safe": 2, "Unsafe": 2}, 4),
        ("p0", {"Safe": 1, "Unsafe": 1}, 2),
        ("p2", {"Safe": 2, "Unsafe": 1}, 3),
    ]
    assert easy == [
        ("p4", (("Unsafe", 4),), 4),
        ("p3", (("Safe", 3),), 3),
        ("p5", (("Safe", 2),), 2),
    ]


def test_an_item_put_in_the_test_leaves_the_proposals_and_the_others_stay(client):
    make_study(n_prompts=3, systems=("alpha",))  # units first: unit ids and item ids differ
    study = make_study(n_prompts=3, systems=("alpha",))
    labelled(study, {"p0": [SAFE, UNSAFE, SAFE], "p1": [UNSAFE, SAFE, SAFE], "p2": [SAFE] * 3})
    source = unit_of(study, "p0")
    item = qualification.add_item(study, source, answer="safe", difficulty="boundary")
    assert item.pk != source.pk
    boundary, easy = proposals(client, study)
    assert [prompt for prompt, _, _ in boundary] == ["p1"]
    assert [prompt for prompt, _, _ in easy] == ["p2"]


def test_a_pairwise_split_counts_the_canonical_side_that_won_on_whichever_side_it_was_shown(
    client,
):
    study = make_study(Study.TaskKind.PAIRWISE, n_prompts=2, systems=("alpha", "beta"))

    def sides(prompt):
        """The unit's (canonical first, second) systems."""
        rows = UnitOutput.objects.filter(unit=unit_of(study, prompt)).order_by("position")
        return [row.output.system for row in rows.select_related("output__system")]

    first, second = sides("p0")
    _, second_1 = sides("p1")
    labelled(
        study,
        {
            "p0": [
                {"choice": "left", "winner": first},
                {"choice": "right", "winner": first},
                {"choice": "left", "winner": second},
            ],
            "p1": [
                {"choice": "left", "winner": second_1},
                {"choice": "right", "winner": second_1},
                {"choice": "left", "winner": second_1},
            ],
        },
    )
    boundary, easy = proposals(client, study)
    assert boundary == [
        ("p0", (("The first response is better", 2), ("The second is better", 1)), 3)
    ]
    assert easy == [("p1", (("The second is better", 3),), 3)]


def test_a_likert_split_shows_the_points_the_raters_gave(client):
    points = [{"value": v, "text": text} for v, text in ((1, "Poor"), (2, "Fair"), (3, "Good"))]
    study = make_study(
        Study.TaskKind.LIKERT, n_prompts=2, systems=("alpha",), label_scheme={"points": points}
    )
    labelled(study, {"p0": [{"score": 3}, {"score": 1}, {"score": 3}], "p1": [{"score": 2}] * 3})
    boundary, easy = proposals(client, study)
    assert boundary == [("p0", (("3 Good", 2), ("1 Poor", 1)), 3)]
    assert easy == [("p1", (("2 Fair", 3),), 3)]


def test_an_answer_whose_value_holds_a_colon_is_proposed_under_its_own_text(client):
    labels = [
        {"value": "harm:self", "text": "Self-harm", "key": "h"},
        {"value": "harm:none", "text": "No harm", "key": "n"},
    ]
    study = make_study(n_prompts=1, systems=("alpha",), label_scheme={"labels": labels})
    self_harm, no_harm = {"choice": "harm:self"}, {"choice": "harm:none"}
    labelled(study, {"p0": [self_harm, no_harm, self_harm]})
    boundary, _ = proposals(client, study)
    assert boundary == [("p0", (("Self-harm", 2), ("No harm", 1)), 3)]
