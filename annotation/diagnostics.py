"""Design diagnostics for the dashboards: who labelled which system, and confounds in that design;
also whether the gold pool suffices for the gold rate and crowd (`gold_supply`) and what was
skipped (`skips`).

A system difference is only free of rater severity when every system is judged by about the same
raters (the week-1 / week-2 confound of the measuring-judgments guide); these selectors show the
annotator x system counts and warn when a system's labels come from few or different raters.
`balance_of` is the rule itself, on counts alone, so the quality report applies it unchanged.
"""

import math
from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Count, Sum

from annotation.models import Assignment, Label, Study, Unit, UnitOutput

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


@dataclass(frozen=True)
class Skips:
    total: int
    by_reason: tuple[tuple[str, int], ...]  # (reason as the annotator read it, tasks), list order


def skips(study: Study) -> Skips:
    """Tasks annotators skipped, by the reason they gave (skips without one are "Not given")."""
    counts = dict(
        Assignment.objects.filter(study=study, status=Assignment.Status.ABANDONED)
        .values_list("skip_reason")
        .annotate(n=Count("id"))
    )
    reasons = [(text, counts.pop(value, 0)) for value, text in Assignment.SkipReason.choices]
    rows = [(text, n) for text, n in reasons if n]
    if counts.get(""):
        rows.append(("Not given", counts[""]))
    return Skips(total=sum(n for _, n in rows), by_reason=tuple(rows))


@dataclass(frozen=True)
class GoldSupply:
    gold_units: int
    cap: int  # annotators each gold unit may be shown to (the study's overlap)
    exposures_left: int  # gold tasks the pool can still serve
    annotators: int
    needed: int  # gold tasks the study will ask for over its whole run
    per_annotator: int  # distinct gold units one annotator needs
    units_needed: int
    enough: bool
    message: str


def gold_supply(study: Study, annotators: int | None = None) -> GoldSupply:
    """Whether the gold pool can serve the study's gold rate for its crowd.

    Tasks: production labels U x overlap over the production share s = 1 - gold - repeat -
    attention rates, or fewer when each of the n annotators has a quota q:
    T = min(U x overlap / s, n x min(U / s, q)). Gold needed: gold_rate x T. The pool serves at
    most G x overlap gold tasks (the engine shows a gold unit to at most `overlap` annotators)
    and an annotator never sees a gold unit twice, so one annotator doing t = min(T / n, U / s, q)
    tasks needs gold_rate x t distinct units. `annotators` defaults to those enrolled (at
    least 1); the builder may pass the crowd size it plans for.
    """
    n = max(annotators if annotators is not None else study.enrolments.count(), 1)
    by_role = dict(
        Unit.objects.filter(study=study, role__in=["production", "gold"])
        .values_list("role")
        .annotate(n=Count("id"))
    )
    units, gold = by_role.get("production", 0), by_role.get("gold", 0)
    left = Unit.objects.filter(study=study, role="gold").aggregate(n=Sum("open_slots"))["n"] or 0
    cap, rate = max(study.overlap, 1), study.gold_rate
    share = max(1.0 - study.gold_rate - study.repeat_rate - study.attention_rate, 0.05)
    one = units / share
    if study.quota_per_annotator is not None:
        one = min(one, study.quota_per_annotator)
    tasks = min(units * study.overlap / share, n * one)
    needed = math.ceil(rate * tasks - 1e-9)
    per_annotator = math.ceil(rate * min(one, tasks / n) - 1e-9)
    units_needed = max(math.ceil(needed / cap), per_annotator)
    enough = gold >= units_needed
    if rate <= 0:
        message = "No hidden gold: the gold rate is 0."
    elif enough:
        message = (
            f"Gold pool: {gold} units, enough for the about {needed} gold tasks that {n}"
            f" annotator{'s' if n != 1 else ''} at a gold rate of {rate:.0%} need"
            f" (each gold unit shown to at most {cap})."
        )
    else:
        message = (
            f"Gold pool too small: {gold} gold units, each shown to at most {cap} annotators,"
            f" cover {gold * cap} gold tasks, but {n} annotator{'s' if n != 1 else ''} at a gold"
            f" rate of {rate:.0%} need about {needed} ({per_annotator} distinct units each)."
            f" Add {units_needed - gold} gold units or lower the gold rate; until then fewer"
            " gold tasks are shown than the rate asks."
        )
    return GoldSupply(
        gold_units=gold,
        cap=cap,
        exposures_left=left,
        annotators=n,
        needed=needed,
        per_annotator=per_annotator,
        units_needed=units_needed,
        enough=enough or rate <= 0,
        message=message,
    )
