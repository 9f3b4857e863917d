"""The OpenAPI schema's finishing touches, and the server-rendered docs page built from it.

Every operation documents the errors any route can answer (bad input, no credentials, out of
reach, throttled), so a client and the schemathesis run know every status to expect.
"""

from functools import cache

from django.shortcuts import render
from django.views.decorators.http import require_GET
from drf_spectacular.generators import SchemaGenerator

ERROR_SCHEMA = {
    "type": "object",
    "description": "`detail` for most errors; for invalid input, field name -> messages.",
    "properties": {"detail": {"type": "string"}},
    "additionalProperties": True,
}
ERRORS = {
    "400": "Invalid input (the body names each offending field).",
    "401": "No valid credentials (a Bearer token or a signed-in session).",
    "403": "Refused (e.g. a session request without its CSRF token).",
    "404": "Not found, or not yours to see.",
    "405": "Method not allowed on this route.",
    "429": "Too many requests; retry after the Retry-After header.",
}
# Only where a body is read: a media type the operation does not parse, or a malformed one.
BODY_ERROR = "Unsupported or malformed body media type (see the operation's request body)."


def add_error_responses(result, generator, request, public):
    """drf-spectacular postprocessing hook: the common error answers on every operation."""
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components.setdefault("Error", ERROR_SCHEMA)
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            errors = dict(ERRORS)
            if "requestBody" in operation:
                errors["415"] = BODY_ERROR
            for code, text in errors.items():
                responses.setdefault(
                    code,
                    {
                        "description": text,
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                        },
                    },
                )
    return result


@cache
def openapi() -> dict:
    """The schema of /api/v1/, built once per process (it only changes with the code)."""
    return SchemaGenerator().get_schema(request=None, public=True)


def _type(schema: dict, components: dict) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[1]
    if "allOf" in schema:
        return " & ".join(_type(s, components) for s in schema["allOf"])
    if "oneOf" in schema:
        return " or ".join(_type(s, components) for s in schema["oneOf"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}), components)}"
    if "enum" in schema:
        return " | ".join(str(v) for v in schema["enum"] if v not in ("", None)) or kind
    fmt = schema.get("format")
    return f"{kind} ({fmt})" if fmt else kind


def _fields(ref: str | None, components: dict) -> list[dict]:
    if not ref:
        return []
    schema = components.get(ref.rsplit("/", 1)[1], {})
    required = set(schema.get("required", []))
    return [
        {
            "name": name,
            "type": _type(prop, components),
            "required": name in required,
            "read_only": prop.get("readOnly", False),
            "description": prop.get("description", ""),
        }
        for name, prop in schema.get("properties", {}).items()
    ]


def _body_ref(operation: dict) -> str | None:
    return _body(operation)[1]


def _body(operation: dict) -> tuple[str, str | None]:
    """The request body's media type and schema reference: JSON, or a multipart upload."""
    content = (operation.get("requestBody") or {}).get("content", {})
    for media in ("application/json", "multipart/form-data"):
        if media in content:
            return media, content[media].get("schema", {}).get("$ref")
    return "", None


def sections(schema: dict) -> list[dict]:
    """The schema's operations grouped by their first path segment, ready for the template."""
    components = schema.get("components", {}).get("schemas", {})
    groups: dict[str, list] = {}
    for path, operations in schema.get("paths", {}).items():
        for method, op in operations.items():
            responses = [
                {
                    "code": code,
                    "description": r.get("description", ""),
                    "type": _type(
                        r.get("content", {}).get("application/json", {}).get("schema", {}),
                        components,
                    )
                    if r.get("content")
                    else "",
                }
                for code, r in op.get("responses", {}).items()
                if code not in ERRORS or code == "400" and _body_ref(op)
            ]
            groups.setdefault(op.get("tags", ["other"])[0], []).append(
                {
                    "id": op.get("operationId", ""),
                    "method": method.upper(),
                    "path": path,
                    "description": op.get("description", ""),
                    "parameters": [
                        {
                            "name": p["name"],
                            "in": p["in"],
                            "type": _type(p.get("schema", {}), components),
                            "required": p.get("required", False),
                            "description": p.get("description", ""),
                        }
                        for p in op.get("parameters", [])
                    ],
                    "body": _fields(_body_ref(op), components),
                    "body_media": _body(op)[0],
                    "responses": responses,
                }
            )
    return [{"tag": tag, "operations": ops} for tag, ops in groups.items()]


@require_GET
def docs(request):
    """The API reference as a plain page (no JavaScript: the CSP stays strict)."""
    schema = openapi()
    context = {
        "info": schema.get("info", {}),
        "sections": sections(schema),
        "errors": ERRORS,
    }
    return render(request, "api/docs.html", context)
