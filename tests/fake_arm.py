"""An in-memory Azure Resource Manager behind a fake HTTP transport for the Azure SDK's pipeline.

``FakeARMTransport`` is an :class:`azure.core.pipeline.transport.HttpTransport`: pass it as
``transport=`` to the management clients and every request they make (after the SDK's own
policies: auth header, retry, ARM polling) lands in :meth:`FakeARM.handle` instead of the network.
The fake speaks the ARM wire protocol the SDK expects:

* JSON bodies of the real shape (``{"id", "name", "type", "location", "tags", "properties"}``);
* long-running PUTs answer ``201`` with ``provisioningState`` ``Creating``/``Updating`` and an
  ``Azure-AsyncOperation`` header; the operation reports ``InProgress`` ``async_polls`` times, then
  ``Succeeded`` (or ``Failed`` with an ARM error), and the SDK then GETs the resource;
* resource-group DELETE answers ``202`` with a ``Location`` header, polled (``202`` until done,
  then ``200``), and removes every resource inside the group;
* errors are ARM error bodies ``{"error": {"code": ..., "message": ...}}`` with the real codes
  (``ResourceGroupNotFound``, ``ResourceNotFound``, ``SkuNotAvailable``, ``InvalidParameter``...).

It validates what the real service validates where a provider could get it wrong: references
between resources (NIC → subnet, NSG, public IP; VM → NIC; schedule → VM), the SSH key path, the
base64 of ``customData``, the VM size against the SKU list (restrictions included), the image
against a small catalogue, ``api-version`` on every request, the bearer token.

Tests steer it with ``fail_next`` (the next request of a kind fails with an ARM error),
``fail_async`` (a long-running operation of a kind ends ``Failed``), ``token_error`` (the
:class:`FakeCredential` raises it), ``instance_view_script`` (the power states a VM goes through)
and ``async_polls`` / ``delete_polls``. Every request is recorded in ``requests``. Deterministic,
thread-safe (the SDK polls from a thread), no sleeps.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from azure.core.credentials import AccessToken
from azure.core.pipeline.transport import HttpTransport
from azure.core.rest._http_response_impl import HttpResponseImpl
from azure.core.utils import case_insensitive_dict

if TYPE_CHECKING:
    from typing_extensions import Self

ARM = "https://management.azure.com"
SUBSCRIPTION = "00000000-0000-4000-8000-000000000001"
TOKEN = "fake"

REASONS = {200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 400: "Bad Request",
           401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 409: "Conflict",
           500: "Internal Server Error"}

#: The VM sizes the fake offers, per region; a restriction makes a size unusable for the
#: subscription there (``Location``) or only in some zones (``Zone``, still usable without zones).
DEFAULT_SKUS: list[dict[str, Any]] = [
    {"name": "Standard_D8ds_v5", "locations": ["eastus", "westeurope", "westus2"]},
    {"name": "Standard_D4s_v5", "locations": ["eastus", "westeurope"]},
    {"name": "Standard_NC24ads_A100_v4", "locations": ["eastus"],
     "restricted": {"eastus": "Location"}},
    {"name": "Standard_D2s_v5", "locations": ["westus2"], "restricted": {"westus2": "Zone"}},
]
#: Marketplace images: (publisher, offer, sku) → versions (any region).
DEFAULT_IMAGES: dict[tuple[str, str, str], list[str]] = {
    ("canonical", "ubuntu-24_04-lts", "server"): ["24.04.202501010", "24.04.202502110"],
    ("canonical", "0001-com-ubuntu-server-jammy", "22_04-lts-gen2"): ["22.04.202502010"],
}
DEVTESTLAB_API_VERSIONS = ("2016-05-15", "2018-09-15")


class ArmError(Exception):
    """An ARM error response: HTTP status plus ``{"error": {"code", "message"}}``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class Recorded:
    """One request the fake received."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    headers: dict[str, str]
    #: what the fake routed it to: "resourceGroups", "virtualMachines", "asyncOperation", ...
    kind: str = ""


@dataclass
class _Operation:
    polls_left: int
    finish: Callable[[], None]
    error: tuple[str, str] | None = None
    done: bool = False
    polls: int = 0


@dataclass
class _Kind:
    """A resource type the fake hosts inside resource groups."""

    name: str  # the short name tests use: "virtualMachines"
    arm_type: str  # "Microsoft.Compute/virtualMachines"
    asynchronous: bool  # PUT is a long-running operation with Azure-AsyncOperation
    build: Callable[..., dict[str, Any]] = field(repr=False)


class FakeCredential:
    """A TokenCredential: hands out the token the fake accepts, or raises ``arm.token_error``."""

    def __init__(self, arm: FakeARM | None = None) -> None:
        self.arm = arm
        self.calls = 0

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        self.calls += 1
        if self.arm is not None and self.arm.token_error is not None:
            raise self.arm.token_error
        return AccessToken(TOKEN, int(time.time()) + 3600)


class FakeResponse(HttpResponseImpl):
    """A complete in-memory ``azure.core.rest.HttpResponse``: the body is already read."""

    def __init__(self, request: Any, status: int, headers: dict[str, str], content: bytes) -> None:
        super().__init__(
            request=request,
            internal_response=_NoSocket(),
            status_code=status,
            reason=REASONS.get(status, "Unknown"),
            content_type=headers.get("Content-Type"),
            headers=case_insensitive_dict(headers),
            stream_download_generator=_no_stream,
        )
        self._content = content


class _NoSocket:
    def close(self) -> None:
        pass


def _no_stream(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the fake's responses are never streamed")


class FakeARMTransport(HttpTransport):
    """The pipeline's last stop: turns each request into a :meth:`FakeARM.handle` call."""

    def __init__(self, arm: FakeARM) -> None:
        self.arm = arm

    def send(self, request: Any, **kwargs: Any) -> FakeResponse:
        status, headers, payload = self.arm.handle(request.method, request.url, dict(request.headers),
                                                   _request_body(request))
        content = b"" if payload is None else json.dumps(payload).encode()
        if payload is not None:
            headers.setdefault("Content-Type", "application/json; charset=utf-8")
        headers.setdefault("x-ms-request-id", f"fake-{len(self.arm.requests)}")
        return FakeResponse(request, status, headers, content)

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *args: object) -> None:
        pass


