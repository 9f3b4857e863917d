"""The report's design section: labels per system, their raters, and the engine's design warning."""

import csv
import io

import pytest
from django.urls import reverse

from annotation.diagnostics import design_balance
from annotation.models import Unit
from qc import services
from qc.models import QualityReport
from tests.factories import make_study
from tests.qc import simulate
from tests.qc.labels import add_labels
from tests.qc.test_dashboard import lead_of

pytestmark = pytest.mark.django_db


def units_of(study, system):
    return list(Unit.objects.filter(study=study, members__output__system__name=system))


def study_labelled(beta_share_of_first: bool):
    """Alpha and beta, six units each, three raters. Every rater labels every alpha unit; beta is
    labelled by every rater too, or (skewed) mostly by the first rater."""
    study = make_study(n_prompts=6, systems=("alpha", "beta"), overlap=3)
    people = simulate.annotators(3, prefix=f"s{study.pk}r")
    alpha, beta = units_of(study, "alpha"), units_of(study, "beta")
    rows = [{"unit": u, "annotator": p, "choice": "safe"} for u in alpha for p in people]
    if beta_share_of_first:
        rows += [{"unit": u, "annotator": people[0], "choice": "safe"} for u in beta]
        rows += [{"unit": beta[0], "annotator": p, "choice": "unsafe"} for p in people[1:]]
    else:
        rows += [{"unit": u, "annotator": p, "choice": "safe"} for u in beta for p in people]
    add_labels(study, rows)
    services.recompute(study.pk)
    return study, people


def stored_design(study):
    return QualityReport.objects.get(study=study, kind="study").payload["design"]


def dashboard_html(client, study):
    client.force_login(lead_of(study))
    return client.get(reverse("study-dashboard", args=[study.token])).content.decode()


def test_a_system_labelled_mostly_by_one_rater_is_warned_about_in_the_stored_report(client):
    study, people = study_labelled(beta_share_of_first=True)
    design = stored_design(study)
    beta = next(r for r in design["systems"] if r["system"] == "beta")
    assert (beta["labels"], beta["annotators"]) == (8, 3)
    assert beta["top_raters"] == [people[0].username]
    assert beta["top_share"] == pytest.approx(6 / 8)
    assert beta["warnings"] == ["75% of the labels of beta come from one rater."]
    assert design["warnings"] == list(design_balance(study).warnings)  # one rule, one place


def test_the_design_warning_and_the_top_rater_s_username_show_on_the_dashboard(client):
    study, people = study_labelled(beta_share_of_first=True)
    html = dashboard_html(client, study)
    assert 'id="design"' in html
    assert "75% of the labels of beta come from one rater." in html
    assert f"<td>{people[0].username}</td>" in html
    assert 'class="flag-design"' in html


def test_a_balanced_study_has_no_design_warning_in_the_report_or_on_the_page(client):
    study, people = study_labelled(beta_share_of_first=False)
    design = stored_design(study)
    assert design["warnings"] == []
    assert [(r["system"], r["labels"], r["annotators"]) for r in design["systems"]] == [
        ("alpha", 18, 3),
        ("beta", 18, 3),
    ]
    assert all(r["top_share"] == pytest.approx(1 / 3) for r in design["systems"])
    html = dashboard_html(client, study)
    assert 'id="design"' in html
    assert "data-design-warning" not in html and "flag-design" not in html


def test_the_design_table_downloads_as_csv_with_usernames_and_warnings(client):
    study, people = study_labelled(beta_share_of_first=True)
    client.force_login(lead_of(study))
    response = client.get(reverse("study-report-csv", args=[study.token, "design"]))
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0] == ["system", "labels", "annotators", "top_raters", "top_share", "warnings"]
    beta = next(r for r in rows[1:] if r[0] == "beta")
    assert beta[1:4] == ["8", "3", people[0].username]
    assert beta[5] == "75% of the labels of beta come from one rater."


def test_a_pairwise_label_counts_for_both_systems_as_in_the_engine_s_selector(settings):
    settings.CONCORD_QC_BOOTSTRAP = 20
    study = simulate.pairwise_study(n_prompts=8)
    services.recompute(study.pk)
    engine = design_balance(study)
    names = dict(study.systems.values_list("id", "name"))
    expected = {names[s]: n for s, n in engine.per_system.items()}
    design = stored_design(study)
    assert {r["system"]: r["labels"] for r in design["systems"]} == expected
    assert (
        sum(expected.values())
        == 2 * QualityReport.objects.get(study=study, kind="study").payload["progress"]["labels"]
    )
    assert design["warnings"] == list(engine.warnings)


def test_an_spa_batch_counts_for_every_system_it_shows_as_in_the_engine_s_selector():
    study, _ = simulate.spa_study([(0.7, "x"), (0.5, "indifferent")], n_annotators=6)
    services.recompute(study.pk)
    engine = design_balance(study)
    names = dict(study.systems.values_list("id", "name"))
    design = stored_design(study)
    assert {r["system"]: r["labels"] for r in design["systems"]} == {
        names[s]: n for s, n in engine.per_system.items()
    }
    assert [r["system"] for r in design["systems"]] == ["s0", "s1", "s2"]
    assert all(r["annotators"] == 6 for r in design["systems"])
