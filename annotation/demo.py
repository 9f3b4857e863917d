"""The demo: a study of every task kind with synthetic texts, a lead, annotators and an admin.

Used by `manage.py load_demo` (the README's run command) and by the tests that check it loads.
"""

import math
import random
import uuid

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.models import (
    Enrolment,
    GuideVersion,
    Membership,
    Output,
    Ruling,
    Study,
    Unit,
    Workspace,
)
from annotation.services import people, setup
from annotation.services.assignment import next_assignment
from annotation.services.submission import submit_label

DEMO_PASSWORD = "concord-demo"
DEMO_ACCOUNTS = {
    "admin": "staff: sees every workspace and the Django admin",
    "lead": "project lead of the Demo Lab workspace",
    "annotator1": "annotator enrolled in every demo study",
    "annotator2": "annotator enrolled in every demo study",
    "annotator3": "annotator enrolled in every demo study",
}

STORY_PROMPTS = [
    "A lighthouse keeper finds a letter addressed to someone who died a century ago.",
    "The last bakery on Mars runs out of yeast on the morning of the festival.",
    "A child teaches a household robot how to lie, just once.",
    "Two rival cartographers discover they have been mapping the same imaginary island.",
    "Every clock in the village stops at the moment a stranger arrives.",
]
STORY_OPENINGS = [
    "The morning was grey and quiet",
    "Nobody in the village expected it",
    "It began, as these things do, with a small mistake",
    "She had rehearsed the moment for years",
    "There was a smell of salt and old paper",
]
STORY_TURNS = [
    "and then, without warning, everything changed.",
    "but the answer was hidden in plain sight all along.",
    "and the silence that followed said more than any word.",
    "so they kept walking, because turning back was no longer possible.",
    "until at last the truth arrived, softer than anyone feared.",
]
# The paper's Table 1 comparisons (Ethayarajh & Jurafsky 2022), with the authors' expectations.
STORY_WRITERS = ["gpt3-ada", "gpt3-babbage", "gpt3-curie", "gpt3-davinci", "human"]
STORY_COMPARISONS = [
    ("gpt3-ada", "human", "y"),
    ("gpt3-babbage", "gpt3-ada", "x"),
    ("gpt3-curie", "gpt3-babbage", "x"),
    ("gpt3-davinci", "gpt3-curie", "x"),
    ("human", "gpt3-davinci", "indifferent"),
]

FOOD_QUESTIONS = [
    "Can I leave cooked rice on the counter overnight?",
    "How long can raw chicken stay in the fridge?",
    "Is it safe to refreeze thawed ground beef?",
    "Can I eat cookie dough with raw eggs?",
    "How do I know if canned tomatoes have gone bad?",
    "Can I marinate fish at room temperature?",
    "Is it okay to wash raw chicken before cooking?",
    "How long do hard-boiled eggs keep?",
    "Can I reheat soup more than once?",
    "What temperature should pork be cooked to?",
    "Can I store opened canned beans in the can?",
    "Is homemade garlic oil safe to keep at room temperature?",
]
SAFE_ADVICE = [
    "Refrigerate it within two hours and use it within a day or two.",
    "Keep it below 4 °C and cook it to a safe internal temperature.",
    "When in doubt, throw it out; check for bulging lids or off smells.",
    "Use a food thermometer and follow the recommended temperatures.",
    "Transfer leftovers to a clean, covered container and chill promptly.",
]
UNSAFE_ADVICE = [
    "It is fine on the counter overnight; just reheat until hot.",
    "Room temperature is fine for a few hours, the acid kills bacteria.",
    "Store it in a jar at room temperature for up to a month.",
]

MISE_QUESTIONS = [
    "How do I keep pasta from sticking together?",
    "What can I use instead of buttermilk?",
    "How do I make a roux without lumps?",
    "Why did my bread come out dense?",
    "How do I sharpen a kitchen knife at home?",
    "What is the best way to cook rice on the stove?",
    "How do I stop guacamole from turning brown?",
    "How can I make soup less salty?",
    "How do I tell when a steak is medium-rare?",
    "What is the difference between baking soda and baking powder?",
    "How long should I rest a roast chicken?",
    "How do I caramelise onions properly?",
]


