"""One admission webhook call, as kube-apiserver's webhook client makes it (k8s.io/apiserver pkg/util/webhook
client.go, pkg/admission/plugin/webhook/request): where to connect, the TLS it trusts, the POST of an
AdmissionReview, the response's checks, and Go's wording of every way it can fail.

Where: `clientConfig.url` as given (its port, else 443); a `service` reference is
`https://<name>.<namespace>.svc:<port><path>`, the name the server's certificate must carry, reached at an
address of the Service's endpoints (its EndpointSlices, else its Endpoints: a ready address offering the
Service port's target), as the API server's endpoint resolver does: localcluster has no cluster IPs to
route. The CA is `caBundle` (PEM), else the system's roots. Every request carries `?timeout=<N>s`, the
webhook's timeoutSeconds, and is bounded by it end to end; a response larger than MAX_RESPONSE_BYTES is
a failed call. A failed call raises CallFailure with the text the API server puts after
`failed calling webhook "NAME": ` (`failed to call webhook: Post "URL": ...`, `received invalid webhook
response: ...`, `could not get REST client: ...`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import errno
import functools
import ipaddress
import random
import ssl
import urllib.parse

import aiohttp
import orjson

REVIEW_GROUP = "admission.k8s.io"
MAX_RESPONSE_BYTES = 6 * 1024 * 1024
SERVICES, ENDPOINTS, SLICES = ("", "services"), ("", "endpoints"), ("discovery.k8s.io", "endpointslices")


class CallFailure(Exception):
    """webhookutil.ErrCallingWebhook: the reason, as Go words it."""


@functools.lru_cache(maxsize=64)
def ssl_context(ca_bundle: str, check_hostname: bool = True) -> ssl.SSLContext:
    """The trust of one caBundle (base64 of PEM, as the JSON carries []byte); the system's roots if empty."""
    try:
        pem = base64.b64decode(ca_bundle, validate=True).decode("ascii") if ca_bundle else None
        if pem is not None and "-----BEGIN CERTIFICATE-----" not in pem:
            raise ValueError("no PEM block")
        context = ssl.create_default_context(cadata=pem)
    except (binascii.Error, UnicodeDecodeError, ValueError, ssl.SSLError) as exc:
        raise CallFailure("could not get REST client: unable to load root certificates: unable to parse bytes "
                          "as PEM block") from exc
    context.check_hostname = check_hostname
    context.set_alpn_protocols(["http/1.1"])
    return context


class Target:
    """Where one call goes: the URL Go prints, the address connected to, the TLS name checked."""

    def __init__(self, shown: str, connect: str, server_name: str, host_header: str) -> None:
        self.shown, self.connect, self.server_name, self.host_header = shown, connect, server_name, host_header


def _clean_path(path: str) -> str:
    """path.Join("/", p): the rest client's APIPath."""
    return "/" + "/".join(part for part in (path or "").split("/") if part)


def target(store, config: dict, timeout: int) -> Target:
    """The call's target, resolving a service reference to one of its endpoints' addresses."""
    query = f"?timeout={timeout}s"
    service = config.get("service")
    if service:
        namespace, name, port = service.get("namespace", ""), service.get("name", ""), service.get("port") or 443
        server_name = f"{name}.{namespace}.svc"
        shown = f"https://{server_name}:{port}{_clean_path(service.get('path') or '')}{query}"
        try:
            address = resolve(store, namespace, name, port)
        except CallFailure as exc:
            raise CallFailure(f'failed to call webhook: Post "{shown}": {exc}') from None
        connect = f"https://{address}{_clean_path(service.get('path') or '')}{query}"
        return Target(shown, connect, server_name, f"{server_name}:{port}")
    parts = urllib.parse.urlsplit(config.get("url") or "")
    path = _clean_path(parts.path)
    shown = f"{parts.scheme}://{parts.netloc}{path}{query}"
    return Target(shown, shown, parts.hostname or "", parts.netloc)


def resolve(store, namespace: str, name: str, port: int) -> str:
    """host:port of a ready endpoint of Service NAMESPACE/NAME's port `port` (proxy.ResolveEndpoint)."""
    svc = store.get(SERVICES, (namespace, name))
    if svc is None:
        raise CallFailure(f'service "{name}" not found')
    ports = [p for p in (svc.get("spec") or {}).get("ports") or [] if p.get("port") == port]
    if not ports:
        raise CallFailure(f'no service port {port} found for service "{name}"')
    port_name = ports[0].get("name") or ""
    candidates = _from_slices(store, namespace, name, port_name) or _from_endpoints(store, namespace, name, port_name)
    if not candidates:
        raise CallFailure(f'no endpoints available for service "{name}"')
    ip, number = random.choice(candidates)
    return f"[{ip}]:{number}" if ":" in ip else f"{ip}:{number}"


