"""The units a study's content calls for (`setup.plan_units`, what the import preview shows and
`build_units` makes): one per output, one per prompt and compared pair, or SPA batches of m
prompts, each with its external id and its outputs in canonical order; nothing twice.

Added after the mutation run of annotation/services/setup.py (bench/MUTATION.md): the tests that
reached plan_units built whole studies and checked the engine, never which units were planned.
"""

import pytest

from annotation.models import Output, Study, System, Unit
from annotation.services import setup
from tests.factories import StudyFactory

pytestmark = pytest.mark.django_db


def study_with(kind, rows, comparisons=(), systems=(), **fields):
    """A study whose systems are created in the order given (so ids and names order differ),
    then the content rows (prompt id, system), then the comparisons."""
    study = StudyFactory(task_kind=kind, status=Study.Status.DRAFT, **fields)
    for name in systems:
        System.objects.create(study=study, name=name)
    setup.add_content(
        study,
        (
            {"prompt_id": p, "prompt": f"Prompt {p}", "system": s, "output": f"{s} on {p}"}
            for p, s in rows
        ),
    )
    if comparisons:
        setup.add_comparisons(study, [(x, y, "") for x, y in comparisons])
    return study


def output_id(study, prompt, system):
    return Output.objects.get(
        prompt__study=study, prompt__external_id=prompt, system__name=system
    ).pk


def prompt_pk(study, prompt):
    return study.prompts.get(external_id=prompt).pk


def planned(study):
    """The plan as (kind, prompt external id or None, outputs as "prompt/system", external id)."""
    names = {
        o.pk: f"{o.prompt.external_id}/{o.system.name}"
        for o in Output.objects.filter(prompt__study=study).select_related("prompt", "system")
    }
    prompts = dict(study.prompts.values_list("id", "external_id"))
    return [
        (p.kind, prompts.get(p.prompt_id), tuple(names[o] for o in p.output_ids), p.external_id)
        for p in setup.plan_units(study)
    ]


# --- one output per unit -------------------------------------------------------------------------


def test_each_output_is_planned_once_under_its_own_id_or_prompt_and_system():
    study = study_with(
        "categorical",
        [("p1", "zeta"), ("p1", "alpha"), ("p2", "zeta"), ("p2", "alpha")],
        systems=("zeta", "alpha"),
    )
    Output.objects.filter(pk=output_id(study, "p2", "zeta")).update(external_id="o-77")
    # prompt by prompt, systems by name
    assert planned(study) == [
        ("output", "p1", ("p1/alpha",), "p1:alpha"),
        ("output", "p1", ("p1/zeta",), "p1:zeta"),
        ("output", "p2", ("p2/alpha",), "p2:alpha"),
        ("output", "p2", ("p2/zeta",), "o-77"),
    ]
    plan = setup.plan_units(study)
    assert plan[0].prompt_id == prompt_pk(study, "p1")
    assert plan[0].output_ids == (output_id(study, "p1", "alpha"),)


def test_built_outputs_are_not_planned_again_and_new_ones_are():
    study = study_with("categorical", [("p1", "alpha"), ("p2", "alpha")])
    assert setup.build_units(study) == 2
    assert setup.plan_units(study) == []
    setup.add_content(
        study, [{"prompt_id": "p3", "prompt": "P3", "system": "alpha", "output": "x"}]
    )
    assert [p.external_id for p in setup.plan_units(study)] == ["p3:alpha"]
    assert setup.build_units(study) == 1
    units = Unit.objects.filter(study=study).order_by("external_id")
    assert [(u.external_id, u.kind, u.role) for u in units] == [
        ("p1:alpha", "output", "production"),
        ("p2:alpha", "output", "production"),
        ("p3:alpha", "output", "production"),
    ]


# --- pairwise -------------------------------------------------------------------------------------


def test_pairwise_without_comparisons_pairs_every_two_systems_of_each_prompt():
    study = study_with(
        "pairwise",
        [("p1", s) for s in ("zeta", "alpha", "mid")] + [("p2", "zeta"), ("p2", "alpha")],
        systems=("zeta", "alpha", "mid"),
    )
    # canonical order: the system created first is x; p2 has no "mid" output
    assert planned(study) == [
        ("pair", "p1", ("p1/zeta", "p1/alpha"), "p1:zeta~alpha"),
        ("pair", "p1", ("p1/zeta", "p1/mid"), "p1:zeta~mid"),
        ("pair", "p1", ("p1/alpha", "p1/mid"), "p1:alpha~mid"),
        ("pair", "p2", ("p2/zeta", "p2/alpha"), "p2:zeta~alpha"),
    ]
    assert setup.plan_units(study)[0].prompt_id == prompt_pk(study, "p1")


