"""The versioned guide: safe Markdown, publishing versions with rulings, diffs between versions,
recalibration batches, and gold answers flagged when a ruling cites their item.

Guide text is written by leads and read by annotators: it is rendered by Python-Markdown and then
cleaned by nh3 against an allow-list, so no script, event handler, `javascript:` link or `hx-*`
attribute survives (pages also wrap it in `hx-disable` and serve an enforcing CSP).
"""

import difflib
import random
from dataclasses import dataclass, field

import markdown
import nh3
from django.db import transaction
from django.db.models import Max
from django.utils.safestring import SafeString, mark_safe

from annotation.models import GoldAnswer, GuideVersion, Ruling, Study, Unit
from annotation.services.training_items import (
    TrainingError,
    answer_value,
    item_texts,
    shared_output_units,
    training_copy,
)

ALLOWED_TAGS = {
    *("p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "code"),
    *("strong", "em", "b", "i", "del", "sup", "sub", "ul", "ol", "li", "dl", "dt", "dd"),
    *("a", "table", "thead", "tbody", "tr", "th", "td", "abbr"),
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "abbr": {"title"}, "ol": {"start"}}
URL_SCHEMES = {"http", "https", "mailto"}
MARKDOWN_EXTENSIONS = ["tables", "sane_lists", "fenced_code", "def_list"]
# Items Concord draws for a recalibration batch when the lead does not pick them.
RECALIBRATION_BATCH = 5


def render_markdown(text: str) -> SafeString:
    """Guide Markdown as HTML that is safe to put in a page: allow-listed tags and attributes,
    links only to http(s)/mailto (or relative) with rel=noopener, scripts dropped with their
    content."""
    html = markdown.markdown(text or "", extensions=MARKDOWN_EXTENSIONS, output_format="html")
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        clean_content_tags={"script", "style"},
        strip_comments=True,
    )
    return mark_safe(clean)  # noqa: S308 - sanitised by nh3 just above


# --- reading ------------------------------------------------------------------------------------


def current_version(study: Study) -> GuideVersion | None:
    return study.guide_versions.order_by("-number").first()


@dataclass(frozen=True)
class RulingView:
    """A ruling as the guide panel shows it: with its examples' texts and whether it is new."""

    ruling: Ruling
    version: int
    newest: bool
    examples: tuple = ()


def rulings_in_force(study: Study, version: GuideVersion | None = None) -> list[RulingView]:
    """Every ruling published up to `version` (default: the current one), newest first; those
    introduced in the latest version with rulings are marked newest."""
    version = version or current_version(study)
    if version is None:
        return []
    rulings = list(
        Ruling.objects.filter(study=study, guide_version__number__lte=version.number)
        .select_related("guide_version")
        .prefetch_related("examples")
        .order_by("-guide_version__number", "-id")
    )
    if not rulings:
        return []
    newest = rulings[0].guide_version.number
    texts = item_texts({u.pk for r in rulings for u in r.examples.all()})
    return [
        RulingView(
            ruling=r,
            version=r.guide_version.number,
            newest=r.guide_version.number == newest,
            examples=tuple(texts[u.pk] for u in r.examples.all() if u.pk in texts),
        )
        for r in rulings
    ]


def draft_rulings(study: Study, session=None):
    """Rulings recorded but not yet published (of one calibration session, if given)."""
    qs = Ruling.objects.filter(study=study, guide_version__isnull=True)
    if session is not None:
        qs = qs.filter(session=session)
    return qs.prefetch_related("examples").order_by("id")


# --- diff ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiffLine:
    op: str  # "same" | "added" | "removed"
    old_number: int | None
    new_number: int | None
    text: str


@dataclass(frozen=True)
class GuideDiff:
    old: GuideVersion
    new: GuideVersion
    lines: tuple[DiffLine, ...]
    added: int
    removed: int
    rulings_added: tuple = field(default_factory=tuple)


def diff_versions(old: GuideVersion, new: GuideVersion) -> GuideDiff:
    """Line diff of two versions' bodies (every line, marked same/added/removed) and the rulings
    introduced after `old` up to `new`."""
    a, b = old.body.splitlines(), new.body.splitlines()
    lines: list[DiffLine] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            lines += [
                DiffLine("same", i + 1, j + 1, a[i])
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            ]
            continue
        lines += [DiffLine("removed", i + 1, None, a[i]) for i in range(i1, i2)]
        lines += [DiffLine("added", None, j + 1, b[j]) for j in range(j1, j2)]
    rulings = Ruling.objects.filter(
        study_id=new.study_id,
        guide_version__number__gt=old.number,
        guide_version__number__lte=new.number,
    ).order_by("guide_version__number", "id")
    return GuideDiff(
        old=old,
        new=new,
        lines=tuple(lines),
        added=sum(1 for x in lines if x.op == "added"),
        removed=sum(1 for x in lines if x.op == "removed"),
        rulings_added=tuple(rulings),
    )


