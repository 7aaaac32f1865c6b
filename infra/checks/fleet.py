"""Rules on fleet services: one service over deployments in several clusters and external endpoints.

A fleet service (`ModelServiceSpec.fleet`) is served by the gateway of the cluster it names; its
backends are Envoy Gateway `Backend`s of DNS names (`infra.serving.fleet`), weighted, in at most two
tiers of failover. After these rules `infra.serving.fleet.fleet_route` resolves it without asking
again.

Why two tiers: Envoy Gateway v1.8.3 has one fallback level. A `Backend` with `fallback: true` gets
Envoy priority 1 and every other backend priority 0 (internal/gatewayapi/route.go, `Spec.Fallback`
sets `ds.Priority = 1`), and Envoy sends a priority's share to the next one as its healthy hosts
fall (the overprovisioning factor 1.4: below 72 % healthy; api/v1alpha1/backend_types.go).
Priorities apply only inside one Envoy cluster: a route's backends share one only when they are of
one address type and carry no filter of their own (internal/ir/xds.go `NeedsClusterPerSetting`);
otherwise each backend is a cluster of its own, picked by weight alone, and the order would be
silently lost. Hence every backend is a `Backend` of a DNS name, and an external endpoint's key is
the route's own filter, so a service has at most one such key.
"""

from __future__ import annotations

from infra.config.issues import ConfigIssue
from infra.config.model import Fleet, ModelDeploymentSpec, ModelServiceSpec
from infra.serving.vllm_args import served_model

# Envoy Gateway v1.8.3: priority 0 and the fallback's priority 1 (module docstring).
MAX_TIERS = 2
GATEWAY_FIX = "set {cpath}.gateway: {{host: <DNS name of its gateway>, issuerRef: {{name: <cert-manager CA issuer>}}}}"


