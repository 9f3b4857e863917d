"""Small builders for import tests: files as bytes, and imports run in this process."""

import io
import json

from annotation.imports import services


def csv_bytes(header: str, rows: list[str]) -> bytes:
    return ("\n".join([header, *rows]) + "\n").encode()


def jsonl_bytes(rows: list[dict]) -> bytes:
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def run(study, kind: str, data: bytes, name: str):
    return services.import_file(study, kind, io.BytesIO(data), name)


def load_content(study, systems=("alpha", "beta"), n_prompts=4):
    """Systems, prompts and one output per prompt and system, through the importer."""
    run(
        study,
        "systems",
        csv_bytes("name,description", [f"{s},System {s}" for s in systems]),
        "s.csv",
    )
    run(
        study,
        "prompts",
        csv_bytes(
            "id,text,language,topic", [f"p{i},Prompt {i},en,t{i % 2}" for i in range(n_prompts)]
        ),
        "p.csv",
    )
    out = run(
        study,
        "outputs",
        csv_bytes(
            "id,prompt_id,system,text",
            [f"o{i}{s},p{i},{s},Output of {s} for {i}" for i in range(n_prompts) for s in systems],
        ),
        "o.csv",
    )
    assert out.status == "done", out.errors
    return out