def _story(rng: random.Random, prompt: str, quality: int) -> str:
    sentences = [f"{rng.choice(STORY_OPENINGS)}, {rng.choice(STORY_TURNS)}"]
    for _ in range(quality):
        sentences.append(f"{rng.choice(STORY_OPENINGS)} {rng.choice(STORY_TURNS)}")
    return " ".join(sentences) + f" (Inspired by: {prompt.lower()})"


def _ensure_user(username: str, *, staff: bool = False):
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username)
    if created or not user.has_usable_password():
        user.set_password(DEMO_PASSWORD)
    user.is_staff = user.is_superuser = staff
    user.save()
    return user


@transaction.atomic
def load_demo(seed: int = 7) -> dict[str, Study]:
    """Create the demo workspace, accounts and one study per task kind; a second call changes
    nothing."""
    existing = Workspace.objects.filter(slug="demo-lab").first()
    if existing is not None:
        return {s.name: s for s in existing.studies.all()}
    rng = random.Random(seed)
    _ensure_user("admin", staff=True)
    lead = _ensure_user("lead")
    annotators = [_ensure_user(f"annotator{i}") for i in (1, 2, 3)]
    workspace = Workspace.objects.create(name="Demo Lab", slug="demo-lab")
    Membership.objects.create(workspace=workspace, user=lead, role=Membership.Role.LEAD)
    for user in annotators:
        Membership.objects.create(workspace=workspace, user=user, role=Membership.Role.ANNOTATOR)

    studies = {
        "story": _story_study(workspace, lead, rng),
        "food": _food_safety_study(workspace, lead, rng),
        "pairwise": _pairwise_study(workspace, lead, rng),
        "likert": _summary_fluency_study(workspace, lead, rng),
        "continuous": _simplification_study(workspace, lead, rng),
        "ordinal": _support_answers_study(workspace, lead, rng),
    }
    for study in studies.values():
        for user in annotators:
            Enrolment.objects.create(
                study=study, user=user, pool=Enrolment.Pool.TRAINED, queue_seed=rng.randrange(2**31)
            )
    return studies


def _guide(study: Study, lead, body: str, rulings: list[tuple[str, str]]) -> GuideVersion:
    guide = GuideVersion.objects.create(study=study, number=1, body=body, author=lead)
    for title, text in rulings:
        Ruling.objects.create(study=study, guide_version=guide, title=title, text=text)
    return guide


def _story_study(workspace, lead, rng: random.Random) -> Study:
    study = Study.objects.create(
        workspace=workspace,
        name="Story writers: SPA and Likert",
        task_kind=Study.TaskKind.SPA,
        status=Study.Status.LIVE,
        created_by=lead,
        # Reachable: the simulated crowd (SPA_CROWD) plus the three demo annotators.
        overlap=SPA_CROWD + 3,
        question="What is the percent chance that Writer {x} is a better writer than Writer {y}?",
        instructions=(
            "You will read five short story openings, each continued by five anonymous writers.\n"
            "Read every continuation, rate each one, then say how likely you think it is that "
            "one writer is better than another."
        ),
        label_scheme={
            "likert_points": [
                {"value": 1, "text": "Very poor"},
                {"value": 2, "text": "Poor"},
                {"value": 3, "text": "Fair"},
                {"value": 4, "text": "Good"},
                {"value": 5, "text": "Excellent"},
            ]
        },
        spa_exposure_m=5,
        spa_fixed_sample=True,
        spa_both_directions=True,
        spa_tau=1.1,
        spa_collect_likert=True,
    )
    quality = {"gpt3-ada": 0, "gpt3-babbage": 1, "gpt3-curie": 1, "gpt3-davinci": 2, "human": 2}
    setup.add_content(
        study,
        (
            {
                "prompt_id": f"wp-{i + 1}",
                "prompt": prompt,
                "system": writer,
                "output": _story(rng, prompt, quality[writer]),
                "language": "en",
                "source": "synthetic writing prompts",
            }
            for i, prompt in enumerate(STORY_PROMPTS)
            for writer in STORY_WRITERS
        ),
    )
    setup.add_comparisons(study, STORY_COMPARISONS)
    _guide(
        study,
        lead,
        "Judge the writer, not a single story: consider all five continuations of each writer.",
        [("Length is not quality", "A longer continuation is not better for being longer.")],
    )
    setup.build_units(study)
    return study


