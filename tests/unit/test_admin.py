"""Every model has a Django admin, and each changelist opens for staff."""

import pytest
from django.apps import apps
from django.contrib import admin
from django.urls import reverse

from tests.factories import UserFactory, make_study

pytestmark = pytest.mark.django_db

OUR_MODELS = [m for app in ("annotation", "qc") for m in apps.get_app_config(app).get_models()]


@pytest.mark.parametrize("model", OUR_MODELS, ids=lambda m: m.__name__)
def test_every_model_has_an_admin_changelist_that_opens(client, model):
    assert admin.site.is_registered(model)
    make_study(n_prompts=1)
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    assert client.get(url).status_code == 200
