"""Import and export at scale: wall time and peak memory (RSS) of each whole process.

    DATABASE_URL=postgres://... .venv/bin/python bench/import_export.py [--outputs 1000000]
        [--labels 1000000] [--label-import 100000] [--keep]

Each measured step is a separate `manage.py` process (import_content, export_labels), the way a
lead runs it; wall time and peak RSS come from wait4() on that process, so Django's start-up and
everything the step allocated are counted. Targets (issue 12): each < 60 s and < 500 MiB.

Steps:
  outputs.csv    import of N outputs (N/4 prompts x 4 systems) from CSV into a fresh study
  outputs.jsonl  the same N outputs from JSON Lines into a second fresh study
  again.csv      the CSV imported a second time (everything unchanged)
  labels.csv     export of L labels as CSV (labels made in SQL for the bench, 5 per unit)
  labels.jsonl   the same export as JSON Lines
  import labels  import of K labels (CSV) on units that have none yet
The studies are deleted afterwards unless --keep is given.
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "concord.settings")

SYSTEMS = ["north", "east", "south", "west"]
TARGET_SECONDS, TARGET_MIB = 60.0, 500.0


def measure(label: str, args: list[str]) -> dict:
    """Run `manage.py args` and return its wall time and peak RSS (wait4, the whole process)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{label} failed:\n{stderr[-3000:]}")
    mib = usage.ru_maxrss / 1024  # KiB on Linux
    # CPU of the process itself (PostgreSQL's work is not in it): on a busy machine this says
    # more about the code than the wall time does.
    cpu = usage.ru_utime + usage.ru_stime
    ok = seconds < TARGET_SECONDS and mib < TARGET_MIB
    verdict = "ok" if ok else "OVER TARGET"
    load = os.getloadavg()[0]  # this machine is shared: read every figure beside its load
    figures = f"{seconds:7.1f} s wall {cpu:7.1f} s cpu {mib:6.0f} MiB  load {load:4.1f}"
    print(f"{label:<34} {figures}  {verdict}")
    for line in stderr.splitlines():  # the import's own log of its phases
        if "annotation.imports" in line or line.startswith("import "):
            print(f"    {line.strip()}")
    return {
        "step": label,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "peak_rss_mib": round(mib, 1),
        "load": round(load, 2),
        "ok": ok,
    }


