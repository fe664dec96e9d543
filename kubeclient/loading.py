"""`load_settings`: the API server and credentials from a kubeconfig or the pod's service account.

controller-runtime's order (config.GetConfig): --kubeconfig, then $KUBECONFIG (a list of paths, merged as
client-go merges them: the first file to name a cluster, user or context wins, and so does the first
current-context), then the in-cluster service account, then ~/.kube/config. kubernetes_asyncio parses
(KubeConfigMerger keeps each entry's file, against which relative paths are resolved); the credentials
are this package's, because they must refresh (credentials.py). Every error is a ConfigException whose
message names the file.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping

import yaml

from .clock import SYSTEM_CLOCK, Clock
from .credentials import RefreshingCredentials
from .exec_plugin import ExecPlugin
from .kube_config_parts import ConfigException, ConfigNode, KubeConfigMerger
from .settings import ClientSettings
from .tls_material import Pem, TlsMaterial
from .token_sources import OidcToken, StaticHeader, TokenFile, TokenSource, basic, bearer

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# What client-go answers for the auth-providers it no longer has (since 1.26).
REMOVED_PROVIDERS = {
    "gcp": "the gcp auth plugin has been removed; use the gke-gcloud-auth-plugin exec plugin instead "
           "(https://cloud.google.com/blog/products/containers-kubernetes/kubectl-auth-changes-in-gke)",
    "azure": "the azure auth plugin has been removed; use the kubelogin exec plugin instead "
             "(https://github.com/Azure/kubelogin)",
}


def in_cluster(directory: str | None = None) -> bool:
    directory = directory or SERVICE_ACCOUNT_DIR
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.exists(f"{directory}/token")


async def load_settings(kubeconfig: str | None, *, context: str | None = None, clock: Clock = SYSTEM_CLOCK
                        ) -> ClientSettings:
    """`clock`: the time the credentials renew by (kubeclient/clock.py; a test's, to drive their expiries)."""
    path = kubeconfig or os.environ.get("KUBECONFIG")
    if not path and in_cluster():
        return await in_cluster_settings(clock=clock)
    source = "--kubeconfig" if kubeconfig else "$KUBECONFIG" if path else "the default location"
    path = path or os.path.join(os.environ.get("HOME", ""), ".kube", "config")
    require_file(path, source)
    try:
        settings = _from_kubeconfig(path, context, clock)
    except ConfigException as err:
        raise ConfigException(f"kubeconfig {path}: {err}") from err
    except yaml.YAMLError as err:
        raise ConfigException(f"kubeconfig {path} is not valid YAML: {err}") from err
    except (TypeError, ValueError, AttributeError, KeyError) as err:  # an empty or odd file
        raise ConfigException(f"kubeconfig {path} is empty or not a kubeconfig ({err})") from err
    await _first_credentials(settings)
    return settings


def require_file(path: str, source: str) -> None:
    """kubernetes_asyncio would log "Config not found" and then fail on the empty config it made instead,
    a second and misleading error: say it once here."""
    if any(os.path.isfile(p) for p in path.split(os.pathsep) if p):
        return
    hint = " (not in a cluster either: pass --kubeconfig or set KUBECONFIG)" if source == "the default location" else ""
    raise ConfigException(f"kubeconfig {path} (from {source}) does not exist{hint}")


async def _first_credentials(settings: ClientSettings) -> None:
    """Run the plugin, read the token file once now: a start-up error names them, not a first request's 401."""
    try:
        await settings.credentials.authorization()
    except ConfigException as err:
        raise ConfigException(f"{settings.source}: {err}") from err


async def in_cluster_settings(directory: str | None = None, environ: Mapping[str, str] | None = None,
                              clock: Clock = SYSTEM_CLOCK) -> ClientSettings:
    """client-go's InClusterConfig: the service's address from the environment, the projected token (re-read
    as it is rotated) and the CA beside it."""
    directory = directory or SERVICE_ACCOUNT_DIR
    variables: Mapping[str, str] = os.environ if environ is None else environ
    host, port = variables.get("KUBERNETES_SERVICE_HOST"), variables.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise ConfigException("unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
                              "KUBERNETES_SERVICE_PORT must be defined")
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    tls = TlsMaterial(ca=_file_if_present(os.path.join(directory, "ca.crt")), clock=clock)
    token = TokenFile(os.path.join(directory, "token"), clock=clock)
    settings = ClientSettings(server, RefreshingCredentials(token, tls), source="in-cluster")
    await _first_credentials(settings)
    return settings


def _file_if_present(path: str) -> Pem | None:
    return Pem(path=path) if os.path.exists(path) else None


def _merged(path: str) -> tuple[ConfigNode, str | None]:
    merger = KubeConfigMerger(path)
    config = merger.config
    if config is None:
        raise ConfigException("no kubeconfig file found")
    # KubeConfigMerger keeps the last file's current-context; client-go the first file's that sets one.
    current = next((c["current-context"] for c in map(merger.config_files.get, merger.paths)
                    if isinstance(c, dict) and c.get("current-context")), None)
    return config, current


def _from_kubeconfig(path: str, context_name: str | None, clock: Clock) -> ClientSettings:
    config, current = _merged(path)
    name = context_name or current
    if not name:
        raise ConfigException("no current-context (and no --context)")
    context = _named(config, "contexts", name)["context"]
    cluster_entry = _named(config, "clusters", str(context["cluster"]))
    cluster: dict = cluster_entry["cluster"].value
    user_name = context.safe_get("user")
    user_entry = config["users"].get_with_name(user_name, safe=True) if user_name and config.safe_get("users") \
        else None
    user: dict = (user_entry.safe_get("user") or {}) if user_entry is not None else {}
    server = str(cluster.get("server") or "")
    if not server:
        raise ConfigException(f"the cluster {context['cluster']} has no server")
    cluster_dir = _directory(cluster_entry.path)
    user_dir = _directory(user_entry.path) if user_entry is not None else cluster_dir
    ca = _pem(cluster, "certificate-authority", cluster_dir)
    if ca is not None and cluster.get("insecure-skip-tls-verify"):  # client-go's validation refuses it too
        raise ConfigException("specifying a root certificates file with the insecure flag is not allowed")
    tls = TlsMaterial(ca=ca, cert=_pem(user, "client-certificate", user_dir), key=_pem(user, "client-key", user_dir),
                      insecure=bool(cluster.get("insecure-skip-tls-verify")), clock=clock)
    token_source = _token_source(user, cluster, ca, user_dir, clock)
    return ClientSettings(server, RefreshingCredentials(token_source, tls),
                          tls_server_name=cluster.get("tls-server-name") or None,
                          proxy_url=cluster.get("proxy-url") or None,
                          source=f"kubeconfig {path} (context {name})")


def _named(config: ConfigNode, kind: str, name: str) -> ConfigNode:
    """The entry of that name in config[kind] (ConfigNode's error when there is none)."""
    entry = config[kind].get_with_name(name)
    assert entry is not None  # get_with_name raises rather than answer None unless asked to
    return entry


def _directory(file: str | None) -> str:
    return os.path.dirname(os.path.abspath(file)) if file else ""


def _pem(entry: dict, key: str, base: str) -> Pem | None:
    """`key-data` (base64, preferred, as client-go) or the file `key` names (relative to its kubeconfig)."""
    data = entry.get(f"{key}-data")
    if data:
        try:
            return Pem(data=base64.b64decode(data, validate=True))
        except (binascii.Error, ValueError) as err:
            raise ConfigException(f"{key}-data is not base64: {err}") from err
    file = entry.get(key)
    if file:
        file = os.path.join(base, os.path.expanduser(str(file)))
        if not os.path.isfile(file):
            raise ConfigException(f"{key} {file} does not exist")
        return Pem(path=file)
    return None


def _token_source(user: dict, cluster: dict, ca: Pem | None, base: str, clock: Clock) -> TokenSource:
    provider = user.get("auth-provider")
    has_basic = bool(user.get("username") or user.get("password"))
    if user.get("exec") and provider:
        raise ConfigException("the user has both an exec plugin and an auth-provider: client-go takes only one")
    if (user.get("exec") or provider) and has_basic:
        raise ConfigException("the user has basic auth and an exec plugin or auth-provider: client-go takes only one")
    if has_basic and (user.get("token") or user.get("tokenFile")):
        raise ConfigException("the user has a username/password and a token: client-go takes only one")
    if user.get("exec"):
        if not isinstance(user["exec"], dict):
            raise ConfigException("the user's exec is not a mapping")
        return ExecPlugin(user["exec"], cluster, ca.read() if ca is not None else None, base, clock)
    if provider:
        return _auth_provider(provider, base, clock)
    if user.get("token"):
        return StaticHeader(bearer(str(user["token"])), "token")
    if user.get("tokenFile"):
        return TokenFile(os.path.join(base, os.path.expanduser(str(user["tokenFile"]))), clock=clock)
    if has_basic:
        return StaticHeader(basic(str(user.get("username") or ""), str(user.get("password") or "")), "basic auth")
    return TokenSource()


def _auth_provider(provider: dict, base: str, clock: Clock) -> TokenSource:
    name = str(provider.get("name") or "")
    if name in REMOVED_PROVIDERS:
        raise ConfigException(REMOVED_PROVIDERS[name])
    if name != "oidc":
        raise ConfigException(f"auth-provider {name or '(no name)'} is not supported (oidc is; for others, "
                              f"an exec plugin)")
    config = provider.get("config") or {}
    idp_ca = _pem(config, "idp-certificate-authority", base)
    return OidcToken(config, idp_ca.read() if idp_ca is not None else None, clock)


__all__ = ["SERVICE_ACCOUNT_DIR", "in_cluster", "in_cluster_settings", "load_settings", "require_file"]