def check_fleet_service(fleet: Fleet, si: int) -> list[ConfigIssue]:
    """Every rule of one fleet service; empty when `infra.serving.fleet.fleet_route` can resolve it."""
    svc = fleet.services[si]
    spath = f"services[{si}]"
    if svc.cluster is None:
        return [
            ConfigIssue(
                f"{spath}.cluster",
                f"service '{svc.name}' reaches other clusters or external endpoints, and names no cluster to serve it",
                "set cluster to the cluster whose gateway serves the service",
            )
        ]
    clusters = {c.name: i for i, c in enumerate(fleet.clusters)}
    if svc.cluster not in clusters:
        return [ConfigIssue(f"{spath}.cluster", f"no cluster '{svc.cluster}'", f"use one of: {', '.join(clusters)}")]
    if svc.backends is None:
        return [
            ConfigIssue(
                f"{spath}.deployment",
                f"service '{svc.name}' has callers' keys or a failover order, which a fleet service over "
                "backends has, and publishes one deployment",
                "remove apiKeys and failover, or list two or more backends: [{deployment: <name>, cluster: "
                "<name>, weight: <n>}, ...]",
            )
        ]
    issues: list[ConfigIssue] = []
    deployments: dict[int, ModelDeploymentSpec] = {}
    for bi, backend in enumerate(svc.backends):
        bpath = f"{spath}.backends[{bi}]"
        if backend.deployment is None:
            continue
        cluster = backend.cluster or svc.cluster
        if cluster not in clusters:
            issues.append(
                ConfigIssue(f"{bpath}.cluster", f"no cluster '{cluster}'", f"use one of: {', '.join(clusters)}")
            )
            continue
        matches = [d for d in fleet.deployments if d.name == backend.deployment and d.cluster == cluster]
        if not matches:
            names = sorted({d.name for d in fleet.deployments if d.cluster == cluster})
            issues.append(
                ConfigIssue(
                    f"{bpath}.deployment",
                    f"no deployment '{backend.deployment}' on cluster '{cluster}'",
                    f"use one of: {', '.join(names) or '(none declared there)'}, or set cluster to where it runs",
                )
            )
            continue
        deployments[bi] = matches[0]
        if cluster != svc.cluster and fleet.clusters[clusters[cluster]].gateway is None:
            cpath = f"clusters[{clusters[cluster]}]"
            issues.append(
                ConfigIssue(
                    f"{bpath}.cluster",
                    f"cluster '{cluster}' has no gateway other clusters can reach (a DNS name and the certificate "
                    "issuer for its TLS)",
                    GATEWAY_FIX.format(cpath=cpath),
                )
            )
    remote = [bi for bi, d in deployments.items() if d.cluster != svc.cluster]
    if remote and fleet.clusters[clusters[svc.cluster]].gateway is None:
        # The serving side checks the other gateways' certificates with the fleet CA, which it takes
        # from a certificate of its own gateway's issuer (`components.features.fleet`).
        cpath = f"clusters[{clusters[svc.cluster]}]"
        issues.append(
            ConfigIssue(
                f"{spath}.cluster",
                f"cluster '{svc.cluster}' has no gateway issuer to check the other clusters' certificates with",
                GATEWAY_FIX.format(cpath=cpath),
            )
        )
    issues += _same_place_twice(spath, svc, deployments)
    issues += _one_model(spath, svc, deployments)
    issues += _failover(spath, svc)
    keyed = [i for i, b in enumerate(svc.backends) if b.external is not None and b.external.api_key is not None]
    for bi in keyed[1:]:
        issues.append(
            ConfigIssue(
                f"{spath}.backends[{bi}].external.apiKey",
                f"backends[{keyed[0]}] already has an API key: the route injects one key, since a key of a "
                "backend's own would take it out of the service's Envoy cluster and out of the failover order",
                "publish each keyed endpoint as a service of its own, or keep one keyed external endpoint here",
            )
        )
    if svc.routing is not None:
        issues.append(
            ConfigIssue(
                f"{spath}.routing",
                "a fleet service is routed by the gateway's weights and failover order, not by one deployment's picker",
                "remove routing",
            )
        )
    if svc.tls is not None and svc.host is None:
        issues.append(
            ConfigIssue(
                f"{spath}.tls",
                "TLS needs a host to issue the certificate for",
                f"set {spath}.host to the DNS name clients use, or remove tls",
            )
        )
    return issues


def _same_place_twice(
    spath: str, svc: ModelServiceSpec, deployments: dict[int, ModelDeploymentSpec]
) -> list[ConfigIssue]:
    """A deployment named twice, or two of one other cluster: that cluster's gateway is one address,
    which routes a service's requests to one deployment."""
    issues = []
    seen: dict[tuple[str, str], int] = {}
    remote: dict[str, int] = {}
    for bi, dep in sorted(deployments.items()):
        bpath = f"{spath}.backends[{bi}]"
        if (dep.cluster, dep.name) in seen:
            issues.append(
                ConfigIssue(
                    f"{bpath}.deployment",
                    f"deployment '{dep.name}' of cluster '{dep.cluster}' is backends[{seen[dep.cluster, dep.name]}] too",
                    "name each deployment once",
                )
            )
            continue
        seen[dep.cluster, dep.name] = bi
        if dep.cluster == svc.cluster:
            continue
        if dep.cluster in remote:
            issues.append(
                ConfigIssue(
                    f"{bpath}.cluster",
                    f"backends[{remote[dep.cluster]}] already reaches cluster '{dep.cluster}' through its gateway, "
                    "which sends the service's requests to one deployment",
                    f"keep one deployment of cluster '{dep.cluster}' in this service",
                )
            )
        remote[dep.cluster] = bi
    return issues