# --- writing ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NewRuling:
    """A ruling to publish: its decision and the real items it decides."""

    title: str
    text: str
    example: str = ""
    examples: tuple[Unit, ...] = ()


def _check_ruling(title: str, text: str, field_name: str) -> None:
    if not title.strip():
        raise TrainingError(field_name, "a ruling needs a short title")
    if len(title) > 200:
        raise TrainingError(field_name, "the title is longer than 200 characters")
    if not text.strip():
        raise TrainingError(field_name, f"ruling {title!r} needs its decision text")


@transaction.atomic
def record_ruling(
    study: Study,
    *,
    title: str,
    text: str,
    example: str = "",
    examples=(),
    session=None,
) -> Ruling:
    """A draft ruling (from a calibration session): published with the next guide version."""
    _check_ruling(title, text, "title")
    ruling = Ruling.objects.create(
        study=study, title=title.strip(), text=text.strip(), example=example, session=session
    )
    ruling.examples.set(examples)
    return ruling


@transaction.atomic
def publish_version(
    study: Study,
    *,
    body: str,
    changes: str = "",
    rulings=(),
    include_drafts=None,
    requires_recalibration: bool = False,
    recalibration_units=None,
    author=None,
    seed: int | None = None,
) -> GuideVersion:
    """Publish the next version of the study's guide.

    `rulings` (NewRuling) are added with it, and so are the draft rulings in `include_drafts`
    (a queryset or list of unpublished Rulings of this study). With `requires_recalibration`,
    production stops for every annotator enrolled before now until they label the version's
    recalibration batch: `recalibration_units` as the lead picked them, or else up to
    RECALIBRATION_BATCH items drawn (seeded) from those the version's rulings cite. Gold answers
    (qualification keys included) whose items the new rulings cite are flagged for review.
    Raises TrainingError (nothing written) on a bad ruling or an empty recalibration batch.
    """
    Study.objects.select_for_update().filter(pk=study.pk).first()  # one publisher at a time
    if not body.strip():
        raise TrainingError("body", "the guide cannot be empty")
    for i, r in enumerate(rulings, 1):
        _check_ruling(r.title, r.text, f"ruling_{i}")
    drafts = list(include_drafts or [])
    for d in drafts:
        if d.study_id != study.pk or d.guide_version_id is not None:
            raise TrainingError("rulings", f"ruling {d.title!r} is not a draft of this study")
    number = (study.guide_versions.aggregate(n=Max("number"))["n"] or 0) + 1
    version = GuideVersion.objects.create(
        study=study,
        number=number,
        body=body,
        changes=changes.strip(),
        requires_recalibration=requires_recalibration,
        author=author,
    )
    made = []
    for r in rulings:
        ruling = Ruling.objects.create(
            study=study,
            guide_version=version,
            title=r.title.strip(),
            text=r.text.strip(),
            example=r.example,
        )
        ruling.examples.set(r.examples)
        made.append(ruling)
    for d in drafts:
        d.guide_version = version
        d.save(update_fields=["guide_version"])
        made.append(d)
    cited = [u for r in made for u in r.examples.all()]
    if requires_recalibration:
        picked = list(recalibration_units) if recalibration_units else _draw(cited, seed)
        if not picked:
            raise TrainingError(
                "recalibration_items",
                "a version that requires recalibration needs items: pick them, or cite example"
                " items in its rulings for Concord to draw from",
            )
        version.recalibration_units.set([training_copy(u, Unit.Role.CALIBRATION) for u in picked])
    _flag_gold(made)
    return version


def _draw(cited: list[Unit], seed: int | None) -> list[Unit]:
    unique = sorted({u.pk: u for u in cited}.values(), key=lambda u: u.pk)
    rng = random.Random(seed)
    rng.shuffle(unique)
    return unique[:RECALIBRATION_BATCH]


def _flag_gold(rulings: list[Ruling]) -> int:
    """Flag the gold answers whose items (same outputs) a ruling cites; returns how many."""
    flagged = 0
    for ruling in rulings:
        examples = list(ruling.examples.all())
        if not examples:
            continue
        linked = shared_output_units(examples)
        flagged += GoldAnswer.objects.filter(unit_id__in=linked).update(flagged_by_ruling=ruling)
    return flagged


def flagged_gold(study: Study):
    """Gold answers waiting for the lead after a ruling cited their item."""
    return (
        GoldAnswer.objects.filter(unit__study=study, flagged_by_ruling__isnull=False)
        .select_related("unit", "flagged_by_ruling", "flagged_by_ruling__guide_version")
        .order_by("id")
    )


@transaction.atomic
def resolve_flag(gold: GoldAnswer, *, answer: str | None = None, author=None) -> GoldAnswer:
    """The lead confirms a flagged gold answer (answer None) or replaces it with `answer` (a form
    value of `answer_options`); either way it is under the current guide and no longer flagged."""
    study = gold.unit.study
    if answer is not None:
        gold.value = answer_value(study, answer)
        gold.author = author
    gold.flagged_by_ruling = None
    gold.guide_version = current_version(study)
    gold.save()
    return gold
