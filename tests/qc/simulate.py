"""Seeded simulated studies for the report tests: labels with known ground truth."""

import numpy as np

from annotation.models import Comparison, Output, Study, Unit
from tests.factories import UserFactory, make_study
from tests.qc.labels import add_labels, add_spa_label


def annotators(n: int, prefix: str = "rater") -> list:
    return [UserFactory(username=f"{prefix}{i}") for i in range(n)]


def categorical_study(
    n_prompts=30,
    n_annotators=5,
    overlap=3,
    accuracy=0.85,
    prevalence=0.5,
    seed=1,
    task_kind=Study.TaskKind.CATEGORICAL,
    **fields,
):
    """Units with a true class; each gets `overlap` distinct annotators, right with `accuracy`."""
    rng = np.random.default_rng(seed)
    study = make_study(
        task_kind, n_prompts=n_prompts, systems=("alpha",), overlap=overlap, **fields
    )
    values = [item["value"] for item in study.label_scheme["labels"]]
    people = annotators(n_annotators, prefix=f"s{study.pk}r")
    rows = []
    truth = {}
    for unit in Unit.objects.filter(study=study).order_by("id"):
        true = values[0] if rng.random() < prevalence else values[1]
        truth[unit.pk] = true
        for j in rng.choice(n_annotators, size=overlap, replace=False):
            right = rng.random() < accuracy
            wrong = [v for v in values if v != true]
            rows.append(
                {
                    "unit": unit,
                    "annotator": people[j],
                    "choice": true if right else wrong[int(rng.integers(len(wrong)))],
                }
            )
    add_labels(study, rows)
    return study, truth


def pairwise_study(n_prompts=20, n_annotators=4, overlap=3, p_left_wins=0.8, seed=2):
    """Two systems; 'alpha' wins with probability p_left_wins; clicks are on random sides."""
    rng = np.random.default_rng(seed)
    study = make_study(
        Study.TaskKind.PAIRWISE, n_prompts=n_prompts, systems=("alpha", "beta"), overlap=overlap
    )
    systems = {s.name: s for s in study.systems.all()}
    people = annotators(n_annotators, prefix=f"s{study.pk}r")
    rows = []
    for unit in Unit.objects.filter(study=study).order_by("id"):
        for j in rng.choice(n_annotators, size=overlap, replace=False):
            r = rng.random()
            winner = (
                None
                if r > 0.9
                else (systems["alpha"] if r < p_left_wins * 0.9 else systems["beta"])
            )
            alpha_on_left = rng.random() < 0.5
            if winner is None:
                choice = "tie"
            elif (winner.name == "alpha") == alpha_on_left:
                choice = "left"
            else:
                choice = "right"
            rows.append({"unit": unit, "annotator": people[j], "choice": choice, "winner": winner})
    add_labels(study, rows)
    return study


def spa_study(
    preferences,
    n_annotators=40,
    seed=3,
    tau=None,
    likert=None,
    noise=0.15,
    sloppy=0,
    sloppy_likert=None,
):
    """An SPA study over systems s0..sK; `preferences` maps comparison index to (true P[X>Y],
    expected). `likert` maps a system name to its mean Likert rating. `sloppy`
    annotators answer both directions with high probabilities (the tau filter drops them) and
    rate with `sloppy_likert` when given (else with `likert`)."""
    rng = np.random.default_rng(seed)
    names = tuple(f"s{i}" for i in range(len(preferences) + 1))
    study = make_study(
        Study.TaskKind.SPA,
        n_prompts=5,
        systems=names,
        overlap=n_annotators,
        spa_both_directions=True,
        spa_tau=tau,
        spa_collect_likert=bool(likert),
        spa_exposure_m=5,
    )
    comparisons = list(Comparison.objects.filter(study=study).order_by("position", "id"))
    for i, c in enumerate(comparisons):
        c.expected = preferences[i][1]
        c.save(update_fields=["expected"])
    unit = Unit.objects.get(study=study)
    outputs = list(Output.objects.filter(prompt__study=study).select_related("system"))
    people = annotators(n_annotators + sloppy, prefix=f"s{study.pk}r")
    for a, person in enumerate(people):
        answers, ratings = [], []
        for i, c in enumerate(comparisons):
            if a >= n_annotators:  # sloppy: over-confident both ways
                p, q = 0.95, 0.9
            else:
                p = float(np.clip(preferences[i][0] + rng.normal(0, noise), 0, 1))
                q = float(np.clip(1 - p + rng.normal(0, 0.03), 0, 1))
            answers += [(c, False, round(100 * p, 1)), (c, True, round(100 * q, 1))]
        if likert:
            means = sloppy_likert if sloppy_likert and a >= n_annotators else likert
            for o in outputs:
                m = means.get(o.system.name, 3.0)
                ratings.append((o, float(np.clip(np.rint(m + rng.normal(0, 0.6)), 1, 5))))
        add_spa_label(study, unit, person, answers, ratings)
    return study, comparisons


def likert_study(n_prompts=12, n_annotators=3, seed=4):
    """A 1-5 Likert study: every annotator scores every unit with a random whole point."""
    rng = np.random.default_rng(seed)
    study = make_study(Study.TaskKind.LIKERT, n_prompts=n_prompts, systems=("alpha",))
    people = annotators(n_annotators, prefix=f"s{study.pk}r")
    rows = [
        {"unit": unit, "annotator": person, "score": float(rng.integers(1, 6))}
        for unit in Unit.objects.filter(study=study).order_by("id")
        for person in people
    ]
    add_labels(study, rows)
    return study