def _request_body(request: Any) -> Any:
    raw = getattr(request, "content", None)
    if raw is None:
        raw = getattr(request, "data", None)
    if raw is None or raw in (b"", ""):
        return None
    if isinstance(raw, (bytes, bytearray)):
        raw = raw.decode()
    if isinstance(raw, str):
        return json.loads(raw)
    return raw


_SUB = r"/subscriptions/(?P<sub>[^/]+)"
_RG = _SUB + r"/resourcegroups/(?P<rg>[^/]+)"


#: Fakes by name, for a pytest run in process whose conftest must reach the test's fake.
REGISTRY: dict[str, FakeARM] = {}


class FakeARM:
    """The state of one fake subscription and the router in front of it."""

    def __init__(self, subscription_id: str = SUBSCRIPTION, skus: list[dict[str, Any]] | None = None,
                 images: dict[tuple[str, str, str], list[str]] | None = None) -> None:
        self.subscription_id = subscription_id
        self.skus = DEFAULT_SKUS if skus is None else skus
        self.images = DEFAULT_IMAGES if images is None else images
        #: custom image ids (``/subscriptions/.../images/x``) a VM may be created from
        self.custom_images: set[str] = set()
        self.regions = sorted({loc for sku in self.skus for loc in sku["locations"]} | {"northeurope"})
        self.lock = threading.RLock()
        #: lower-cased name → the resource group's JSON
        self.resource_groups: dict[str, dict[str, Any]] = {}
        #: lower-cased ARM id → the resource's JSON (everything inside resource groups)
        self.resources: dict[str, dict[str, Any]] = {}
        self.requests: list[Recorded] = []
        #: kind (or "METHOD kind") → (code, status[, message]): the next such request fails
        self.fail_next: dict[str, tuple[Any, ...]] = {}
        #: kind → (code, message): the next long-running PUT of that kind ends "Failed"
        self.fail_async: dict[str, tuple[str, str]] = {}
        #: raised by FakeCredential.get_token when set
        self.token_error: BaseException | None = None
        #: the bearer token ARM accepts (FakeCredential hands out TOKEN); others get 401
        self.accepted_token = TOKEN
        #: lower-cased VM name → the status codes successive instanceView calls report (the last one
        #: repeats); default "PowerState/starting" once, then "PowerState/running". A
        #: "ProvisioningState/failed/..." entry replaces the provisioning status too.
        self.instance_view_script: dict[str, list[str]] = {}
        self.async_polls = 1
        self.delete_polls = 1
        self._operations: dict[str, _Operation] = {}
        self._ids = itertools.count(1)
        self._public_ips = itertools.count(4)
        self._private_ips = itertools.count(4)
        self._kinds = {k.arm_type.lower(): k for k in (
            _Kind("virtualNetworks", "Microsoft.Network/virtualNetworks", True, self._build_vnet),
            _Kind("networkSecurityGroups", "Microsoft.Network/networkSecurityGroups", True, self._build_nsg),
            _Kind("publicIPAddresses", "Microsoft.Network/publicIPAddresses", True, self._build_public_ip),
            _Kind("networkInterfaces", "Microsoft.Network/networkInterfaces", True, self._build_nic),
            _Kind("virtualMachines", "Microsoft.Compute/virtualMachines", True, self._build_vm),
            _Kind("schedules", "Microsoft.DevTestLab/schedules", False, self._build_schedule),
        )}
        self._routes: list[tuple[str, re.Pattern[str], Callable[..., Any]]] = [
            ("resourceGroups", re.compile(_SUB + r"/resourcegroups$", re.IGNORECASE), self._list_groups),
            ("resourceGroups", re.compile(_RG + r"$", re.IGNORECASE), self._group),
            ("skus", re.compile(_SUB + r"/providers/microsoft\.compute/skus$", re.IGNORECASE), self._list_skus),
            ("images", re.compile(_SUB + r"/providers/microsoft\.compute/locations/(?P<loc>[^/]+)/publishers/"
                                  r"(?P<pub>[^/]+)/artifacttypes/vmimage/offers/(?P<offer>[^/]+)/skus/"
                                  r"(?P<sku>[^/]+)/versions(?:/(?P<version>[^/]+))?$", re.IGNORECASE), self._images),
            ("asyncOperation", re.compile(_SUB + r"/providers/[^/]+/locations/[^/]+/operations/(?P<op>[^/]+)$",
                                          re.IGNORECASE), self._async_status),
            ("operationResult", re.compile(_SUB + r"/operationresults/(?P<op>[^/]+)$", re.IGNORECASE),
             self._operation_result),
            ("instanceView", re.compile(_RG + r"/providers/microsoft\.compute/virtualmachines/(?P<name>[^/]+)"
                                        r"/instanceview$", re.IGNORECASE), self._instance_view),
            ("resource", re.compile(_RG + r"/providers/(?P<ns>[^/]+)/(?P<type>[^/]+)/(?P<name>[^/]+)$", re.IGNORECASE),
             self._resource),
        ]

    # -- what tests use --------------------------------------------------------------------------

    def transport(self) -> FakeARMTransport:
        return FakeARMTransport(self)

    def credential(self) -> FakeCredential:
        return FakeCredential(self)

    def calls(self, method: str | None = None, kind: str | None = None) -> list[Recorded]:
        """The recorded requests, optionally only one method and/or one kind."""
        with self.lock:
            return [r for r in self.requests
                    if (method is None or r.method == method) and (kind is None or r.kind == kind)]

    def group_id(self, name: str) -> str:
        return f"/subscriptions/{self.subscription_id}/resourceGroups/{name}"

    def add_group(self, name: str, location: str = "eastus", tags: dict[str, str] | None = None) -> dict[str, Any]:
        """A resource group made outside the code under test (another tool, an older run)."""
        with self.lock:
            group = self._group_json(name, location, tags or {})
            self.resource_groups[name.lower()] = group
            return group

    def resources_in(self, group: str) -> list[dict[str, Any]]:
        prefix = self.group_id(group).lower() + "/"
        with self.lock:
            return [r for i, r in self.resources.items() if i.startswith(prefix)]

    def get(self, resource_id: str) -> dict[str, Any] | None:
        with self.lock:
            return self.resources.get(resource_id.lower())

    # -- the wire --------------------------------------------------------------------------------

    def handle(self, method: str, url: str, headers: dict[str, str],
               body: Any) -> tuple[int, dict[str, str], Any]:
        """Answer one HTTP request: (status, headers, JSON payload or None)."""
        parts = urlsplit(url)
        path = unquote(parts.path).rstrip("/")
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        record = Recorded(method, path, query, body, headers)
        with self.lock:
            self.requests.append(record)
            try:
                return self._dispatch(record)
            except ArmError as err:
                return err.status, {}, {"error": {"code": err.code, "message": err.message}}

    def _dispatch(self, record: Recorded) -> tuple[int, dict[str, str], Any]:
        lowered = {k.lower(): v for k, v in record.headers.items()}
        if lowered.get("authorization") != f"Bearer {self.accepted_token}":
            raise ArmError(401, "AuthenticationFailed", "Authentication failed. The 'Authorization' header is "
                                                        "missing or invalid.")
        for kind, pattern, handler in self._routes:
            match = pattern.match(record.path)
            if match is None:
                continue
            args = match.groupdict()
            if args["sub"] != self.subscription_id:
                raise ArmError(404, "SubscriptionNotFound", f"The subscription '{args['sub']}' could not be found.")
            record.kind = self._kind_name(kind, args)
            if "api-version" not in record.query:
                raise ArmError(400, "MissingApiVersionParameter", "The api-version query parameter "
                                                                  "(?api-version=) is required for all requests.")
            self._injected_failure(record)
            del args["sub"]
            return handler(record, **args)
        raise ArmError(404, "InvalidResourceType", f"No route for {record.method} {record.path} in the fake ARM.")

    def _kind_name(self, route: str, args: dict[str, Any]) -> str:
        if route != "resource":
            return route
        kind = self._kinds.get(f"{args['ns']}/{args['type']}".lower())
        return kind.name if kind else f"{args['ns']}/{args['type']}"

    def _injected_failure(self, record: Recorded) -> None:
        for key in (f"{record.method} {record.kind}", record.kind):
            failure = self.fail_next.pop(key, None)
            if failure is not None:
                code, status, *message = failure
                raise ArmError(status, code, message[0] if message else f"Injected {code} for {record.kind}.")

    # -- long-running operations -----------------------------------------------------------------

    def _new_operation(self, finish: Callable[[], None], polls: int,
                       error: tuple[str, str] | None = None) -> str:
        op_id = f"op-{next(self._ids):04d}"
        self._operations[op_id] = _Operation(polls_left=polls, finish=finish, error=error)
        return op_id

    def _async_header(self, namespace: str, location: str, op_id: str, api_version: str) -> dict[str, str]:
        url = (f"{ARM}/subscriptions/{self.subscription_id}/providers/{namespace}/locations/{location}"
               f"/operations/{op_id}?api-version={api_version}")
        return {"Azure-AsyncOperation": url, "Retry-After": "0"}

    def _operation(self, op_id: str) -> _Operation:
        operation = self._operations.get(op_id)
        if operation is None:
            raise ArmError(404, "NotFound", f"The operation '{op_id}' was not found.")
        operation.polls += 1
        return operation

    def _async_status(self, record: Recorded, op: str) -> tuple[int, dict[str, str], Any]:
        operation = self._operation(op)
        if operation.polls_left > 0:
            operation.polls_left -= 1
            return 200, {"Retry-After": "0"}, {"name": op, "status": "InProgress"}
        if not operation.done:
            operation.done = True
            operation.finish()
        if operation.error is not None:
            code, message = operation.error
            return 200, {}, {"name": op, "status": "Failed", "error": {"code": code, "message": message}}
        return 200, {}, {"name": op, "status": "Succeeded"}

    def _operation_result(self, record: Recorded, op: str) -> tuple[int, dict[str, str], Any]:
        operation = self._operation(op)
        if operation.polls_left > 0:
            operation.polls_left -= 1
            return 202, {"Location": f"{ARM}{record.path}?api-version={record.query['api-version']}",
                         "Retry-After": "0"}, None
        if not operation.done:
            operation.done = True
            operation.finish()
        return 200, {}, None

    def finish_operations(self) -> None:
        """Let every pending long-running operation complete at its next poll."""
        with self.lock:
            for operation in self._operations.values():
                operation.polls_left = 0

    def operation_polls(self) -> int:
        """How many times the SDK polled a long-running operation."""
        with self.lock:
            return sum(op.polls for op in self._operations.values())

    # -- resource groups -------------------------------------------------------------------------

    def _group_json(self, name: str, location: str, tags: dict[str, str], state: str = "Succeeded") -> dict[str, Any]:
        return {"id": self.group_id(name), "name": name, "type": "Microsoft.Resources/resourceGroups",
                "location": location, "tags": dict(tags), "properties": {"provisioningState": state}}

    def _find_group(self, name: str) -> dict[str, Any]:
        group = self.resource_groups.get(name.lower())
        if group is None:
            raise ArmError(404, "ResourceGroupNotFound", f"Resource group '{name}' could not be found.")
        return group

    def _group(self, record: Recorded, rg: str) -> tuple[int, dict[str, str], Any]:
        if record.method == "GET":
            return 200, {}, self._find_group(rg)
        if record.method == "HEAD":
            return (204 if rg.lower() in self.resource_groups else 404), {}, None
        if record.method == "PUT":
            return self._put_group(record, rg)
        if record.method == "DELETE":
            return self._delete_group(record, rg)
        raise ArmError(405, "MethodNotAllowed", f"{record.method} is not supported on resource groups.")

    def _put_group(self, record: Recorded, rg: str) -> tuple[int, dict[str, str], Any]:
        body = record.body or {}
        location = str(body.get("location", "")).replace(" ", "").lower()
        if location not in self.regions:
            raise ArmError(400, "LocationNotAvailableForResourceGroup",
                           f"The provided location '{body.get('location')}' is not available for resource group. "
                           f"List of available regions is '{','.join(self.regions)}'.")
        if len(rg) > 90 or not re.fullmatch(r"[-\w._()]+", rg) or rg.endswith("."):
            raise ArmError(400, "InvalidResourceGroup", f"The provided resource group name '{rg}' has these "
                                                        "invalid characters.")
        existing = self.resource_groups.get(rg.lower())
        if existing is not None:
            if existing["properties"]["provisioningState"] == "Deleting":
                raise ArmError(409, "ResourceGroupBeingDeleted",
                               f"The resource group '{rg}' is in deprovisioning state and cannot perform this "
                               "operation.")
            if existing["location"] != location:
                raise ArmError(409, "InvalidResourceGroupLocation",
                               f"Invalid resource group location '{location}'. The Resource group already exists "
                               f"in location '{existing['location']}'.")
        group = self._group_json(existing["name"] if existing else rg, location, body.get("tags") or {})
        self.resource_groups[rg.lower()] = group
        return (200 if existing else 201), {}, group

    def _delete_group(self, record: Recorded, rg: str) -> tuple[int, dict[str, str], Any]:
        group = self._find_group(rg)
        group["properties"]["provisioningState"] = "Deleting"

        def finish() -> None:
            self.resource_groups.pop(rg.lower(), None)
            prefix = self.group_id(rg).lower() + "/"
            for resource_id in [i for i in self.resources if i.startswith(prefix)]:
                del self.resources[resource_id]

        op_id = self._new_operation(finish, self.delete_polls)
        location = (f"{ARM}/subscriptions/{self.subscription_id}/operationresults/{op_id}"
                    f"?api-version={record.query['api-version']}")
        return 202, {"Location": location, "Retry-After": "0"}, None

    def _list_groups(self, record: Recorded) -> tuple[int, dict[str, str], Any]:
        if record.method != "GET":
            raise ArmError(405, "MethodNotAllowed", f"{record.method} is not supported here.")
        groups = list(self.resource_groups.values())
        text = record.query.get("$filter")
        if text:
            match = re.fullmatch(r"\s*tagName eq '([^']*)'(?:\s+and\s+tagValue eq '([^']*)')?\s*", text)
            if match is None:
                raise ArmError(400, "InvalidFilterInQueryString", f"Invalid $filter '{text}' specified in the "
                                                                  "query string.")
            name, value = match.groups()
            groups = [g for g in groups if name in g["tags"] and (value is None or g["tags"][name] == value)]
        return 200, {}, {"value": groups}

    # -- compute catalogue -----------------------------------------------------------------------

    def _sku_state(self, size: str, location: str) -> str:
        """ "ok", "restricted" (not for this subscription there) or "absent"."""
        for sku in self.skus:
            if sku["name"].lower() == size.lower() and location in sku["locations"]:
                restriction = sku.get("restricted", {}).get(location)
                return "restricted" if restriction == "Location" else "ok"
        return "absent"

    def _list_skus(self, record: Recorded) -> tuple[int, dict[str, str], Any]:
        text = record.query.get("$filter", "")
        match = re.fullmatch(r"\s*location eq '([^']*)'\s*", text) if text else None
        if text and match is None:
            raise ArmError(400, "InvalidFilter", f"Invalid $filter '{text}'.")
        wanted = match.group(1).lower() if match else None
        value = []
        for sku in self.skus:
            for location in sku["locations"]:
                if wanted is None or location == wanted:
                    value.append(self._sku_json(sku, location))
        if wanted in self.regions:
            value.append({"resourceType": "disks", "name": "Premium_LRS", "tier": "Premium", "locations": [wanted],
                          "locationInfo": [{"location": wanted, "zones": ["1", "2", "3"]}], "restrictions": []})
        return 200, {}, {"value": value}

    @staticmethod
    def _sku_json(sku: dict[str, Any], location: str) -> dict[str, Any]:
        restrictions = []
        kind = sku.get("restricted", {}).get(location)
        if kind == "Location":
            restrictions.append({"type": "Location", "values": [location], "reasonCode": "NotAvailableForSubscription",
                                 "restrictionInfo": {"locations": [location]}})
        elif kind == "Zone":
            restrictions.append({"type": "Zone", "values": [location], "reasonCode": "NotAvailableForSubscription",
                                 "restrictionInfo": {"locations": [location], "zones": ["1", "2"]}})
        return {"resourceType": "virtualMachines", "name": sku["name"], "tier": "Standard",
                "size": sku["name"].split("_", 1)[-1], "family": "standardDFamily", "locations": [location],
                "locationInfo": [{"location": location, "zones": ["1", "2", "3"]}],
                "capabilities": [{"name": "vCPUs", "value": "8"}], "restrictions": restrictions}

    def _image_versions(self, publisher: str, offer: str, sku: str) -> list[str] | None:
        return self.images.get((publisher.lower(), offer.lower(), sku.lower()))

    def _images(self, record: Recorded, loc: str, pub: str, offer: str, sku: str,
                version: str | None) -> tuple[int, dict[str, str], Any]:
        versions = self._image_versions(pub, offer, sku)
        if loc.lower() not in self.regions or versions is None or (version is not None and version not in versions):
            raise ArmError(404, "NotFound", "Artifact: VMImage was not found.")
        base = (f"/Subscriptions/{self.subscription_id}/Providers/Microsoft.Compute/Locations/{loc}/Publishers/{pub}"
                f"/ArtifactTypes/VMImage/Offers/{offer}/Skus/{sku}/Versions")
        if version is not None:
            return 200, {}, {"id": f"{base}/{version}", "name": version, "location": loc,
                             "properties": {"osImage": {"operatingSystem": "Linux"}, "hyperVGeneration": "V2"}}
        listed = sorted(versions, reverse=record.query.get("$orderby", "").endswith("desc"))
        top = int(record.query.get("$top", len(listed)))
        return 200, {}, [{"id": f"{base}/{v}", "name": v, "location": loc} for v in listed[:top]]

    # -- resources inside groups -----------------------------------------------------------------

    def _resource_id(self, rg: str, arm_type: str, name: str) -> str:
        return f"{self.group_id(rg)}/providers/{arm_type}/{name}"

    def _require(self, resource_id: str | None, referrer: str) -> dict[str, Any]:
        found = self.resources.get((resource_id or "").lower())
        if found is None:
            raise ArmError(400, "InvalidResourceReference",
                           f"Resource {resource_id} referenced by resource {referrer} was not found. Please make sure "
                           "that the referenced resource exists, and that both resources are in the same region.")
        return found

    def _resource(self, record: Recorded, rg: str, ns: str, type: str, name: str) -> tuple[int, dict[str, str], Any]:
        kind = self._kinds.get(f"{ns}/{type}".lower())
        group = self._find_group(rg)
        if kind is None:
            raise ArmError(400, "NoRegisteredProviderFound", f"No registered resource provider found for "
                                                             f"'{ns}/{type}' in the fake ARM.")
        resource_id = self._resource_id(group["name"], kind.arm_type, name)
        existing = self.resources.get(resource_id.lower())
        if record.method == "GET":
            if existing is None:
                raise ArmError(404, "ResourceNotFound", f"The Resource '{kind.arm_type}/{name}' under resource group "
                                                        f"'{rg}' was not found.")
            return 200, {}, existing
        if record.method == "PUT":
            return self._put_resource(record, kind, group, resource_id, name, existing)
        if record.method == "DELETE":
            if existing is None:
                return 204, {}, None
            del self.resources[resource_id.lower()]
            return 200, {}, None
        raise ArmError(405, "MethodNotAllowed", f"{record.method} is not supported on {kind.arm_type}.")

    def _put_resource(self, record: Recorded, kind: _Kind, group: dict[str, Any], resource_id: str, name: str,
                      existing: dict[str, Any] | None) -> tuple[int, dict[str, str], Any]:
        if group["properties"]["provisioningState"] == "Deleting":
            raise ArmError(409, "ResourceGroupBeingDeleted", f"The resource group '{group['name']}' is being deleted.")
        body = record.body or {}
        location = str(body.get("location", "")).replace(" ", "").lower()
        if location not in self.regions:
            raise ArmError(400, "LocationNotAvailableForResourceType",
                           f"The provided location '{body.get('location')}' is not available for resource type "
                           f"'{kind.arm_type}'.")
        resource = kind.build(record, resource_id, name, dict(body.get("properties") or {}), existing)
        resource.update({"id": resource_id, "name": name, "type": kind.arm_type, "location": location,
                         "tags": dict(body.get("tags") or {})})
        if "sku" in body:
            resource["sku"] = body["sku"]
        status = 200 if existing else 201
        if not kind.asynchronous:
            self.resources[resource_id.lower()] = resource
            return status, {}, resource
        resource["properties"]["provisioningState"] = "Updating" if existing else "Creating"
        self.resources[resource_id.lower()] = resource
        error = self.fail_async.pop(kind.name, None)

        def finish() -> None:
            resource["properties"]["provisioningState"] = "Failed" if error else "Succeeded"

        op_id = self._new_operation(finish, self.async_polls, error)
        namespace = kind.arm_type.split("/")[0]
        return status, self._async_header(namespace, location, op_id, record.query["api-version"]), resource

    # -- builders: validate a PUT body and return the stored resource ----------------------------

    def _build_vnet(self, record: Recorded, resource_id: str, name: str, props: dict[str, Any],
                    existing: dict[str, Any] | None) -> dict[str, Any]:
        if not (props.get("addressSpace") or {}).get("addressPrefixes"):
            raise ArmError(400, "InvalidAddressSpace", f"Virtual network {name} has no address space.")
        subnets = []
        for subnet in props.get("subnets") or []:
            prefix = (subnet.get("properties") or {}).get("addressPrefix")
            if not subnet.get("name") or not prefix:
                raise ArmError(400, "InvalidRequestFormat", f"Subnet of {name} needs a name and an addressPrefix.")
            subnets.append({"name": subnet["name"], "id": f"{resource_id}/subnets/{subnet['name']}",
                            "properties": {"addressPrefix": prefix, "provisioningState": "Succeeded"}})
        props["subnets"] = subnets
        return {"properties": props}

    def _build_nsg(self, record: Recorded, resource_id: str, name: str, props: dict[str, Any],
                   existing: dict[str, Any] | None) -> dict[str, Any]:
        rules = []
        for rule in props.get("securityRules") or []:
            rule_props = rule.get("properties") or {}
            for required in ("protocol", "access", "direction", "priority"):
                if required not in rule_props:
                    raise ArmError(400, "SecurityRuleParameterMissing",
                                   f"Security rule {rule.get('name')} is missing '{required}'.")
            rules.append({**rule, "id": f"{resource_id}/securityRules/{rule.get('name')}"})
        props["securityRules"] = rules
        return {"properties": props}

    def _build_public_ip(self, record: Recorded, resource_id: str, name: str, props: dict[str, Any],
                         existing: dict[str, Any] | None) -> dict[str, Any]:
        sku = ((record.body or {}).get("sku") or {}).get("name", "Basic")
        if sku == "Standard" and props.get("publicIPAllocationMethod") != "Static":
            raise ArmError(400, "StandardSkuPublicIPAddressesCannotBeDynamic",
                           f"Standard sku publicIp {resource_id} must be Static.")
        if existing is not None:
            props["ipAddress"] = existing["properties"]["ipAddress"]
        else:
            props["ipAddress"] = f"20.0.0.{next(self._public_ips)}"
        return {"properties": props}

    def _build_nic(self, record: Recorded, resource_id: str, name: str, props: dict[str, Any],
                   existing: dict[str, Any] | None) -> dict[str, Any]:
        configs = props.get("ipConfigurations") or []
        if not configs:
            raise ArmError(400, "NicMustHaveAtLeastOneIpConfiguration", f"{resource_id} has no IP configuration.")
        if props.get("networkSecurityGroup"):
            self._require(props["networkSecurityGroup"].get("id"), resource_id)
        old = ((existing or {}).get("properties") or {}).get("ipConfigurations") or []
        built = []
        for index, config in enumerate(configs):
            config_props = dict(config.get("properties") or {})
            self._require_subnet((config_props.get("subnet") or {}).get("id"), resource_id)
            if config_props.get("publicIPAddress"):
                self._require(config_props["publicIPAddress"].get("id"), resource_id)
            if index < len(old):
                config_props["privateIPAddress"] = old[index]["properties"]["privateIPAddress"]
            else:
                config_props["privateIPAddress"] = f"10.42.0.{next(self._private_ips)}"
            config_props.setdefault("privateIPAllocationMethod", "Dynamic")
            config_props["primary"] = index == 0
            built.append({"name": config.get("name"), "id": f"{resource_id}/ipConfigurations/{config.get('name')}",
                          "properties": config_props})
        props["ipConfigurations"] = built
        return {"properties": props}

    def _require_subnet(self, subnet_id: str | None, referrer: str) -> None:
        vnet_id, _, subnet = (subnet_id or "").rpartition("/subnets/")
        vnet = self._require(vnet_id, referrer) if subnet else None
        if vnet is None or subnet not in {s["name"] for s in vnet["properties"]["subnets"]}:
            raise ArmError(400, "InvalidResourceReference",
                           f"Resource {subnet_id} referenced by resource {referrer} was not found.")

    def _build_vm(self, record: Recorded, resource_id: str, name: str, props: dict[str, Any],
                  existing: dict[str, Any] | None) -> dict[str, Any]:
        location = str((record.body or {}).get("location", "")).lower()
        size = (props.get("hardwareProfile") or {}).get("vmSize", "")
        state = self._sku_state(size, location)
        if state != "ok":
            raise ArmError(409, "SkuNotAvailable",
                           f"The requested VM size for resource 'Following SKUs have failed for Capacity "
                           f"Restrictions: {size}' is currently not available in location '{location}'. Please try "
                           "another size or deploy to a different location or different zone.")
        self._check_image(props.get("storageProfile") or {})
        self._check_os_profile(props.get("osProfile") or {})
        for nic in (props.get("networkProfile") or {}).get("networkInterfaces") or []:
            self._require(nic.get("id"), resource_id)
        os_profile = dict(props.get("osProfile") or {})
        os_profile.pop("customData", None)  # ARM never returns customData
        props["osProfile"] = os_profile
        props["vmId"] = f"00000000-0000-4000-9000-{next(self._ids):012d}"
        props["timeCreated"] = "2025-01-01T00:00:00+00:00"
        return {"properties": props}

    def _check_image(self, storage: dict[str, Any]) -> None:
        image = storage.get("imageReference") or {}
        if image.get("id"):
            if image["id"].lower() not in {i.lower() for i in self.custom_images}:
                raise ArmError(404, "ImageNotFound", f"The platform image '{image['id']}' is not available.")
            return
        versions = self._image_versions(image.get("publisher", ""), image.get("offer", ""), image.get("sku", ""))
        version = image.get("version", "")
        if versions is None or (version != "latest" and version not in versions):
            raise ArmError(400, "InvalidParameter",
                           "The following list of images referenced from the deployment template are not found: "
                           f"Publisher: {image.get('publisher')}, Offer: {image.get('offer')}, "
                           f"Sku: {image.get('sku')}, "
                           f"Version: {version}. Please refer to https://docs.microsoft.com/en-us/azure/"
                           "virtual-machines/windows/cli-ps-findimage for instructions on finding available images.")
        disk = storage.get("osDisk") or {}
        if disk.get("createOption") != "FromImage":
            raise ArmError(400, "InvalidParameter", "osDisk.createOption must be FromImage for an image.")

    @staticmethod
    def _check_os_profile(profile: dict[str, Any]) -> None:
        user = profile.get("adminUsername")
        if not user:
            raise ArmError(400, "InvalidParameter", "Required parameter 'adminUsername' is missing (null).")
        ssh = ((profile.get("linuxConfiguration") or {}).get("ssh") or {}).get("publicKeys") or []
        for key in ssh:
            if key.get("path") != f"/home/{user}/.ssh/authorized_keys":
                raise ArmError(400, "InvalidParameter",
                               "Destination path for SSH public keys is currently limited to its default value "
                               f"/home/{user}/.ssh/authorized_keys due to a known issue in Linux provisioning agent.")
        if "customData" in profile:
            try:
                base64.b64decode(profile["customData"], validate=True)
            except (binascii.Error, ValueError):
                raise ArmError(400, "InvalidParameter", "Custom data in OSProfile must be in Base64 encoding "
                                                        "and with a maximum length of 87380 characters.") from None

    def _build_schedule(self, record: Recorded, resource_id: str, name: str, props: dict[str, Any],
                        existing: dict[str, Any] | None) -> dict[str, Any]:
        if record.query["api-version"] not in DEVTESTLAB_API_VERSIONS:
            raise ArmError(400, "NoRegisteredProviderFound",
                           f"No registered resource provider found for location and API version "
                           f"'{record.query['api-version']}' and type 'schedules'.")
        target = self._require(props.get("targetResourceId"), resource_id)
        if target["type"] != "Microsoft.Compute/virtualMachines" or name != f"shutdown-computevm-{target['name']}":
            raise ArmError(400, "InvalidParameter", f"Auto-shutdown schedule '{name}' must be named "
                                                    f"'shutdown-computevm-<vm name>' of its target.")
        hhmm = (props.get("dailyRecurrence") or {}).get("time", "")
        if not re.fullmatch(r"([01]\d|2[0-3])[0-5]\d", hhmm):
            raise ArmError(400, "InvalidParameter", f"The daily recurrence time '{hhmm}' is not in the HHmm format.")
        if props.get("taskType") != "ComputeVmShutdownTask" or not props.get("timeZoneId"):
            raise ArmError(400, "InvalidParameter", "A shutdown schedule needs taskType ComputeVmShutdownTask "
                                                    "and a timeZoneId.")
        props["provisioningState"] = "Succeeded"
        return {"properties": props}

    # -- instance view ---------------------------------------------------------------------------

    def _instance_view(self, record: Recorded, rg: str, name: str) -> tuple[int, dict[str, str], Any]:
        self._find_group(rg)
        vm = self.resources.get(self._resource_id(rg, "Microsoft.Compute/virtualMachines", name).lower())
        if vm is None:
            raise ArmError(404, "ResourceNotFound", f"The Resource 'Microsoft.Compute/virtualMachines/{name}' under "
                                                    f"resource group '{rg}' was not found.")
        state = vm["properties"]["provisioningState"].lower()
        script = self.instance_view_script.setdefault(name.lower(), ["PowerState/starting", "PowerState/running"])
        code = script.pop(0) if len(script) > 1 else script[0]
        if code.startswith("ProvisioningState/"):  # a scripted provisioning failure replaces both
            return 200, {}, {"statuses": [{"code": code, "level": "Error", "displayStatus": "Provisioning failed",
                                           "message": "Allocation failed."}]}
        statuses = [{"code": f"ProvisioningState/{state}", "level": "Info" if state != "failed" else "Error",
                     "displayStatus": f"Provisioning {state}"}]
        if state == "succeeded":
            statuses.append({"code": code, "level": "Info", "displayStatus": code.split("/")[-1]})
        return 200, {}, {"computerName": name, "osName": "ubuntu", "statuses": statuses}