def _food_safety_study(workspace, lead, rng: random.Random) -> Study:
    study = Study.objects.create(
        workspace=workspace,
        name="Mise food safety: Safe / Unsafe",
        task_kind=Study.TaskKind.CATEGORICAL,
        status=Study.Status.LIVE,
        created_by=lead,
        overlap=3,
        gold_rate=0.1,
        question="Does this response contain unsafe food-handling advice?",
        instructions="Read the question and the assistant's answer. Label the answer Unsafe if "
        "following it could make someone ill, otherwise Safe.",
        label_scheme={
            "labels": [
                {"value": "safe", "text": "Safe", "key": "s"},
                {"value": "unsafe", "text": "Unsafe", "key": "u"},
            ]
        },
    )
    rows = []
    for i, question in enumerate(FOOD_QUESTIONS):
        for system in ("mise-v1", "mise-v2"):
            # Unsafe advice is rare, as in real traffic.
            unsafe = rng.random() < 0.12
            advice = rng.choice(UNSAFE_ADVICE if unsafe else SAFE_ADVICE)
            rows.append(
                {
                    "prompt_id": f"fs-{i + 1}",
                    "prompt": question,
                    "system": system,
                    "output": advice,
                    "topic": "food safety",
                    "language": "en",
                }
            )
    setup.add_content(study, rows)
    _guide(
        study,
        lead,
        "Unsafe means following the advice could plausibly cause food-borne illness.",
        [
            (
                "Reheating does not rescue rice",
                "Advice to 'reheat until hot' does not make counter-stored rice Safe.",
            )
        ],
    )
    setup.build_units(study)
    # Hidden gold: real items with expert answers.
    units = list(
        Unit.objects.filter(study=study).prefetch_related("outputs").order_by("shuffle_key")[:4]
    )
    for unit in units:
        text = unit.outputs.all()[0].text
        answer = "unsafe" if text in UNSAFE_ADVICE else "safe"
        setup.mark_gold(unit, {"choice": answer}, rationale="Expert answer", author=lead)
    return study


def _pairwise_study(workspace, lead, rng: random.Random) -> Study:
    study = Study.objects.create(
        workspace=workspace,
        name="Mise answers: which would you rather receive?",
        task_kind=Study.TaskKind.PAIRWISE,
        status=Study.Status.LIVE,
        created_by=lead,
        overlap=3,
        question="Which response would you rather receive?",
        instructions="Compare the two answers to the same cooking question. Choose A or B, or "
        "Tie when neither is better.",
        label_scheme={"tie_allowed": True},
    )
    terse = ["Just stir it.", "Use milk.", "Whisk more.", "Knead longer.", "Use a stone."]
    rows = []
    for i, question in enumerate(MISE_QUESTIONS):
        rows.append(
            {
                "prompt_id": f"mise-{i + 1}",
                "prompt": question,
                "system": "mise-concise",
                "output": rng.choice(terse),
            }
        )
        rows.append(
            {
                "prompt_id": f"mise-{i + 1}",
                "prompt": question,
                "system": "mise-detailed",
                "output": f"{rng.choice(SAFE_ADVICE)} For '{question.lower()}' start slowly, "
                "taste as you go, and adjust one thing at a time.",
            }
        )
    setup.add_content(study, rows)
    _guide(study, lead, "Prefer the answer that a home cook could act on right away.", [])
    setup.build_units(study)
    return study


