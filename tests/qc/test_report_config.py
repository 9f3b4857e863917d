"""qc.loaders.report_config with the lead's options saved but switched off: a saved row is not a
choice. Found by the mutation run of qc/loaders.py (bench/MUTATION.md, issue 17)."""

import pytest

from annotation.models import Study
from qc import loaders
from qc.models import ReportOptions
from tests.factories import make_study

pytestmark = pytest.mark.django_db


def test_options_saved_with_everything_off_read_as_off():
    study = make_study(Study.TaskKind.ORDINAL, n_prompts=1, systems=("x",))
    before = loaders.report_config(study)
    ReportOptions.objects.create(study=study)  # the lead opened the options and saved the defaults
    config = loaders.report_config(study)
    assert (config.unanimous_view, config.clamp_gold, config.ordinal_as_interval) == (
        False,
        False,
        False,
    )
    assert (config.pool, config.guide_version) == ("", None)
    assert config.settings_hash == before.settings_hash  # the report is not recomputed


@pytest.mark.parametrize("flag", ["unanimous_view", "clamp_gold", "ordinal_as_interval"])
def test_each_switch_is_read_on_its_own(flag):
    study = make_study(Study.TaskKind.ORDINAL, n_prompts=1, systems=("x",))
    ReportOptions.objects.create(study=study, **{flag: True})
    config = loaders.report_config(study)
    switches = {
        name: getattr(config, name)
        for name in ("unanimous_view", "clamp_gold", "ordinal_as_interval")
    }
    assert switches == {name: name == flag for name in switches}


@pytest.mark.parametrize("both", [False, True])
def test_the_spa_settings_are_the_studys(both):
    study = make_study(
        Study.TaskKind.SPA,
        n_prompts=1,
        systems=("x", "y"),
        spa_tau=1.5,
        spa_both_directions=both,
    )
    config = loaders.report_config(study)
    assert config.spa_tau == 1.5
    assert config.spa_both_directions is both
    assert config.as_dict()["spa_both_directions"] is both  # JSON true/false in the hash


@pytest.mark.parametrize("scheme", [{}, None])
@pytest.mark.parametrize("kind", ["categorical", "ordinal", "likert", "spa"])
def test_a_scheme_without_its_scale_declares_nothing(kind, scheme):
    study = Study(task_kind=kind, label_scheme=scheme)
    assert loaders.declared_categories(study) == ()
    assert loaders.declared_texts(study) == ()
