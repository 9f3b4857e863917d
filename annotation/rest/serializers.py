"""Serializers of the annotation API. Every field is named; nothing is writable unless listed in
a write serializer, and engine state (open slots, shuffle keys, walks, seeds) is never exposed
for writing (shuffle keys and seeds not even for reading: they are the queue order)."""

from rest_framework import serializers

from annotation.models import (
    ApiToken,
    Comparison,
    Enrolment,
    GoldAnswer,
    GuideVersion,
    Label,
    Membership,
    Output,
    OutputRating,
    Prompt,
    Ruling,
    SpaAnswer,
    Study,
    System,
    Unit,
    Workspace,
)


class StrictCharField(serializers.CharField):
    """A string field that takes strings only (DRF's would turn 12 into "12")."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class WorkspaceSerializer(serializers.ModelSerializer):
    class Meta:
        model = Workspace
        fields = ["slug", "name", "created_at"]
        read_only_fields = fields


class MembershipSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "username", "role", "created_at"]
        read_only_fields = fields


class StudySerializer(serializers.ModelSerializer):
    workspace = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    created_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    # May be blank, so not described as a URI.
    crowd_completion_url = serializers.CharField(read_only=True)

    class Meta:
        model = Study
        fields = [
            "token",
            "workspace",
            "name",
            "task_kind",
            "label_scheme",
            "question",
            "instructions",
            "status",
            "overlap",
            "gold_rate",
            "repeat_rate",
            "repeat_min_gap_units",
            "repeat_min_gap_minutes",
            "attention_rate",
            "lease_seconds",
            "quota_per_annotator",
            "requires_qualification",
            "qualification_pass_score",
            "spa_exposure_m",
            "spa_fixed_sample",
            "spa_both_directions",
            "spa_tau",
            "spa_collect_likert",
            "crowd_platform",
            "crowd_completion_code",
            "crowd_completion_url",
            "created_by",
            "created_at",
        ]
        read_only_fields = fields


class SystemSerializer(serializers.ModelSerializer):
    class Meta:
        model = System
        fields = ["id", "name", "description"]
        read_only_fields = fields


class PromptSerializer(serializers.ModelSerializer):
    class Meta:
        model = Prompt
        fields = ["id", "external_id", "text", "language", "topic", "source", "metadata"]
        read_only_fields = fields


class OutputSerializer(serializers.ModelSerializer):
    prompt = serializers.SlugRelatedField(slug_field="external_id", read_only=True)
    system = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Output
        fields = ["id", "prompt", "system", "text"]
        read_only_fields = fields


class UnitSerializer(serializers.ModelSerializer):
    prompt = serializers.SlugRelatedField(slug_field="external_id", read_only=True, allow_null=True)
    outputs = serializers.SerializerMethodField()

    class Meta:
        model = Unit
        fields = ["token", "kind", "role", "prompt", "outputs", "overlap", "open_slots"]
        read_only_fields = fields

    def get_outputs(self, unit) -> list[int]:
        """Output ids in canonical order (a presentation may show them in another)."""
        return [m.output_id for m in unit.members.all()]


class GoldAnswerSerializer(serializers.ModelSerializer):
    unit = serializers.SlugRelatedField(slug_field="token", read_only=True)
    role = serializers.CharField(source="unit.role", read_only=True)
    guide_version = serializers.SlugRelatedField(
        slug_field="number", read_only=True, allow_null=True
    )
    author = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = GoldAnswer
        fields = ["id", "unit", "role", "value", "rationale", "guide_version", "author"]
        read_only_fields = fields


class ComparisonSerializer(serializers.ModelSerializer):
    system_x = serializers.SlugRelatedField(slug_field="name", read_only=True)
    system_y = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Comparison
        fields = ["id", "system_x", "system_y", "expected", "position"]
        read_only_fields = fields


class GuideVersionSerializer(serializers.ModelSerializer):
    author = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = GuideVersion
        fields = ["number", "body", "changes", "requires_recalibration", "author", "published_at"]
        read_only_fields = fields


class RulingSerializer(serializers.ModelSerializer):
    guide_version = serializers.SlugRelatedField(slug_field="number", read_only=True)

    class Meta:
        model = Ruling
        fields = ["id", "guide_version", "title", "text", "example", "created_at"]
        read_only_fields = fields


class EnrolmentSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    calibrated_guide_version = serializers.SlugRelatedField(
        slug_field="number", read_only=True, allow_null=True
    )

    class Meta:
        model = Enrolment
        fields = [
            "id",
            "username",
            "pool",
            "external_id",
            "qualified_at",
            "qualification_score",
            "calibrated_guide_version",
            "quota",
            "created_at",
        ]
        read_only_fields = fields


class SpaAnswerSerializer(serializers.ModelSerializer):
    class Meta:
        model = SpaAnswer
        fields = ["comparison", "reverse", "probability", "position"]
        read_only_fields = fields


class OutputRatingSerializer(serializers.ModelSerializer):
    class Meta:
        model = OutputRating
        fields = ["output", "score"]
        read_only_fields = fields


class LabelSerializer(serializers.ModelSerializer):
    """A raw label with its context (presentation undone: `winner` is the canonical system)."""

    assignment = serializers.SlugRelatedField(slug_field="token", read_only=True)
    unit = serializers.SlugRelatedField(slug_field="token", read_only=True)
    annotator = serializers.SlugRelatedField(slug_field="username", read_only=True)
    winner = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    guide_version = serializers.SlugRelatedField(
        slug_field="number", read_only=True, allow_null=True
    )
    spa_answers = SpaAnswerSerializer(many=True, read_only=True)
    output_ratings = OutputRatingSerializer(many=True, read_only=True)

    class Meta:
        model = Label
        fields = [
            "id",
            "assignment",
            "unit",
            "annotator",
            "purpose",
            "choice",
            "score",
            "winner",
            "value",
            "spa_answers",
            "output_ratings",
            "guide_version",
            "rendered_at",
            "duration_ms",
            "active_ms",
            "exposure",
            "created_at",
        ]
        read_only_fields = fields


class ApiTokenSerializer(serializers.ModelSerializer):
    name = StrictCharField(max_length=100)

    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "created_at", "last_used_at", "revoked_at"]
        read_only_fields = ["id", "prefix", "created_at", "last_used_at", "revoked_at"]


class NewApiTokenSerializer(serializers.Serializer):
    """The answer to a token creation: the secret appears here once and is never stored."""

    token = ApiTokenSerializer(read_only=True)
    secret = serializers.CharField(read_only=True)
