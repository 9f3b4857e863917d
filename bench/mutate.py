"""Mutation testing of the modules that carry Concord's promises, one module at a time.

    .venv/bin/python bench/mutate.py                 # every module in [tool.concord.mutation]
    .venv/bin/python bench/mutate.py qc/loaders.py   # one module
    .venv/bin/python bench/mutate.py --survivors qc/loaders.py   # diffs of its survivors
    .venv/bin/python bench/mutate.py --database postgres://user@host/concord_mut annotation/api.py
    .venv/bin/python bench/mutate.py --only 'annotation.api.x__fast_*' annotation/api.py
    .venv/bin/python bench/mutate.py --database postgres://... --tests tests/engine/test_api.py \
        --only 'annotation.services.submission.x_prepare_label__*' annotation/services/submission.py

mutmut mutates a copy of the source under `mutants/` of the folder it runs in and, for each
mutant, runs only the tests that called the mutated function in its first, clean run. To keep a
module's run to minutes, each module runs in a scratch copy of the checkout (.mutation/<module>/)
whose [tool.mutmut] section mutates only that module and selects only the tests listed for it in
pyproject.toml's [tool.concord.mutation]. The runs use the zero-setup SQLite database, so tests
that need PostgreSQL or Chromium skip there, and so does code that runs on PostgreSQL only (the
JSON work API's one-statement hot path). `--database URL` runs on that PostgreSQL server instead,
in .mutation/<module>-pg/, each pytest session on a test database of its own named `<name>_<pid>`
(bench/mutation_plugin.py); tasks still run eagerly.

Prints, per module: mutants, killed, survived, timeouts, no tests, and the score
(killed + timeout) / (all - skipped). Not part of CI: a module takes minutes, all of them an hour.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".mutation"
PLUGIN = "mutation_plugin"  # bench/mutation_plugin.py, cheaper per-mutant set-up
COPY_IGNORE = shutil.ignore_patterns(
    ".venv",
    ".tools",
    ".git",
    ".mutation",
    "mutants",
    "test-output",
    "__pycache__",
    "*.sqlite3",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    "bench",
    "node_modules",
    "staticfiles",
)


def modules_and_tests() -> dict[str, list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return dict(config["tool"]["concord"]["mutation"])


def slug(module: str, database: str = "") -> str:
    name = module.strip("/").replace("/", "-").removesuffix(".py")
    return f"{name}-pg" if database else name


def scratch_copy(module: str, tests: list[str], database: str = "") -> Path:
    """A fresh copy of the checkout whose mutmut config mutates `module` and runs `tests`."""
    where = WORK / slug(module, database)
    if where.exists():
        shutil.rmtree(where)
    shutil.copytree(ROOT, where, ignore=COPY_IGNORE)
    shutil.copy2(ROOT / "bench" / f"{PLUGIN}.py", where / f"{PLUGIN}.py")
    pattern = f"{module.rstrip('/')}/*" if (ROOT / module).is_dir() else module
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    section = dict(config["tool"]["mutmut"])
    section["only_mutate"] = [pattern]
    section["pytest_add_cli_args_test_selection"] = [t for t in tests if (ROOT / t).exists()]
    section["also_copy"] = [*section.get("also_copy", []), f"{PLUGIN}.py"]
    section["pytest_add_cli_args"] = [*section.get("pytest_add_cli_args", []), "-p", PLUGIN]
    pyproject = (where / "pyproject.toml").read_text()
    head, sep, tail = pyproject.partition("[tool.mutmut]\n")
    rest = tail[tail.index("\n[") :] if "\n[" in tail else ""
    # JSON's strings, numbers, booleans and lists of them are TOML too.
    body = "".join(f"{key} = {json.dumps(value)}\n" for key, value in section.items())
    (where / "pyproject.toml").write_text(head + sep + body + rest)
    return where


# mutmut's CLI, minus its second full run of the tests ("clean tests"): the stats run just before
# it, in the same process, already ran every selected test unmutated and stops on any failure.
MUTMUT = """
import sys
from mutmut.workers.isolation import ForkRunner
ForkRunner.run_clean_tests = lambda self, tests: 0
from mutmut.__main__ import cli
sys.argv[0] = "mutmut"
cli()
"""


def mutmut(
    where: Path, *args: str, capture: bool = False, database: str = ""
) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "CONCORD_REQUIRE_SERVICES"):
        env.pop(name, None)  # the zero-setup SQLite database, tasks eager
    if database:
        env["DATABASE_URL"] = database
    env["CONCORD_QC_BOOTSTRAP"] = "50"
    command = [str(ROOT / ".venv" / "bin" / "python"), "-c", MUTMUT, *args]
    return subprocess.run(
        command, cwd=where, env=env, text=True, capture_output=capture, check=False
    )


def survivors(where: Path) -> list[str]:
    out = mutmut(where, "results", capture=True).stdout
    return [
        line.split(":")[0].strip()
        for line in out.splitlines()
        if line.strip().endswith(": survived")
    ]


def run_module(
    module: str, tests: list[str], children: int, database: str = "", only: list | None = None
) -> dict:
    where = scratch_copy(module, tests, database)
    started = time.monotonic()
    mutmut(where, "run", "--max-children", str(children), *(only or []), database=database)
    mutmut(where, "export-cicd-stats", capture=True)
    stats_path = where / "mutants" / "mutmut-cicd-stats.json"
    stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
    stats["module"] = module + (" (PostgreSQL)" if database else "")
    stats["seconds"] = round(time.monotonic() - started)
    scored = stats.get("total", 0) - stats.get("skipped", 0)
    caught = stats.get("killed", 0) + stats.get("timeout", 0)
    stats["score"] = round(100 * caught / scored, 1) if scored else None
    stats["survivors"] = survivors(where)
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="modules from [tool.concord.mutation]")
    parser.add_argument("--children", type=int, default=2, help="mutants run at once")
    parser.add_argument("--survivors", action="store_true", help="show survivors' diffs")
    parser.add_argument(
        "--database", default="", help="postgres://... URL to run on instead of SQLite"
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="GLOB",
        help="run only the mutants whose name matches, e.g. 'annotation.api.x__fast_*'",
    )
    parser.add_argument(
        "--tests",
        action="append",
        default=[],
        metavar="PATH",
        help="run these tests instead of the module's list (code another module's tests reach)",
    )
    args = parser.parse_args()
    table = modules_and_tests()
    chosen = args.modules or list(table)
    unknown = [m for m in chosen if m not in table]
    if unknown:
        sys.exit(f"not in [tool.concord.mutation]: {', '.join(unknown)}")
    if args.survivors:
        for module in chosen:
            where = WORK / slug(module, args.database)
            for name in survivors(where):
                print(mutmut(where, "show", name, capture=True).stdout)
        return
    results = [
        run_module(m, args.tests or table[m], args.children, args.database, args.only)
        for m in chosen
    ]
    WORK.mkdir(exist_ok=True)
    (WORK / ("scores-pg.json" if args.database else "scores.json")).write_text(
        json.dumps(results, indent=2)
    )
    print(
        f"\n{'module':32} {'mutants':>7} {'killed':>6} {'survived':>8} {'timeout':>7} "
        f"{'no tests':>8} {'score %':>7} {'s':>6}"
    )
    for r in results:
        print(
            f"{r['module']:32} {r.get('total', 0):>7} {r.get('killed', 0):>6} "
            f"{r.get('survived', 0):>8} {r.get('timeout', 0):>7} {r.get('no_tests', 0):>8} "
            f"{r['score'] if r['score'] is not None else '-':>7} {r['seconds']:>6}"
        )
        for name in r["survivors"]:
            print(f"    survived: {name}")


if __name__ == "__main__":
    main()
