"""Presentations: how one unit is shown to one annotator (sides, letters, orders), drawn per draw.

Every draw is a pure function of (the annotator's queue seed, the position in their session), so
a run can be replayed; the result follows the format in the `annotation.schemes` docstring and is
stored on the Assignment, which is how analysis maps each answer back to canonical systems.

- pair: the canonical first output goes left in exactly two of every four consecutive positions
  of an annotator (a seeded permuted block), so each annotator's left share is 50% +- 2 items and
  a side bias cancels between the systems, yet the next side cannot be predicted from the last.
- spa_batch: writer letters, the reading order of prompts, the order of writers within a prompt
  and the order of questions are drawn per presentation; reverse questions (P[Y>X]) follow all
  forward ones, shuffled, and the first of them is never the twin of the last forward one.
"""

import random
import string
from collections.abc import Sequence
from dataclasses import dataclass

MASK64 = (1 << 64) - 1


def mix64(*parts: int) -> int:
    """SplitMix64 over the parts: a cheap, well-spread 64-bit hash for seeded draws."""
    h = 0x9E3779B97F4A7C15
    for part in parts:
        h = (h ^ (part & MASK64)) & MASK64
        h = (h + 0x9E3779B97F4A7C15) & MASK64
        h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & MASK64
        h ^= h >> 31
    return h


def uniform(*parts: int) -> float:
    """A seeded draw in [0, 1)."""
    return mix64(*parts) / 2.0**64


# Salts so the streams drawn from one (seed, position) are independent of each other.
SALT_SIDE = 1
SALT_SPA = 2
SALT_ROLE = 3
SALT_GOLD = 4
SALT_REPEAT = 5
SALT_WALK = 6


@dataclass(frozen=True)
class Member:
    """One output of a unit, in canonical order."""

    output_id: int
    system_id: int
    prompt_id: int


def left_is_first(seed: int, position: int) -> bool:
    """Whether the canonical first output goes left at this position (2 of every 4 positions)."""
    block, offset = divmod(position - 1, 4)
    pattern = [True, True, False, False]
    random.Random(mix64(seed, block, SALT_SIDE)).shuffle(pattern)
    return pattern[offset]


def draw(
    kind: str,
    members: Sequence[Member],
    seed: int,
    position: int,
    comparisons: Sequence[tuple[int, int, int]] = (),
    both_directions: bool = False,
) -> dict:
    """The presentation of a unit of `kind` with canonical `members`, for (seed, position).

    `comparisons` are (comparison id, system x id, system y id) of an SPA study.
    """
    if kind == "output":
        return {"kind": "output", "output": members[0].output_id}
    if kind == "pair":
        first, second = members[0].output_id, members[1].output_id
        if left_is_first(seed, position):
            return {"kind": "pair", "left": first, "right": second}
        return {"kind": "pair", "left": second, "right": first}
    if kind == "spa_batch":
        return _draw_spa(
            members, random.Random(mix64(seed, position, SALT_SPA)), comparisons, both_directions
        )
    raise ValueError(f"unknown unit kind {kind!r}")


def _draw_spa(members, rng: random.Random, comparisons, both_directions: bool) -> dict:
    systems = sorted({m.system_id for m in members})
    shuffled = systems[:]
    rng.shuffle(shuffled)
    letter_of = {sid: string.ascii_uppercase[i] for i, sid in enumerate(shuffled)}
    prompts = list(dict.fromkeys(m.prompt_id for m in members))
    rng.shuffle(prompts)
    writers = sorted(letter_of.values())
    rng.shuffle(writers)
    system_of = {letter: sid for sid, letter in letter_of.items()}
    by_cell = {(m.prompt_id, m.system_id): m.output_id for m in members}
    outputs = [
        by_cell[(pid, system_of[w])]
        for pid in prompts
        for w in writers
        if (pid, system_of[w]) in by_cell
    ]
    forward = [
        {"comparison": cid, "reverse": False, "x": letter_of[x], "y": letter_of[y]}
        for cid, x, y in comparisons
        if x in letter_of and y in letter_of
    ]
    rng.shuffle(forward)
    questions = list(forward)
    if both_directions and forward:
        reverse = [dict(q, reverse=True, x=q["y"], y=q["x"]) for q in forward]
        rng.shuffle(reverse)
        if len(reverse) > 1 and reverse[0]["comparison"] == forward[-1]["comparison"]:
            # Never ask P[Y>X] right after P[X>Y] of the same pair.
            swap = rng.randrange(1, len(reverse))
            reverse[0], reverse[swap] = reverse[swap], reverse[0]
        questions += reverse
    return {
        "kind": "spa_batch",
        "letters": {letter: sid for sid, letter in sorted(letter_of.items(), key=lambda kv: kv[1])},
        "prompts": prompts,
        "writers": writers,
        "outputs": outputs,
        "questions": questions,
    }


def output_ids(presentation: dict) -> list[int]:
    """Every output a presentation shows, in display order."""
    kind = presentation.get("kind")
    if kind == "output":
        return [presentation["output"]]
    if kind == "pair":
        return [presentation["left"], presentation["right"]]
    return list(presentation.get("outputs", []))


def task_view(presentation: dict, texts: dict[int, tuple[int, str, str, int]]) -> dict:
    """What an annotator may see of a presentation: texts and letters only, no ids or roles.

    `texts` maps output id -> (prompt id, prompt text, output text, system id). The shape depends
    only on the unit kind, never on the role of the unit or on the systems behind it.
    """
    kind = presentation["kind"]
    if kind == "output":
        _, prompt, text, _ = texts[presentation["output"]]
        return {"kind": "output", "prompt": prompt, "outputs": [text]}
    if kind == "pair":
        _, prompt, left, _ = texts[presentation["left"]]
        return {
            "kind": "pair",
            "prompt": prompt,
            "outputs": [left, texts[presentation["right"]][2]],
        }
    letter_of = {sid: letter for letter, sid in presentation["letters"].items()}
    blocks: dict[int, dict] = {}
    for j, output_id in enumerate(presentation["outputs"]):
        prompt_id, prompt, text, system_id = texts[output_id]
        block = blocks.setdefault(prompt_id, {"prompt": prompt, "outputs": []})
        # The Likert field is named by display index (annotation.schemes): no id reaches the page.
        block["outputs"].append(
            {"writer": letter_of[system_id], "text": text, "field": f"likert_{j}"}
        )
    return {
        "kind": "spa_batch",
        "prompts": [blocks[pid] for pid in presentation["prompts"] if pid in blocks],
        "writers": list(presentation["writers"]),
        "questions": [
            {"field": f"p_{i}", "x": q["x"], "y": q["y"]}
            for i, q in enumerate(presentation["questions"])
        ],
    }