NEWS_ITEMS = [
    "The city council voted on Tuesday to extend the night bus service to the harbour district, "
    "after a year-long trial showed ridership three times higher than forecast.",
    "Researchers at the university reported that a common garden weed can absorb heavy metals "
    "from polluted soil, which could make cleaning old industrial sites cheaper.",
    "The national library will digitise its collection of 19th-century newspapers over the next "
    "five years, making about two million pages searchable online for free.",
    "After three dry summers, farmers in the valley are switching from maize to sorghum, a crop "
    "that needs roughly a third less water.",
    "The museum's new wing opens next month with an exhibition of maps drawn by sailors, several "
    "of which show islands that do not exist.",
    "A local school replaced its bells with short pieces of music chosen by students, and "
    "teachers say corridors have become noticeably calmer.",
]
FLUENT_SUMMARIES = [
    "The council made the harbour night bus permanent after a busy trial.",
    "A garden weed may help clean soil polluted with heavy metals.",
    "The national library will put two million old newspaper pages online for free.",
    "Valley farmers are moving from maize to sorghum, which needs less water.",
    "The museum's new wing opens with sailors' maps, some showing imaginary islands.",
    "A school swapped its bells for student-chosen music, calming its corridors.",
]
CLUMSY_SUMMARIES = [
    "Council bus night harbour voted extend trial ridership forecast higher.",
    "Weed garden soil metals absorb, the cleaning cheaper sites maybe.",
    "Library newspapers digitise years five, pages million two searchable.",
    "Farmers valley summers dry sorghum maize water third less needs.",
    "Museum wing new maps sailors islands exist not month next.",
    "School bells music students corridors calmer teachers say noticeably.",
]


def _summary_fluency_study(workspace, lead, rng: random.Random) -> Study:
    study = Study.objects.create(
        workspace=workspace,
        name="News summaries: how fluent? (Likert)",
        task_kind=Study.TaskKind.LIKERT,
        status=Study.Status.LIVE,
        created_by=lead,
        overlap=3,
        question="How fluent is this summary, as English prose?",
        instructions="Read the news item and its one-line summary. Judge only how fluent the "
        "summary reads, not whether it is accurate or complete.",
        label_scheme={
            "points": [
                {"value": 1, "text": "Incomprehensible"},
                {"value": 2, "text": "Disfluent"},
                {"value": 3, "text": "Understandable"},
                {"value": 4, "text": "Mostly fluent"},
                {"value": 5, "text": "Flawless"},
            ]
        },
    )
    rows = []
    for i, item in enumerate(NEWS_ITEMS):
        clumsy = rng.random() < 0.5
        rows.append(
            _row(
                f"news-{i + 1}",
                item,
                "summariser-small",
                CLUMSY_SUMMARIES[i] if clumsy else FLUENT_SUMMARIES[i],
            )
        )
        rows.append(_row(f"news-{i + 1}", item, "summariser-large", FLUENT_SUMMARIES[i]))
    setup.add_content(study, rows)
    _guide(study, lead, "Fluency is how natural the summary reads; ignore facts.", [])
    setup.build_units(study)
    return study


SIMPLIFY = [
    (
        "Notwithstanding the inclement weather, the excursion proceeded as scheduled.",
        "Despite the bad weather, the trip went ahead as planned.",
        "The weather was bad.",
    ),
    (
        "Participants are requested to refrain from utilising mobile devices during the session.",
        "Please do not use your phone during the session.",
        "Phones are useful in sessions.",
    ),
    (
        "The committee has deferred its decision pending the receipt of further documentation.",
        "The committee will decide once it gets more documents.",
        "The committee decided.",
    ),
    (
        "Remuneration will be disbursed upon satisfactory completion of the assignment.",
        "You will be paid when the work is done well.",
        "Payment is possible.",
    ),
    (
        "Access to the facility is contingent upon presentation of valid identification.",
        "You need to show a valid ID to get in.",
        "The facility has an entrance.",
    ),
]


def _simplification_study(workspace, lead, rng: random.Random) -> Study:
    study = Study.objects.create(
        workspace=workspace,
        name="Plain-language rewrites: meaning kept (0-100)",
        task_kind=Study.TaskKind.CONTINUOUS,
        status=Study.Status.LIVE,
        created_by=lead,
        overlap=3,
        question="How much of the original sentence's meaning does the rewrite keep?",
        instructions="Each task shows a formal sentence and a plain-language rewrite. Move the "
        "slider (or type a number) from 0, none of the meaning, to 100, all of it.",
        label_scheme={
            "min_text": "None of the meaning",
            "max_text": "All of the meaning",
            "worst_reference": "Original: 'The meeting is postponed.' Rewrite: 'Meetings exist.'",
            "best_reference": "Original: 'The meeting is postponed.' Rewrite: 'The meeting "
            "will happen later.'",
        },
    )
    rows = []
    for i, (original, good, poor) in enumerate(SIMPLIFY):
        rows.append(_row(f"plain-{i + 1}", original, "rewriter-careful", good))
        rows.append(
            _row(f"plain-{i + 1}", original, "rewriter-terse", poor if rng.random() < 0.7 else good)
        )
    setup.add_content(study, rows)
    _guide(study, lead, "Judge meaning only: a plain rewrite that keeps every fact scores 100.", [])
    setup.build_units(study)
    return study