def _from_slices(store, namespace: str, name: str, port_name: str) -> list[tuple[str, int]]:
    out = []
    for slice_ in store.objects(SLICES, namespace):
        if ((slice_.get("metadata") or {}).get("labels") or {}).get("kubernetes.io/service-name") != name:
            continue
        numbers = [p.get("port") for p in slice_.get("ports") or [] if (p.get("name") or "") == port_name]
        if not numbers or numbers[0] is None:
            continue
        for endpoint in slice_.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready", True) is not False:
                out += [(address, numbers[0]) for address in endpoint.get("addresses") or []]
    return out


def _from_endpoints(store, namespace: str, name: str, port_name: str) -> list[tuple[str, int]]:
    out = []
    endpoints = store.get(ENDPOINTS, (namespace, name)) or {}
    for subset in endpoints.get("subsets") or []:
        numbers = [p.get("port") for p in subset.get("ports") or [] if (p.get("name") or "") == port_name]
        if numbers and numbers[0] is not None:
            out += [(address.get("ip"), numbers[0]) for address in subset.get("addresses") or [] if address.get("ip")]
    return out


# --- the call -------------------------------------------------------------------------------------

class WebhookClient:
    """The HTTPS client of every webhook call of one cluster (its connections kept alive between calls)."""

    def __init__(self, store) -> None:
        self.store = store
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64),
                                                  auto_decompress=True, skip_auto_headers=("User-Agent",))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def post(self, config: dict, review: dict, timeout: int) -> dict:
        """POST `review` within `timeout` seconds; the decoded response, or CallFailure."""
        ca_bundle = config.get("caBundle") or ""
        context = ssl_context(ca_bundle)
        where = target(self.store, config, timeout)
        headers = {"Content-Type": "application/json", "Accept": "application/json, */*",
                   "User-Agent": "kube-apiserver-admission", "Host": where.host_header}
        try:
            async with asyncio.timeout(timeout):
                async with self._client().post(where.connect, data=orjson.dumps(review), headers=headers,
                                               ssl=context, server_hostname=where.server_name or None,
                                               allow_redirects=False) as response:
                    body = await response.content.read(MAX_RESPONSE_BYTES + 1)
                    status, content_type = response.status, response.content_type
        except TimeoutError:
            raise CallFailure(f'failed to call webhook: Post "{where.shown}": context deadline exceeded') from None
        except aiohttp.ClientError as exc:
            reason = _go_error(exc, where)
            if reason.endswith(HOSTNAME_MISMATCH):
                reason = reason.removesuffix(HOSTNAME_MISMATCH) + await _hostname_error(where, ca_bundle)
            raise CallFailure(f'failed to call webhook: Post "{where.shown}": {reason}') from None
        if len(body) > MAX_RESPONSE_BYTES:
            raise CallFailure(f'failed to call webhook: Post "{where.shown}": the response is larger than '
                              f"{MAX_RESPONSE_BYTES} bytes")
        if not 200 <= status <= 206:
            raise CallFailure(f"failed to call webhook: {_status_error(status, body, content_type)}")
        try:
            decoded = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise CallFailure(f"failed to call webhook: couldn't get version/kind; json parse error: {exc}") from None
        if not isinstance(decoded, dict):
            raise CallFailure("failed to call webhook: couldn't get version/kind; json parse error: json: cannot "
                              "unmarshal " + type(decoded).__name__ + " into Go value of type struct")
        return decoded


def _go_error(exc: aiohttp.ClientError, where: Target) -> str:
    """How Go's net/http and crypto/tls say what went wrong with the connection."""
    cause = getattr(exc, "os_error", None) or exc.__cause__ or exc
    if isinstance(exc, aiohttp.ClientConnectorCertificateError) or isinstance(cause, ssl.SSLCertVerificationError):
        verify = getattr(exc, "certificate_error", None) or cause
        return "tls: failed to verify certificate: " + _x509(verify, where)
    if isinstance(exc, aiohttp.ClientConnectorError):
        address = urllib.parse.urlsplit(where.connect).netloc
        if isinstance(cause, ConnectionRefusedError) or getattr(cause, "errno", None) == errno.ECONNREFUSED:
            return f"dial tcp {address}: connect: connection refused"
        return f"dial tcp {address}: {getattr(cause, 'strerror', None) or cause}"
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError):
        return "EOF"
    return str(exc) or type(exc).__name__


HOSTNAME_MISMATCH = "\0hostname"


