"""Bulk loading of the benchmark studies (SQL, not the ORM row by row) and their reset.

Used by bench/loop.py; runs inside a Django process pointed at the benchmark database.
"""

import secrets
import time
import uuid

from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.db import connection, transaction
from django.utils import timezone

from annotation.models import Study, Workspace
from annotation.services import people as people_service

SYSTEMS = ("sys-a", "sys-b", "sys-c", "sys-d")
LABELS = {"labels": [{"value": "good", "text": "Good"}, {"value": "bad", "text": "Bad"}]}


def bench_study(n_units: int, n_gold: int = 200) -> Study:
    """The study of this size, loaded once and reused (reset) on later runs; the database also
    holds an earlier, finished study's work (`past_work`)."""
    past_work()
    return _study(f"bench-{n_units}", n_units, n_gold)


# The finished study of `past_work`: its units, each labelled by `overlap` of PAST_ANNOTATORS.
PAST_STUDY = "bench-past"
PAST_UNITS = 100_000
PAST_ANNOTATORS = 64


def past_work() -> Study:
    """A closed study whose 100,000 units were each labelled three times by the bench's
    annotators (`bench-0` ...), loaded once: the work tables of an installation in use.

    Without it, `reset` leaves the loop's study alone in empty assignment and label tables, and
    the hot statements' generic plans, made in a run's first seconds, plan those tables as a page
    or two: the pick's `NOT EXISTS` probe becomes a sequential scan per candidate, which grows
    with every label of the run (a 20 s run ends before autovacuum would replan it). The floor's
    label table keeps its earlier runs' labels, so it never measured that."""
    study = _study(PAST_STUDY, PAST_UNITS, n_gold=0)
    if study.status == Study.Status.CLOSED:  # set with the work, in the same transaction
        return study
    t0 = time.monotonic()
    ids = [user.pk for user in bench_users(PAST_ANNOTATORS)]
    with transaction.atomic(), connection.cursor() as c:
        # Unit n's k-th label is by annotator (n + k * stride) mod 64: `overlap` different people.
        c.execute(
            "CREATE TEMPORARY TABLE past ON COMMIT DROP AS"
            " SELECT u.id AS unit_id, (%s::int[])[1 + (u.n + %s * k) %% %s] AS annotator_id,"
            " k, u.n FROM (SELECT id, row_number() OVER (ORDER BY id) AS n"
            " FROM annotation_unit WHERE study_id = %s) u, generate_series(0, %s) k",
            (ids, PAST_ANNOTATORS // study.overlap, PAST_ANNOTATORS, study.id, study.overlap - 1),
        )
        c.execute(
            "INSERT INTO annotation_assignment (study_id, unit_id, annotator_id, purpose, token,"
            " status, position, presentation, leased_at, expires_at, closed_at, skip_reason)"
            " SELECT %s, unit_id, annotator_id, 'production', substr(md5('past' || n || '.' || k),"
            " 1, 22), 'submitted', row_number() OVER (PARTITION BY annotator_id ORDER BY n) - 1,"
            " jsonb_build_object('kind', 'output'), now() - interval '30 days',"
            " now() - interval '30 days', now() - interval '30 days', '' FROM past",
            (study.id,),
        )
        c.execute(
            "INSERT INTO annotation_label (study_id, unit_id, annotator_id, assignment_id,"
            " purpose, idempotency_key, choice, value, exposure, created_at, external_id)"
            " SELECT a.study_id, a.unit_id, a.annotator_id, a.id, 'production',"
            " md5(a.token)::uuid, 'good', '{\"choice\": \"good\"}', '{}', a.closed_at, ''"
            " FROM annotation_assignment a WHERE a.study_id = %s",
            (study.id,),
        )
        c.execute("UPDATE annotation_unit SET open_slots = 0 WHERE study_id = %s", (study.id,))
        Study.objects.filter(pk=study.pk).update(status=Study.Status.CLOSED)
    with connection.cursor() as c:
        c.execute("VACUUM ANALYZE annotation_assignment")
        c.execute("VACUUM ANALYZE annotation_label")
    print(
        f"loaded the earlier study's {PAST_UNITS * study.overlap:,} labels in"
        f" {time.monotonic() - t0:.0f} s",
        flush=True,
    )
    return study


def _study(name: str, n_units: int, n_gold: int) -> Study:
    """The study of this name: n_units output units (n_gold of them gold), loaded once."""
    study = Study.objects.filter(name=name).first()
    if study is not None:
        return study
    t0 = time.monotonic()
    ws, _ = Workspace.objects.get_or_create(slug="bench", defaults={"name": "Bench"})
    study = Study.objects.create(
        workspace=ws,
        name=name,
        task_kind=Study.TaskKind.CATEGORICAL,
        label_scheme=LABELS,
        status=Study.Status.LIVE,
        overlap=3,
        gold_rate=0.05,
        repeat_rate=0.05,
        # Minutes would keep repeats out of a one-minute run; the unit gap still applies.
        repeat_min_gap_units=20,
        repeat_min_gap_minutes=0,
        lease_seconds=600,
    )
    n_prompts = n_units // len(SYSTEMS)
    with transaction.atomic(), connection.cursor() as c:
        for name_ in SYSTEMS:
            c.execute(
                "INSERT INTO annotation_system (study_id, name, description) VALUES (%s, %s, '')",
                (study.id, name_),
            )
        c.execute(
            "INSERT INTO annotation_prompt (study_id, external_id, text, language, topic, source,"
            " metadata) SELECT %s, 'p' || g, 'Write a short answer to question number ' || g"
            " || ' about the topic at hand.', 'en', '', '', '{}' FROM generate_series(1, %s) g",
            (study.id, n_prompts),
        )
        c.execute(
            "INSERT INTO annotation_output (prompt_id, system_id, text)"
            " SELECT p.id, s.id, 'An answer of a few sentences to prompt ' || p.external_id"
            " || ', as one of the systems wrote it, long enough to look like real output.'"
            " FROM annotation_prompt p CROSS JOIN annotation_system s"
            " WHERE p.study_id = %s AND s.study_id = %s",
            (study.id, study.id),
        )
        # Keys as balance_shuffle_keys lays them out: each system's units evenly spread over the
        # ring in a random order, so every stretch of the ring holds the study's system mix.
        c.execute(
            "INSERT INTO annotation_unit (study_id, token, kind, role, prompt_id, overlap,"
            " open_slots, shuffle_key, created_at)"
            " SELECT %s, substr(md5(o.id::text || %s), 1, 22), 'output', 'production',"
            " o.prompt_id, 3, 3,"
            " ((rn - random()) / cnt * 4611686018427387903)::bigint, now()"
            " FROM (SELECT o.*, row_number() OVER (PARTITION BY o.system_id ORDER BY random())"
            "  AS rn, count(*) OVER (PARTITION BY o.system_id) AS cnt"
            "  FROM annotation_output o JOIN annotation_prompt p ON p.id = o.prompt_id"
            "  WHERE p.study_id = %s) o",
            (study.id, study.token, study.id),
        )
        c.execute(
            "INSERT INTO annotation_unitoutput (unit_id, output_id, position)"
            " SELECT u.id, o.id, 0 FROM annotation_output o"
            " JOIN annotation_prompt p ON p.id = o.prompt_id"
            " JOIN annotation_unit u ON u.token = substr(md5(o.id::text || %s), 1, 22)"
            " WHERE p.study_id = %s",
            (study.token, study.id),
        )
        c.execute(
            "UPDATE annotation_unit SET role = 'gold' WHERE id IN (SELECT id FROM annotation_unit"
            " WHERE study_id = %s ORDER BY shuffle_key LIMIT %s)",
            (study.id, n_gold),
        )
        c.execute(
            "INSERT INTO annotation_goldanswer (unit_id, value, rationale, created_at)"
            " SELECT id, '{\"choice\": \"good\"}', '', now() FROM annotation_unit"
            " WHERE study_id = %s AND role = 'gold'",
            (study.id,),
        )
    with connection.cursor() as c:
        c.execute("ANALYZE")
    print(f"loaded {n_units:,} units in {time.monotonic() - t0:.0f} s", flush=True)
    return study


def reset(study: Study) -> None:
    """Forget all work on the study: labels, assignments, slots, walks."""
    with transaction.atomic(), connection.cursor() as c:
        c.execute("DELETE FROM annotation_label WHERE study_id = %s", (study.id,))
        c.execute("DELETE FROM annotation_assignment WHERE study_id = %s", (study.id,))
        c.execute(
            "UPDATE annotation_unit SET open_slots = overlap WHERE study_id = %s"
            " AND open_slots <> overlap",
            (study.id,),
        )
        c.execute("DELETE FROM annotation_enrolment WHERE study_id = %s", (study.id,))
    with connection.cursor() as c:
        c.execute("VACUUM ANALYZE annotation_assignment")
        c.execute("VACUUM ANALYZE annotation_label")
        c.execute("VACUUM ANALYZE annotation_unit")


def annotators(study: Study, n: int) -> list[dict]:
    """n enrolled, signed-in annotators: their session cookie and CSRF secret, and an API token
    (for the REST loop)."""
    from annotation.models import ApiToken
    from annotation.services.api_tokens import create_token

    people = []
    for user in bench_users(n):
        people_service.enrol(study, user, qualified_at=timezone.now())
        session = SessionStore()
        session["_auth_user_id"] = str(user.pk)
        session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
        session["_auth_user_hash"] = user.get_session_auth_hash()
        session.create()
        csrf = secrets.token_hex(16)  # a 32-character secret, as Django's cookie holds
        ApiToken.objects.filter(user=user, name="bench").delete()
        token = create_token(user, "bench").secret
        people.append({"session": session.session_key, "csrf": csrf, "id": user.pk, "token": token})
    return people


def bench_users(n: int) -> list:
    """The bench's annotators `bench-0` ... `bench-<n-1>`, made once, without a password."""
    User = get_user_model()
    users = []
    for i in range(n):
        user, _ = User.objects.get_or_create(username=f"bench-{i}")
        if user.has_usable_password():
            user.set_unusable_password()
            user.save()
        users.append(user)
    return users


def new_key() -> str:
    return str(uuid.uuid4())