def test_pairwise_with_comparisons_plans_only_those_pairs_in_their_order():
    study = study_with(
        "pairwise",
        [("p1", s) for s in ("zeta", "alpha", "mid")] + [("p2", "alpha"), ("p2", "mid")],
        comparisons=[("mid", "zeta")],
        systems=("zeta", "alpha", "mid"),
    )
    assert planned(study) == [("pair", "p1", ("p1/mid", "p1/zeta"), "p1:mid~zeta")]


def test_built_pairs_are_not_planned_again():
    study = study_with(
        "pairwise", [("p1", "a"), ("p1", "b"), ("p2", "a"), ("p2", "b")], comparisons=[("a", "b")]
    )
    assert setup.build_units(study) == 2
    assert setup.plan_units(study) == []
    setup.add_content(
        study,
        [{"prompt_id": "p3", "prompt": "P3", "system": s, "output": f"{s} 3"} for s in ("a", "b")],
    )
    assert [p.external_id for p in setup.plan_units(study)] == ["p3:a~b"]


def test_a_pair_whose_id_is_longer_than_a_unit_id_is_built_once_under_its_cut_id():
    # prompt ids and system names may have 200 characters each: "<prompt>:<x>~<y>" has 402+
    study = study_with("pairwise", [("p" * 200, s) for s in ("x" * 200, "y" * 200)])
    assert setup.build_units(study) == 1
    assert Unit.objects.get(study=study).external_id == f"{'p' * 200}:{'x' * 200}~{'y' * 48}"
    setup.add_content(
        study,
        [
            {"prompt_id": "q", "prompt": "Q", "system": s, "output": s}
            for s in ("x" * 200, "y" * 200)
        ],
    )
    # only the new prompt's pair (before the fix, the long one again: IntegrityError)
    assert [p.prompt_id for p in setup.plan_units(study)] == [prompt_pk(study, "q")]
    assert setup.build_units(study) == 1


# --- SPA ------------------------------------------------------------------------------------------


def spa_study(prompts, systems=("zeta", "alpha", "mid"), missing=(), **fields):
    rows = [(p, s) for p in prompts for s in systems if (p, s) not in missing]
    return study_with(
        "spa", rows, comparisons=[("alpha", "zeta")], systems=systems, spa_exposure_m=2, **fields
    )


def test_a_fixed_spa_sample_is_one_batch_of_the_first_m_prompts_with_every_compared_output():
    # p1 lacks a compared system; p2 lacks only "mid", which no comparison names
    study = spa_study(
        ["p1", "p2", "p3", "p4"], missing={("p1", "alpha"), ("p2", "mid")}, spa_fixed_sample=True
    )
    assert planned(study) == [
        ("spa_batch", None, ("p2/zeta", "p2/alpha", "p3/zeta", "p3/alpha"), "spa-1"),
    ]
    assert setup.build_units(study) == 1
    setup.add_content(
        study,
        [
            {"prompt_id": "p9", "prompt": "P9", "system": s, "output": f"{s} 9"}
            for s in ("zeta", "alpha")
        ],
    )
    assert setup.plan_units(study) == []  # the fixed sample is drawn once


def test_an_spa_study_without_comparisons_or_enough_prompts_plans_no_batch():
    no_comparisons = study_with(
        "spa", [(p, s) for p in ("p1", "p2") for s in ("a", "b")], spa_exposure_m=2
    )
    assert setup.plan_units(no_comparisons) == []
    too_few = spa_study(["p1", "p2"], missing={("p2", "zeta")}, spa_fixed_sample=True)
    assert setup.plan_units(too_few) == []


def test_without_a_fixed_sample_spa_batches_take_m_new_prompts_each_and_keep_counting():
    study = spa_study(["p1", "p2", "p3", "p4", "p5"], spa_fixed_sample=False)
    assert planned(study) == [
        ("spa_batch", None, ("p1/zeta", "p1/alpha", "p2/zeta", "p2/alpha"), "spa-1"),
        ("spa_batch", None, ("p3/zeta", "p3/alpha", "p4/zeta", "p4/alpha"), "spa-2"),
    ]  # p5 waits for a partner
    assert setup.build_units(study) == 2
    setup.add_content(
        study,
        [
            {"prompt_id": "p6", "prompt": "P6", "system": s, "output": f"{s} 6"}
            for s in ("zeta", "alpha", "mid")
        ],
    )
    assert planned(study) == [
        ("spa_batch", None, ("p5/zeta", "p5/alpha", "p6/zeta", "p6/alpha"), "spa-3"),
    ]


def test_an_spa_batch_is_built_with_its_outputs_in_planned_order():
    study = spa_study(["p1", "p2"], spa_fixed_sample=True)
    setup.build_units(study)
    unit = Unit.objects.get(study=study)
    assert (unit.kind, unit.external_id, unit.prompt_id) == ("spa_batch", "spa-1", None)
    members = [
        f"{m.output.prompt.external_id}/{m.output.system.name}"
        for m in unit.members.order_by("position")
    ]
    assert members == ["p1/zeta", "p1/alpha", "p2/zeta", "p2/alpha"]
