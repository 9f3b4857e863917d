"""The caller's own API tokens: list, create (the secret is answered once), revoke."""

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response

from annotation import selectors
from annotation.rest.pagination import SmallPagination
from annotation.rest.serializers import ApiTokenSerializer, NewApiTokenSerializer
from annotation.rest.throttles import TokenCreationThrottle, WriteThrottle
from annotation.services import api_tokens


class TokenList(generics.ListCreateAPIView):
    """Your API tokens (revoked ones included); POST a name to create one."""

    serializer_class = ApiTokenSerializer
    pagination_class = SmallPagination
    throttle_classes = [WriteThrottle, TokenCreationThrottle]
    ordering_fields = ["created_at", "id"]
    ordering = ["-created_at", "-id"]

    def get_queryset(self):
        return selectors.api_tokens_for(self.request.user)

    @extend_schema(request=ApiTokenSerializer, responses={201: NewApiTokenSerializer})
    def post(self, request, *args, **kwargs):
        incoming = ApiTokenSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        try:
            made = api_tokens.create_token(request.user, incoming.validated_data["name"])
        except api_tokens.TokenError as error:
            raise serializers.ValidationError({error.field: [error.message]}) from None
        body = NewApiTokenSerializer({"token": made.token, "secret": made.secret}).data
        return Response(body, status=status.HTTP_201_CREATED)


class TokenDetail(generics.RetrieveDestroyAPIView):
    """One of your tokens; DELETE revokes it (the record stays, marked revoked)."""

    serializer_class = ApiTokenSerializer
    lookup_url_kwarg = "token_id"

    def get_queryset(self):
        return selectors.api_tokens_for(self.request.user)

    def perform_destroy(self, instance):
        api_tokens.revoke_token(self.request.user, instance.pk)