async def _hostname_error(where: Target, ca_bundle: str) -> str:
    """Go's x509.HostnameError, naming what the certificate is valid for: read by a second handshake that
    checks the chain but not the name, and sends nothing."""
    probe = ssl_context(ca_bundle, check_hostname=False)
    address = urllib.parse.urlsplit(where.connect)
    try:
        async with asyncio.timeout(2):
            _, writer = await asyncio.open_connection(address.hostname, address.port or 443, ssl=probe,
                                                      server_hostname=where.server_name or None)
    except ssl.SSLCertVerificationError:  # OpenSSL tells of the name first; Go of the chain
        return "x509: certificate signed by unknown authority"
    except (OSError, TimeoutError, ssl.SSLError):
        return f"x509: certificate is not valid for {where.server_name}"
    cert = writer.get_extra_info("peercert") or {}
    writer.close()
    names = cert.get("subjectAltName", ())
    try:
        ipaddress.ip_address(where.server_name)
    except ValueError:
        dns = [value for kind, value in names if kind == "DNS"]
        if not dns:
            return "x509: certificate relies on legacy Common Name field, use SANs instead"
        return f"x509: certificate is valid for {', '.join(dns)}, not {where.server_name}"
    ips = [value.strip() for kind, value in names if kind == "IP Address"]
    if not ips:
        return f"x509: cannot validate certificate for {where.server_name} because it doesn't contain any IP SANs"
    return f"x509: certificate is valid for {', '.join(ips)}, not {where.server_name}"


def _x509(error, where: Target) -> str:
    text = getattr(error, "verify_message", "") or str(error)
    code = getattr(error, "verify_code", None)
    if "Hostname mismatch" in text or "IP address mismatch" in text or code == 62:
        return HOSTNAME_MISMATCH
    if "expired" in text or code == 10:
        return "x509: certificate has expired or is not yet valid"
    return "x509: certificate signed by unknown authority"


def _status_error(status: int, body: bytes, content_type: str) -> str:
    """client-go's error for a response that is not a success (newUnstructuredResponseError), or the message of
    a Status it carries."""
    with contextlib.suppress(orjson.JSONDecodeError, AttributeError, TypeError):
        decoded = orjson.loads(body)
        if decoded.get("kind") == "Status" and decoded.get("message"):
            return str(decoded["message"])
    if status == 404:
        return "the server could not find the requested resource"
    if status == 400:
        return "the server rejected our request for an unknown reason"
    if status >= 500:
        text = body.decode(errors="replace").strip() if content_type.startswith("text/") else "unknown"
        return f'an error on the server ("{text}") has prevented the request from succeeding'
    return f"the server responded with the status code {status} but did not return more information"


# --- the review ---------------------------------------------------------------------------------

def review_version(versions: list[str]) -> str | None:
    """The first of the webhook's admissionReviewVersions the server speaks (CreateAdmissionObjects)."""
    return next((v for v in versions or () if v in ("v1", "v1beta1")), None)


def verify(response: dict, uid: str, version: str, mutating: bool) -> dict:
    """VerifyAdmissionResponse: the response part of a reply, or CallFailure naming what is wrong."""
    def invalid(text: str) -> CallFailure:
        return CallFailure(f"received invalid webhook response: {text}")

    got_group, _, got_version = str(response.get("apiVersion") or "").rpartition("/")
    if not response.get("kind") or not response.get("apiVersion"):
        raise CallFailure("failed to call webhook: Object 'Kind' is missing in the response")
    result = response.get("response")
    if not isinstance(result, dict):
        raise invalid("webhook response was absent")
    if version == "v1":
        if result.get("uid") != uid:
            raise invalid(f'expected response.uid="{uid}", got "{result.get("uid") or ""}"')
        if (got_group, got_version, response.get("kind")) != (REVIEW_GROUP, "v1", "AdmissionReview"):
            raise invalid(f"expected webhook response of {REVIEW_GROUP}/v1, Kind=AdmissionReview, got "
                          f"{response.get('apiVersion')}, Kind={response.get('kind')}")
        patch, patch_type = result.get("patch"), result.get("patchType")
        if mutating:
            if patch and patch_type is None:
                raise invalid("webhook returned response.patch but not response.patchType")
            if not patch and patch_type is not None:
                raise invalid("webhook returned response.patchType but not response.patch")
            if patch_type == "":
                raise invalid('webhook returned invalid response.patchType of ""')
        else:
            if patch:
                raise invalid("validating webhook may not return response.patch")
            if patch_type is not None:
                raise invalid("validating webhook may not return response.patchType")
    elif mutating and result.get("patch"):
        result = {**result, "patchType": "JSONPatch"}
    else:
        result = {k: v for k, v in result.items() if k not in ("patch", "patchType")}
    return result


def decode_patch(result: dict) -> list | None:
    """The JSON patch a mutating webhook returned (base64 of JSON), None for none; CallFailure if unreadable."""
    patch = result.get("patch")
    if not patch:
        return None
    if result.get("patchType") != "JSONPatch":
        raise CallFailure(f'unsupported patch type "{result.get("patchType")}"')
    try:
        decoded = orjson.loads(base64.b64decode(patch, validate=True))
    except (binascii.Error, orjson.JSONDecodeError, TypeError) as exc:
        raise CallFailure(f"received undecodable patch in webhook response: {exc}") from None
    if not isinstance(decoded, list):
        raise CallFailure("received undecodable patch in webhook response: json: cannot unmarshal object into Go "
                          "value of type jsonpatch.Patch")
    return decoded