def _one_model(spath: str, svc: ModelServiceSpec, deployments: dict[int, ModelDeploymentSpec]) -> list[ConfigIssue]:
    """Every backend answers to one model name: the gateway forwards the client's body as it is
    (Envoy Gateway v1.8.3 route filters rewrite URLs, headers and credentials, not bodies:
    api/v1alpha1/httproutefilter_types.go), so the name a client asks for must be each backend's."""
    assert svc.backends is not None
    named: list[tuple[int, str | None, str]] = []
    for bi, backend in enumerate(svc.backends):
        if backend.external is not None:
            named.append((bi, backend.external.model, f"{spath}.backends[{bi}].external.model"))
        elif bi in deployments:
            dep = deployments[bi]
            named.append((bi, served_model(dep.args), f"deployments of '{dep.name}'"))
    if not named:
        return []
    first_bi, first, _ = named[0]
    issues = []
    for bi, model, _where in named[1:]:
        if model != first:
            shown = f"'{model}'" if model else "the model its image names"
            issues.append(
                ConfigIssue(
                    f"{spath}.backends[{bi}]",
                    f"backends[{bi}] answers to {shown} and backends[{first_bi}] to "
                    f"{f'{first!r}' if first else 'the model its image names'}: the gateway forwards the "
                    "client's model name as it is, so one of them would not know it",
                    "give every backend one model name: --served-model-name on the deployments, "
                    "external.model on the external endpoints",
                )
            )
    return issues


def _failover(spath: str, svc: ModelServiceSpec) -> list[ConfigIssue]:
    """`failover`: tiers of indices into `backends`, each backend in exactly one, no tier empty, at most
    `MAX_TIERS`, and a weight above zero in every tier (weights share a tier's requests)."""
    assert svc.backends is not None
    count = len(svc.backends)
    issues: list[ConfigIssue] = []
    tiers = svc.failover if svc.failover is not None else [list(range(count))]
    fpath = f"{spath}.failover"
    placed: dict[int, int] = {}
    for ti, tier in enumerate(tiers):
        if not tier:
            issues.append(
                ConfigIssue(
                    f"{fpath}[{ti}]",
                    f"tier {ti} is empty: a gap in the failover order",
                    "remove the empty tier, or list the backends that take over there",
                )
            )
        for ki, bi in enumerate(tier):
            if not 0 <= bi < count:
                issues.append(
                    ConfigIssue(
                        f"{fpath}[{ti}][{ki}]",
                        f"no backends[{bi}]: the service has {count} backends",
                        f"use indices 0 to {count - 1}",
                    )
                )
            elif bi in placed:
                issues.append(
                    ConfigIssue(
                        f"{fpath}[{ti}][{ki}]",
                        f"backends[{bi}] is in tier {placed[bi]} already: a loop in the failover order, a backend "
                        "failing over to itself",
                        "list each backend in one tier",
                    )
                )
            else:
                placed[bi] = ti
    missing = [bi for bi in range(count) if bi not in placed]
    if missing:
        issues.append(
            ConfigIssue(
                fpath,
                f"backends {', '.join(f'[{bi}]' for bi in missing)} are in no tier: a gap in the failover order",
                "list every backend in one tier (the first tier is served by weight, the next one while those fail)",
            )
        )
    if len(tiers) > MAX_TIERS:
        issues.append(
            ConfigIssue(
                f"{fpath}[{MAX_TIERS}]",
                f"{len(tiers)} tiers, and Envoy Gateway v1.8.3 has one fallback level: a Backend is primary or "
                "fallback",
                "merge the later tiers into tier 1",
            )
        )
    for ti, tier in enumerate(tiers):
        members = [svc.backends[bi] for bi in tier if 0 <= bi < count]
        if members and sum(b.weight for b in members) == 0:
            where = f"{fpath}[{ti}]" if svc.failover is not None else f"{spath}.backends"
            issues.append(
                ConfigIssue(
                    where,
                    (f"tier {ti}'s weights" if svc.failover is not None else "the weights") + " sum to 0, so the "
                    "gateway would send nothing there",
                    "give at least one backend there a weight above 0 (weights are relative, e.g. 90 and 10)",
                )
            )
    return issues
