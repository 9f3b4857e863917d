"""Parallel posts of one form on a real database: exactly one label, the same answer for all."""

import threading

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from annotation.models import Label
from tests.factories import make_study
from tests.workbench.helpers import HTMX, form_fields, signed_in


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_parallel_posts_with_one_key_store_one_label_and_all_get_the_same_next_task():
    study = make_study("categorical", n_prompts=4)
    client = Client()
    signed_in(client, study)
    fields = form_fields(client.get(reverse("work-task", args=[study.token])).content.decode())
    cookies = client.cookies
    bodies, errors = [], []
    barrier = threading.Barrier(6)

    def post():
        try:
            c = Client()
            c.cookies = cookies
            barrier.wait()
            response = c.post(
                reverse("work-submit", args=[study.token]), {**fields, "choice": "safe"}, **HTMX
            )
            bodies.append(response.content.decode())
        except Exception as error:  # surfaced below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert Label.objects.filter(study=study).count() == 1
    assert len({form_fields(b)["_assignment"] for b in bodies}) == 1