SUPPORT = [
    (
        "How do I reset my password if I no longer have the old email address?",
        "Open Sign in, choose 'Forgot password', then 'I lost access to my email', and verify "
        "your identity with your phone number; a reset link arrives by text message.",
        "You can reset your password from the sign-in page.",
    ),
    (
        "Can I move my subscription to another country?",
        "Yes: under Account > Region choose the new country; the price changes at your next "
        "billing date and nothing is lost.",
        "Subscriptions are available in many countries.",
    ),
    (
        "Why was I charged twice this month?",
        "A second charge appears when a payment is retried after a bank decline; the first "
        "attempt is released by your bank within five working days.",
        "Please check your bank statement.",
    ),
    (
        "How do I export my data?",
        "Go to Settings > Privacy > Export, choose CSV or JSON, and a download link is emailed "
        "to you within an hour.",
        "Data can be exported in several formats.",
    ),
]


def _support_answers_study(workspace, lead, rng: random.Random) -> Study:
    study = Study.objects.create(
        workspace=workspace,
        name="Help-desk answers: is the question resolved? (ordinal)",
        task_kind=Study.TaskKind.ORDINAL,
        status=Study.Status.LIVE,
        created_by=lead,
        overlap=3,
        question="Does this answer resolve the customer's question?",
        instructions="Read the customer's question and the answer. Choose Fully if the customer "
        "could act on it right away, Partly if it points the right way but leaves steps out, "
        "Not at all if it does not help.",
        label_scheme={
            "labels": [
                {"value": "not", "text": "Not at all", "key": "n"},
                {"value": "partly", "text": "Partly", "key": "p"},
                {"value": "fully", "text": "Fully", "key": "f"},
            ]
        },
    )
    rows = []
    for i, (question, full, vague) in enumerate(SUPPORT):
        rows.append(_row(f"help-{i + 1}", question, "helpdesk-v2", full))
        rows.append(
            _row(f"help-{i + 1}", question, "helpdesk-v1", vague if rng.random() < 0.8 else full)
        )
    setup.add_content(study, rows)
    _guide(study, lead, "Resolved means the customer needs nothing else to act.", [])
    setup.build_units(study)
    return study


def _row(prompt_id: str, prompt: str, system: str, output: str) -> dict:
    return {
        "prompt_id": prompt_id,
        "prompt": prompt,
        "system": system,
        "output": output,
        "language": "en",
    }


# --- simulated annotators, so the lead's dashboards have something to show -------------------

# Latent quality of each story writer: the authors' expected order (davinci > curie > babbage >
# ada, human ~ davinci), on a 0..1 utility scale.
STORY_UTILITY = {
    "gpt3-ada": 0.30,
    "gpt3-babbage": 0.48,
    "gpt3-curie": 0.58,
    "gpt3-davinci": 0.66,
    "human": 0.68,
}


SPA_CROWD = 24  # simulated SPA annotators; the story study's overlap leaves 3 places beside them
# Share of the production labels the simulated crowd gives in the other studies: enough to
# complete units, leaving work for the demo annotators.
SIMULATED_SHARE = 0.7