def write_files(folder: Path, n_outputs: int) -> dict[str, Path]:
    n_prompts = n_outputs // len(SYSTEMS)
    paths = {
        "systems": folder / "systems.csv",
        "prompts": folder / "prompts.csv",
        "outputs_csv": folder / "outputs.csv",
        "outputs_jsonl": folder / "outputs.jsonl",
    }
    with open(paths["systems"], "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "description"])
        w.writerows([(s, f"System {s}") for s in SYSTEMS])
    with open(paths["prompts"], "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "text", "language", "topic"])
        for i in range(n_prompts):
            w.writerow([f"p{i}", f"Prompt {i}: explain, briefly, item {i}.", "en", f"t{i % 20}"])
    text = 'An answer of about two hundred characters, with commas, "quotes" and a line\nbreak; '
    with open(paths["outputs_csv"], "w", newline="") as f, open(paths["outputs_jsonl"], "w") as j:
        w = csv.writer(f)
        w.writerow(["id", "prompt_id", "system", "text"])
        for i in range(n_prompts):
            for s in SYSTEMS:
                body = f"{text}{text}output {i} of {s}"
                w.writerow([f"o{i}-{s}", f"p{i}", s, body])
                j.write(
                    json.dumps({"id": f"o{i}-{s}", "prompt_id": f"p{i}", "system": s, "text": body})
                    + "\n"
                )
    return paths


def make_study(name: str):
    from annotation.models import Study, Workspace

    workspace, _ = Workspace.objects.get_or_create(slug="bench-io", defaults={"name": "Bench"})
    return Study.objects.create(
        workspace=workspace,
        name=name,
        task_kind="categorical",
        label_scheme={
            "labels": [{"value": "good", "text": "Good"}, {"value": "bad", "text": "Bad"}]
        },
        overlap=5,
    )


def seed_labels(study, n_labels: int, per_unit: int = 5) -> None:
    """Units and labels written straight in SQL (bench set-up only, not a product path)."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    users = [
        get_user_model().objects.get_or_create(username=f"bench-rater-{k}")[0]
        for k in range(per_unit)
    ]
    n_units = n_labels // per_unit
    with connection.cursor() as c:
        c.execute(
            "INSERT INTO annotation_unit (study_id, token, kind, role, prompt_id, overlap,"
            " open_slots, shuffle_key, external_id, created_at) SELECT %s, md5(o.id::text ||"
            " random()::text), 'output', 'production', o.prompt_id, 5, 0,"
            " (random() * 4e18)::bigint, o.external_id, now() FROM (SELECT o.* FROM"
            " annotation_output o JOIN annotation_prompt p ON p.id = o.prompt_id WHERE"
            " p.study_id = %s ORDER BY o.id LIMIT %s) o",
            [study.pk, study.pk, n_units],
        )
        c.execute(
            "INSERT INTO annotation_unitoutput (unit_id, output_id, position) SELECT u.id, o.id,"
            " 0 FROM annotation_unit u JOIN annotation_output o ON o.external_id = u.external_id"
            " JOIN annotation_prompt p ON p.id = o.prompt_id AND p.study_id = u.study_id"
            " WHERE u.study_id = %s",
            [study.pk],
        )
        for k, user in enumerate(users):
            c.execute(
                "INSERT INTO annotation_assignment (study_id, unit_id, annotator_id, purpose,"
                " token, status, position, presentation, leased_at, expires_at, closed_at)"
                " SELECT %s, u.id, %s, 'production', md5(u.id::text || %s || random()::text),"
                " 'submitted', row_number() OVER (ORDER BY u.id), jsonb_build_object('kind',"
                " 'output', 'output', m.output_id), now(), now(), now() FROM annotation_unit u"
                " JOIN annotation_unitoutput m ON m.unit_id = u.id WHERE u.study_id = %s",
                [study.pk, user.pk, str(k), study.pk],
            )
        c.execute(
            "INSERT INTO annotation_label (assignment_id, study_id, unit_id, annotator_id,"
            " purpose, idempotency_key, choice, value, exposure, rendered_at, duration_ms,"
            " active_ms, external_id, created_at) SELECT a.id, a.study_id, a.unit_id,"
            " a.annotator_id, 'production', md5(a.id::text || random()::text)::uuid, CASE WHEN"
            " a.id %% 3 = 0 THEN 'bad' ELSE 'good' END, '{}'::jsonb, '{}'::jsonb, now(),"
            " 4000 + a.id %% 5000, 3000, '', now() FROM annotation_assignment a WHERE"
            " a.study_id = %s",
            [study.pk],
        )
        c.execute("ANALYZE annotation_label")


def labels_file(folder: Path, study, n: int) -> Path:
    """K labels by new pseudonyms on units without labels (units made in SQL like above)."""
    from django.db import connection

    per_unit = 2
    n_units = n // per_unit
    with connection.cursor() as c:
        c.execute(
            "INSERT INTO annotation_unit (study_id, token, kind, role, prompt_id, overlap,"
            " open_slots, shuffle_key, external_id, created_at) SELECT %s, md5(o.id::text ||"
            " 'k' || random()::text), 'output', 'production', o.prompt_id, 5, 5,"
            " (random() * 4e18)::bigint, o.external_id, now() FROM (SELECT o.* FROM"
            " annotation_output o JOIN annotation_prompt p ON p.id = o.prompt_id WHERE"
            " p.study_id = %s AND NOT EXISTS (SELECT 1 FROM annotation_unit u WHERE u.study_id ="
            " %s AND u.external_id = o.external_id) ORDER BY o.id LIMIT %s) o RETURNING"
            " external_id",
            [study.pk, study.pk, study.pk, n_units],
        )
        units = [r[0] for r in c.fetchall()]
        c.execute(
            "INSERT INTO annotation_unitoutput (unit_id, output_id, position) SELECT u.id, o.id,"
            " 0 FROM annotation_unit u JOIN annotation_output o ON o.external_id = u.external_id"
            " JOIN annotation_prompt p ON p.id = o.prompt_id AND p.study_id = u.study_id"
            " WHERE u.study_id = %s AND u.open_slots = 5",
            [study.pk],
        )
    path = folder / "labels.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "annotator", "unit", "value", "created_at", "duration_ms"])
        for i, unit in enumerate(units):
            for k in range(per_unit):
                w.writerow(
                    [
                        f"x{i}-{k}",
                        f"imp{(i + k) % 40}-{k}",
                        unit,
                        "good" if (i + k) % 3 else "bad",
                        "2025-05-01T12:00:00+00:00",
                        3000 + i % 4000,
                    ]
                )
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--outputs", type=int, default=1_000_000)
    parser.add_argument("--labels", type=int, default=1_000_000)
    parser.add_argument("--label-import", type=int, default=100_000)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="Also write the results here.")
    options = parser.parse_args()

    import django

    django.setup()
    from django.db import connection

    from annotation.models import Study

    if connection.vendor != "postgresql":
        raise SystemExit("bench/import_export.py measures PostgreSQL: set DATABASE_URL")
    results = []
    with tempfile.TemporaryDirectory(prefix="concord-bench-io-") as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        paths = write_files(folder, options.outputs)
        size = paths["outputs_csv"].stat().st_size / 2**20
        print(f"files written in {time.perf_counter() - t0:.0f} s (outputs.csv {size:.0f} MiB)")
        # What any manage.py process costs before it does any work (Django, the apps, numpy).
        results.append(measure("manage.py start-up alone (check)", ["check"]))
        a, b = make_study("bench io A"), make_study("bench io B")
        try:
            for study, tag in ((a, "A"), (b, "B")):
                measure(
                    f"setup {tag}: systems",
                    ["import_content", study.token, "systems", str(paths["systems"])],
                )
                results.append(
                    measure(
                        f"import {options.outputs // 4:,} prompts (CSV)",
                        ["import_content", study.token, "prompts", str(paths["prompts"])],
                    )
                )
            results.append(
                measure(
                    f"import {options.outputs:,} outputs (CSV)",
                    ["import_content", a.token, "outputs", str(paths["outputs_csv"])],
                )
            )
            results.append(
                measure(
                    f"import {options.outputs:,} outputs (JSONL)",
                    ["import_content", b.token, "outputs", str(paths["outputs_jsonl"])],
                )
            )
            results.append(
                measure(
                    f"re-import {options.outputs:,} (unchanged)",
                    ["import_content", a.token, "outputs", str(paths["outputs_csv"])],
                )
            )
            if options.labels or options.label_import:  # 0 and 0: the output steps only
                t0 = time.perf_counter()
                seed_labels(a, options.labels)
                seconds = time.perf_counter() - t0
                print(f"{options.labels:,} labels seeded in SQL in {seconds:.0f} s")
                for fmt in ("csv", "jsonl"):
                    out = folder / f"labels.{fmt}"
                    results.append(
                        measure(
                            f"export {options.labels:,} labels ({fmt.upper()})",
                            ["export_labels", a.token, "--format", fmt, "--output", str(out)],
                        )
                    )
                    with open(out, "rb") as f:
                        lines = sum(1 for _ in f)
                    print(f"  {out.name}: {out.stat().st_size / 2**20:.0f} MiB, {lines:,} lines")
                path = labels_file(folder, b, options.label_import)
                results.append(
                    measure(
                        f"import {options.label_import:,} labels (CSV)",
                        ["import_content", b.token, "labels", str(path)],
                    )
                )
        finally:
            if not options.keep:
                t0 = time.perf_counter()
                with connection.cursor() as c:
                    for study in (a, b):
                        # Raw deletes: the ORM's cascade would load millions of rows.
                        for sql in (
                            "DELETE FROM annotation_spaanswer WHERE label_id IN (SELECT id FROM"
                            " annotation_label WHERE study_id = %s)",
                            "DELETE FROM annotation_label WHERE study_id = %s",
                            "DELETE FROM annotation_assignment WHERE study_id = %s",
                            "DELETE FROM annotation_enrolment WHERE study_id = %s",
                            "DELETE FROM annotation_unitoutput WHERE unit_id IN (SELECT id FROM"
                            " annotation_unit WHERE study_id = %s)",
                            "DELETE FROM annotation_unit WHERE study_id = %s",
                            "DELETE FROM annotation_output WHERE prompt_id IN (SELECT id FROM"
                            " annotation_prompt WHERE study_id = %s)",
                        ):
                            c.execute(sql, [study.pk])
                Study.objects.filter(pk__in=[a.pk, b.pk]).delete()
                print(f"cleaned up in {time.perf_counter() - t0:.0f} s")
    if options.json:
        options.json.write_text(json.dumps(results, indent=2) + "\n")
    over = [r["step"] for r in results if not r["ok"]]
    print("all within target" if not over else f"over target: {', '.join(over)}")


if __name__ == "__main__":
    main()
