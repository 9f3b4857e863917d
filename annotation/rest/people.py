"""Who works on a study, through the API: enrol an existing account, change an enrolment's pool
and quota, make and withdraw single-use invite links. All of it is annotation.services.invites,
the People page's service; an invite's secret is answered once, on creation (only its hash is
kept).
"""

from datetime import timedelta

from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response

from annotation.models import Enrolment, Invite
from annotation.rest import views
from annotation.rest.fields import (
    INT_MAX,
    DescriptionOnly,
    StrictCharField,
    StrictIntegerField,
    WriteSerializer,
    id_or_404,
    service_error,
)
from annotation.rest.pagination import SmallPagination
from annotation.rest.permissions import LeadStudyMixin
from annotation.rest.serializers import EnrolmentSerializer
from annotation.services import invites


class EnrolmentWriteSerializer(WriteSerializer):
    pool = serializers.ChoiceField(choices=Enrolment.Pool.choices, required=False)
    quota = StrictIntegerField(
        min_value=0,
        max_value=INT_MAX,
        allow_null=True,
        required=False,
        help_text="Tasks this annotator may do; null: the study's quota applies.",
    )


class NewEnrolmentSerializer(EnrolmentWriteSerializer):
    username = StrictCharField(max_length=150, help_text="An existing, active account.")


class EnrolmentList(views.EnrolmentList):
    """Annotators enrolled in the study; POST enrols an existing account by username (and makes
    it an annotator of the workspace unless it is a member already)."""

    metadata_class = DescriptionOnly

    @extend_schema(request=NewEnrolmentSerializer, responses={201: EnrolmentSerializer})
    def post(self, request, study):
        incoming = NewEnrolmentSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        try:
            enrolment = invites.add_existing_user(
                study=self.study,
                username=data["username"],
                pool=data.get("pool", Enrolment.Pool.TRAINED),
                quota=data.get("quota"),
            )
        except ValidationError as error:
            raise service_error(error) from None
        return Response(EnrolmentSerializer(enrolment).data, status=status.HTTP_201_CREATED)


class EnrolmentDetail(LeadStudyMixin, generics.RetrieveAPIView):
    """One enrolment of the study; PATCH changes its pool and quota."""

    serializer_class = EnrolmentSerializer
    lookup_url_kwarg = "enrolment"
    http_method_names = ["get", "patch", "head", "options"]

    def get_queryset(self):
        return Enrolment.objects.filter(study=self.study).select_related(
            "user", "calibrated_guide_version"
        )

    def get_object(self):
        return get_object_or_404(self.get_queryset(), pk=id_or_404(self.kwargs["enrolment"]))

    @extend_schema(request=EnrolmentWriteSerializer, responses={200: EnrolmentSerializer})
    def patch(self, request, study, enrolment):
        target = self.get_object()
        incoming = EnrolmentWriteSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        try:
            invites.update_enrolment(
                target, pool=data.get("pool", target.pool), quota=data.get("quota", target.quota)
            )
        except ValidationError as error:
            raise service_error(error) from None
        return Response(EnrolmentSerializer(target).data)


class InviteSerializer(serializers.ModelSerializer):
    state = serializers.SerializerMethodField()
    used_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = Invite
        fields = [
            "id",
            "pool",
            "quota",
            "note",
            "state",
            "created_at",
            "expires_at",
            "used_at",
            "used_by",
            "revoked_at",
        ]
        read_only_fields = fields

    def get_state(self, invite) -> str:
        """open, used, expired or withdrawn."""
        return invite.state(timezone.now())


class NewInviteSerializer(EnrolmentWriteSerializer):
    note = StrictCharField(
        max_length=200, allow_blank=True, required=False, default="", help_text="Whom it is for."
    )
    valid_days = StrictIntegerField(
        min_value=1, max_value=90, required=False, default=7, help_text="Days the link works."
    )


class NewInviteResultSerializer(serializers.Serializer):
    invite = InviteSerializer()
    link = serializers.CharField(help_text="The invite link: shown this once, never stored.")


class InviteList(LeadStudyMixin, generics.ListAPIView):
    """The study's invites, newest first (their links are never shown again); POST makes a new
    single-use link for one new annotator."""

    metadata_class = DescriptionOnly

    serializer_class = InviteSerializer
    pagination_class = SmallPagination
    ordering_fields = ["created_at", "id"]
    ordering = ["-created_at", "-id"]

    def get_queryset(self):
        return Invite.objects.filter(study=self.study).select_related("used_by")

    @extend_schema(request=NewInviteSerializer, responses={201: NewInviteResultSerializer})
    def post(self, request, study):
        incoming = NewInviteSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        try:
            invite, secret = invites.create_invite(
                study=self.study,
                created_by=request.user,
                pool=data.get("pool", Enrolment.Pool.TRAINED),
                quota=data.get("quota"),
                note=data["note"],
                valid_for=timedelta(days=data["valid_days"]),
            )
        except ValidationError as error:
            raise service_error(error) from None
        body = {
            "invite": InviteSerializer(invite).data,
            "link": request.build_absolute_uri(invites.invite_path(secret)),
        }
        return Response(body, status=status.HTTP_201_CREATED)


class InviteDetail(LeadStudyMixin, generics.RetrieveDestroyAPIView):
    """One invite of the study; DELETE withdraws it (its link stops working; a used invite is
    left as it is). The record stays."""

    serializer_class = InviteSerializer
    lookup_url_kwarg = "invite"

    def get_queryset(self):
        return Invite.objects.filter(study=self.study).select_related("used_by")

    def get_object(self):
        return get_object_or_404(self.get_queryset(), pk=id_or_404(self.kwargs["invite"]))

    def perform_destroy(self, instance):
        invites.revoke_invite(instance)
