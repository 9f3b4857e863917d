"""Design diagnostics for the dashboards: who labelled which system, and confounds in that design.

A system difference is only free of rater severity when every system is judged by about the same
raters (the week-1 / week-2 confound of the measuring-judgments guide); these selectors show the
annotator x system counts and warn when a system's labels come from few or different raters.
`balance_of` is the rule itself, on counts alone, so the quality report applies it unchanged.
"""

from collections import defaultdict
from dataclasses import dataclass, field

from annotation.models import Label, Study, UnitOutput

# Warn when one rater gave more than this share of a system's labels (with >= 3 raters in all).
MAX_RATER_SHARE = 0.5
# Warn when a system's rater mix is this far (total variation distance) from the study's.
MAX_RATER_MIX_DISTANCE = 0.3


@dataclass(frozen=True)
class DesignBalance:
    # (annotator id, system id) -> production labels of that annotator touching that system
    counts: dict
    systems: dict  # system id -> name
    per_system: dict  # system id -> labels
    per_annotator: dict  # annotator id -> labels
    warnings: tuple[str, ...]
    top_share: dict = field(default_factory=dict)  # system id -> largest one-rater share
    top_raters: dict = field(default_factory=dict)  # system id -> annotator ids with that share
    system_warnings: dict = field(default_factory=dict)  # system id -> its warnings


def design_balance(study: Study) -> DesignBalance:
    """Counts of production labels per annotator x system, and warnings about confounds.

    A pairwise label counts for both systems of its pair; an SPA batch for every system in it.
    Warnings as in `balance_of`.
    """
    systems_of = defaultdict(set)
    for unit_id, system_id in UnitOutput.objects.filter(unit__study=study).values_list(
        "unit_id", "output__system_id"
    ):
        systems_of[unit_id].add(system_id)
    counts = defaultdict(int)
    for annotator_id, unit_id in Label.objects.filter(
        study=study, purpose="production"
    ).values_list("annotator_id", "unit_id"):
        for system_id in systems_of[unit_id]:
            counts[(annotator_id, system_id)] += 1
    names = dict(study.systems.values_list("id", "name"))
    return balance_of(counts, names)


def balance_of(counts: dict, names: dict) -> DesignBalance:
    """The design rule on counts {(annotator id, system id): labels}; `names` maps system ids.

    Warnings: a system with most of its labels from one rater (top share > 0.5, when the study
    has >= 3 raters), and a system whose raters differ from the study's mix (total variation
    distance 0.5 * sum_a |p_a|system - p_a| > 0.3). A system without labels gets no row.
    """
    counts = {key: n for key, n in counts.items() if n}
    per_system, per_annotator = defaultdict(int), defaultdict(int)
    for (annotator_id, system_id), n in counts.items():
        per_system[system_id] += n
        per_annotator[annotator_id] += n
    total = sum(per_annotator.values())
    warnings, top_share, top_raters, system_warnings = [], {}, {}, {}
    for system_id, n_system in sorted(per_system.items()):
        shares = {a: counts.get((a, system_id), 0) / n_system for a in per_annotator}
        top = max(shares.values())
        top_share[system_id] = top
        top_raters[system_id] = tuple(sorted(a for a, s in shares.items() if s == top))
        name = names.get(system_id, str(system_id))
        found = []
        if len(per_annotator) >= 3 and top > MAX_RATER_SHARE:
            found.append(f"{top:.0%} of the labels of {name} come from one rater.")
        overall = {a: per_annotator[a] / total for a in per_annotator}
        distance = 0.5 * sum(abs(shares[a] - overall[a]) for a in per_annotator)
        if distance > MAX_RATER_MIX_DISTANCE:
            found.append(
                f"The raters of {name} differ from the study's mix (distance {distance:.2f}):"
                " system differences may be rater differences."
            )
        system_warnings[system_id] = tuple(found)
        warnings += found
    return DesignBalance(
        counts=dict(counts),
        systems=names,
        per_system=dict(per_system),
        per_annotator=dict(per_annotator),
        warnings=tuple(warnings),
        top_share=top_share,
        top_raters=top_raters,
        system_warnings=system_warnings,
    )
