"""Seeded scored studies with a planted strict rater, in a confounded or a balanced design."""

import numpy as np

from annotation.models import Study, Unit
from tests.factories import make_study
from tests.qc.labels import add_labels
from tests.qc.simulate import annotators

STRICT_OFFSET = -15.0  # the planted strict rater, in points on the 0-100 scale
TRUE_DIFFERENCE = 4.0  # alpha - beta, in item quality


def scored_study(confounded: bool, n_prompts=40, seed=7, noise=4.0):
    """A continuous (0-100) study of systems alpha and beta; four ordinary raters (offset 0) and
    one strict rater ("strict", offset STRICT_OFFSET).

    Confounded: beta's items are rated mostly by the strict rater (every beta item by "strict",
    half of them also by one ordinary rater), alpha's by the ordinary raters only, except a few
    alpha items the strict rater also rates (so the design stays connected). Balanced: every
    item gets three raters drawn from all five.
    """
    rng = np.random.default_rng(seed)
    study = make_study(
        Study.TaskKind.CONTINUOUS, n_prompts=n_prompts, systems=("alpha", "beta"), overlap=3
    )
    people = annotators(4, prefix=f"s{study.pk}r")
    strict = annotators(1, prefix=f"s{study.pk}strict")[0]
    everyone = people + [strict]
    offsets = {p.pk: 0.0 for p in people} | {strict.pk: STRICT_OFFSET}
    rows = []
    units = Unit.objects.filter(study=study).select_related().prefetch_related("outputs__system")
    for unit in units.order_by("id"):
        system = unit.outputs.all()[0].system.name
        quality = 60.0 + rng.normal(0, 8) + (TRUE_DIFFERENCE if system == "alpha" else 0.0)
        if not confounded:
            who = [everyone[k] for k in rng.choice(5, size=3, replace=False)]
        elif system == "beta":
            who = [strict] + ([people[int(rng.integers(4))]] if rng.random() < 0.5 else [])
        else:
            who = [people[k] for k in rng.choice(4, size=3, replace=False)]
            if rng.random() < 0.2:
                who[0] = strict
        for person in who:
            y = quality + offsets[person.pk] + rng.normal(0, noise)
            rows.append({"unit": unit, "annotator": person, "score": float(np.clip(y, 0, 100))})
    add_labels(study, rows)
    return study, strict


ORDINAL_LEVELS = ("poor", "fair", "good", "very_good", "excellent")
ORDINAL_STRICT = -1.5  # the planted strict rater, in levels


def ordinal_study(n_prompts=40, seed=11, noise=0.35):
    """An ordinal study (five levels, scored 0..4 when treated as interval) of systems alpha and
    beta in the confounded design of `scored_study`: beta's items rated mostly by the strict
    rater, who sits ORDINAL_STRICT levels below the others before rounding to a level."""
    rng = np.random.default_rng(seed)
    scheme = {
        "labels": [
            {"value": v, "text": v.replace("_", " ").capitalize(), "key": str(k + 1)}
            for k, v in enumerate(ORDINAL_LEVELS)
        ]
    }
    study = make_study(
        Study.TaskKind.ORDINAL,
        n_prompts=n_prompts,
        systems=("alpha", "beta"),
        overlap=3,
        label_scheme=scheme,
    )
    people = annotators(4, prefix=f"s{study.pk}o")
    strict = annotators(1, prefix=f"s{study.pk}ostrict")[0]
    offsets = {p.pk: 0.0 for p in people} | {strict.pk: ORDINAL_STRICT}
    rows = []
    units = Unit.objects.filter(study=study).prefetch_related("outputs__system")
    for unit in units.order_by("id"):
        system = unit.outputs.all()[0].system.name
        quality = 2.5 + rng.normal(0, 0.6)
        if system == "beta":
            who = [strict] + ([people[int(rng.integers(4))]] if rng.random() < 0.5 else [])
        else:
            who = [people[k] for k in rng.choice(4, size=3, replace=False)]
            if rng.random() < 0.2:
                who[0] = strict
        for person in who:
            y = quality + offsets[person.pk] + rng.normal(0, noise)
            level = int(np.clip(np.rint(y), 0, len(ORDINAL_LEVELS) - 1))
            rows.append({"unit": unit, "annotator": person, "choice": ORDINAL_LEVELS[level]})
    add_labels(study, rows)
    return study, strict