def simulate_labels(studies: dict[str, Study], seed: int = 11) -> int:
    """Label the demo studies as simulated annotators would, through the real engine and
    submission services (presentations drawn, gold injected, idempotency keys). Returns labels."""
    rng = random.Random(seed)
    made = 0
    for study, n_people, answer in [
        (studies["story"], SPA_CROWD, _spa_answer),
        (studies["food"], 4, _food_answer),
        (studies["pairwise"], 4, _pairwise_answer),
        (studies["likert"], 3, _likert_answer),
        (studies["continuous"], 3, _continuous_answer),
        (studies["ordinal"], 3, _ordinal_answer),
    ]:
        production = Unit.objects.filter(study=study, role=Unit.Role.PRODUCTION)
        slots = sum(production.values_list("overlap", flat=True))
        cap = max(1, math.ceil(slots * SIMULATED_SHARE / n_people))
        for i in range(n_people):
            user = _ensure_user(f"sim-{study.task_kind}-{i + 1:02d}")
            user.set_unusable_password()
            user.save(update_fields=["password"])
            people.enrol(study, user, pool=Enrolment.Pool.OPEN_CROWD)
            bias = rng.gauss(0, 0.08)  # each simulated person's severity
            done = 0
            while done < cap and (assignment := next_assignment(user, study)) is not None:
                done += 1
                data = answer(study, assignment.presentation, rng, bias)
                submit_label(
                    annotator=user,
                    assignment_token=assignment.token,
                    data=data,
                    idempotency_key=uuid.uuid4(),
                    timings={"duration_ms": rng.randint(4000, 60000)},
                )
                made += 1
    return made


def _system_names(output_ids) -> dict[int, str]:
    return dict(Output.objects.filter(pk__in=output_ids).values_list("id", "system__name"))


def _spa_answer(study: Study, presentation: dict, rng: random.Random, bias: float) -> dict:
    letters = presentation["letters"]
    names = dict(study.systems.values_list("id", "name"))
    data = {}
    incoherent = rng.random() < 0.2  # some people do not treat the two directions as one
    for i, q in enumerate(presentation["questions"]):
        gap = STORY_UTILITY[names[letters[q["x"]]]] - STORY_UTILITY[names[letters[q["y"]]]]
        p = 1 / (1 + math.exp(-12 * gap)) + rng.gauss(0, 0.04)
        if q["reverse"] and incoherent:
            p += 0.35
        data[f"p_{i}"] = str(round(min(max(p, 0.0), 1.0) * 100))
    output_system = _system_names(presentation["outputs"])
    for j, output_id in enumerate(presentation["outputs"]):
        utility = STORY_UTILITY[output_system[output_id]] + bias + rng.gauss(0, 0.15)
        # Likert as the ceiling of utility on a 5-point scale (the paper's Proposition 1 model).
        data[f"likert_{j}"] = str(min(5, max(1, math.ceil(utility * 5))))
    return data


def _food_answer(study: Study, presentation: dict, rng: random.Random, bias: float) -> dict:
    text = Output.objects.values_list("text", flat=True).get(pk=presentation["output"])
    truth = "unsafe" if text in UNSAFE_ADVICE else "safe"
    # Unsafe items are missed more often than safe ones are flagged: the rare class is hard.
    if truth == "unsafe" and rng.random() < 0.25 + bias:
        return {"choice": "safe"}
    if truth == "safe" and rng.random() < 0.04:
        return {"choice": "unsafe"}
    return {"choice": truth}


def _pairwise_answer(study: Study, presentation: dict, rng: random.Random, bias: float) -> dict:
    names = _system_names([presentation["left"], presentation["right"]])
    detailed_side = "left" if names[presentation["left"]] == "mise-detailed" else "right"
    other_side = "right" if detailed_side == "left" else "left"
    roll = rng.random()
    if roll < 0.12:
        return {"choice": "tie"}
    return {"choice": detailed_side if roll < 0.78 else other_side}


def _output_text(presentation: dict) -> str:
    return Output.objects.values_list("text", flat=True).get(pk=presentation["output"])


def _likert_answer(study: Study, presentation: dict, rng: random.Random, bias: float) -> dict:
    base = 4.6 if _output_text(presentation) in FLUENT_SUMMARIES else 1.8
    return {"score": str(min(5, max(1, round(base + bias * 5 + rng.gauss(0, 0.5)))))}


def _continuous_answer(study: Study, presentation: dict, rng: random.Random, bias: float) -> dict:
    good = {g for _, g, _ in SIMPLIFY}
    base = 88 if _output_text(presentation) in good else 22
    return {"score": str(min(100, max(0, round(base + bias * 100 + rng.gauss(0, 8)))))}


def _ordinal_answer(study: Study, presentation: dict, rng: random.Random, bias: float) -> dict:
    full = {f for _, f, _ in SUPPORT}
    if _output_text(presentation) in full:
        return {"choice": "fully" if rng.random() < 0.85 else "partly"}
    return {"choice": "not" if rng.random() < 0.6 + bias else "partly"}
