"""Stack-level policies: rules that join resources (a release to its stack, a workload to its claim).

`AnalyzeStack` sees every resource with its **outputs** and its parent set (pulumi/pulumi v3.259.0,
pkg/resource/deploy/step_generator.go, `AnalyzeResources`; `pulumi policy analyze` the same,
analyze_snapshot.go). A component's outputs are only what it passed to `register_outputs`, so
these rules read the facts the components register there (`components.base.policy_inputs`,
`components.serving_stack.planned_release`), literals known in every mode. A Kubernetes object
of a cluster that does not exist yet has no outputs at all in a first preview
(pkg/resource/plugin/provider_plugin.go, `Create` while the provider's config is unknown): a rule
that needs one says it cannot decide in this preview, and decides on `pulumi up`. A missing fact
is reported, never a `KeyError`. The join of drivers to components is
`infra.serving.catalog.join_charts`, the same function the program installs by.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError

from clouds import PROFILES
from infra import tokens
from infra.config.clusters import PoolCapacity
from infra.config.model import InferenceClass
from infra.config.roles import claimed_drivers
from infra.cost import (
    BUDGET_KEY,
    COST_OVER_BUDGET,
    ClusterCost,
    PoolSize,
    cluster_cost,
    money,
    monthly,
    over_budget,
)
from infra.formats import parse_quantity
from infra.serving.catalog import CATALOG, GPU_OPERATOR_KEYS, join_charts, owner_operator_keys, supported_drivers
from infra.vocabulary import CPU_DRIVER
from policies.config_rules import is_cluster_component
from policies.props import cannot_decide, get, mappings, plain, undecided

# --------------------------------------------------------------------------------------------
# device-stack-filtered


def _claimed_by_pools(cluster: PolicyResource) -> list[str] | None:
    """The drivers the cluster component's pools claim, from its outputs; None when it registers no pools."""
    pools = cluster.props.get("pools")
    if pools is None:
        return None
    drivers: set[str] = set()
    for pool in mappings(pools):
        spec = pool.get("class")
        if spec is not None:
            drivers.update(claimed_drivers(InferenceClass.model_validate(plain(spec))))
    return sorted(drivers)


def _release_children(stack: PolicyResource, resources: list[PolicyResource]) -> set[str]:
    """Component keys of the Releases registered under the stack, read from their names
    (`<stack>-<key>`), which the URN carries even when a preview gives them no properties."""
    prefix = f"{stack.name}-"
    return {
        r.name[len(prefix) :]
        for r in resources
        if r.resource_type == tokens.RELEASE and r.parent is not None and r.parent.urn == stack.urn
        if r.name.startswith(prefix)
    }


STACK_FACTS = ("source", "draDrivers", "releases")


def stack_filter_problems(stack: PolicyResource, resources: list[PolicyResource]) -> list[str]:
    """How the releases one ServingStack plans and registers differ from what its cluster's drivers select."""
    missing = [key for key in STACK_FACTS if stack.props.get(key) is None]
    if missing:
        return [
            f"stack {stack.name} registers no output {', '.join(repr(k) for k in missing)}, which this policy reads "
            "(components.serving_stack); it cannot check the stack's releases"
        ]
    source = str(stack.props["source"])
    claimed = sorted(str(d) for d in plain(stack.props["draDrivers"]) or [])
    cluster_name = str(stack.props.get("cluster") or stack.name)
    if source not in CATALOG:
        return [f"stack {stack.name}: unknown source '{source}'"]
    problems: list[str] = []
    cluster = stack.parent
    if cluster is not None and is_cluster_component(cluster.resource_type):
        from_pools = _claimed_by_pools(cluster)
        if from_pools is None:
            problems.append(f"cluster component {cluster.name} registers no output 'pools', which this policy reads")
        elif from_pools != claimed:
            problems.append(
                f"cluster '{cluster_name}': the stack installs for drivers [{', '.join(claimed)}] but the "
                f"cluster's pools claim [{', '.join(from_pools)}]"
            )
    catalog = CATALOG[source]
    owner_operator = plain(stack.props.get("ownerGpuOperator")) is True
    own = [str(k) for k in plain(stack.props.get("preinstalled")) or []]
    by_key = {c.key: c for c in catalog}
    owners = owner_operator_keys(claimed) if owner_operator else frozenset()
    planned: set[str] = set()
    for release in mappings(stack.props["releases"]):
        key = str(release.get("key") or "")
        component = by_key.get(key)
        if component is None:
            problems.append(f"cluster '{cluster_name}': release '{key}' is not in the {source} catalog")
            continue
        planned.add(key)
        if component.key in owners and component.key in GPU_OPERATOR_KEYS:
            problems.append(
                f"cluster '{cluster_name}': release {component.release} installs a second GPU operator next to "
                "the one the cluster's owner runs (ownerGpuOperator)"
            )
        elif component.key in owners:
            problems.append(
                f"cluster '{cluster_name}': release {component.release} installs a second copy of {component.key}, "
                "which the GPU operator the cluster's owner runs brings (ownerGpuOperator)"
            )
        if component.key in own:
            problems.append(
                f"cluster '{cluster_name}': release {component.release} installs a second copy of {component.key}, "
                "which the cluster already runs (existing.preinstalled)"
            )
        if component.dra_drivers and not set(component.dra_drivers) & set(claimed):
            problems.append(
                f"cluster '{cluster_name}': release {component.release} is for {', '.join(component.dra_drivers)}, "
                f"which no pool claims (claimed: {', '.join(claimed) or 'none'})"
            )
    served = sorted(set(claimed) & set(supported_drivers(source)))
    for component in join_charts(catalog, served, owner_operator, own):
        if component.dra_drivers and component.key not in planned:
            drivers = ", ".join(d for d in component.dra_drivers if d in served)
            problems.append(
                f"cluster '{cluster_name}': pools claim {drivers} but release {component.release} is not installed"
            )
    registered = _release_children(stack, resources)
    for key in sorted(planned - registered):
        problems.append(
            f"cluster '{cluster_name}': release {by_key[key].release} is planned but no Release registers it"
        )
    for key in sorted(registered - planned):
        problems.append(
            f"cluster '{cluster_name}': Release {stack.name}-{key} is registered but not in the stack's plan"
        )
    return problems


def _validate_device_stack_filtered(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    for stack in args.resources:
        if stack.resource_type == tokens.SERVING_STACK:
            with undecided(f"the releases of {stack.name}"):
                problems = stack_filter_problems(stack, args.resources)
            for problem in problems:
                report_violation(problem, stack.urn)


device_stack_filtered = StackValidationPolicy(
    name="device-stack-filtered",
    description=(
        "A cluster's serving stack installs no release tagged with a driver its pools do not claim, and every "
        "claimed, supported driver's components."
    ),
    validate=_validate_device_stack_filtered,
)

# --------------------------------------------------------------------------------------------
# cpu-claim-resources

CPU_CAPACITY = f"{CPU_DRIVER}/cpu"


def _key(resource: PolicyResource) -> tuple[str, str]:
    meta = resource.props.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name") or resource.name)


def claimed_cpus(template: PolicyResource) -> Decimal | None:
    """CPUs a ResourceClaimTemplate claims from dra.cpu, or None when it claims none."""
    total: Decimal | None = None
    for request in mappings(get(template.props, "spec", "spec", "devices", "requests")):
        exactly = request.get("exactly") or {}
        capacity = get(exactly, "capacity", "requests") or {}
        if CPU_CAPACITY not in capacity:
            continue
        cpus = parse_quantity(capacity[CPU_CAPACITY]) or Decimal(0)
        total = (total or Decimal(0)) + cpus * Decimal(str(plain(exactly.get("count")) or 1))
    return total


def _fmt(value: Decimal) -> str:
    return format(value.normalize(), "f")


def workload_problems(deployment: PolicyResource, templates: Mapping[tuple[str, str], Decimal]) -> list[str]:
    """How a workload's containers differ from the CPUs its pod claims from dra.cpu."""
    namespace, name = _key(deployment)
    pod = get(deployment.props, "spec", "template", "spec") or {}
    containers = mappings(pod.get("containers"))
    problems = []
    for claim in mappings(pod.get("resourceClaims")):
        cpus = templates.get((namespace, str(claim.get("resourceClaimTemplateName") or "")))
        if cpus is None:
            continue
        claim_name = str(claim.get("name") or "")
        users = [
            c for c in containers if any(u.get("name") == claim_name for u in mappings(get(c, "resources", "claims")))
        ] or containers
        for container in users:
            for kind in ("requests", "limits"):
                given = get(container, "resources", kind, "cpu")
                have = parse_quantity(given)
                if have != cpus:
                    shown = "nothing" if given is None else f"'{plain(given)}'"
                    problems.append(
                        f"workload {namespace}/{name}, container {container.get('name')}: {kind}.cpu is {shown} but "
                        f"claim '{claim_name}' takes {_fmt(cpus)} CPUs from {CPU_DRIVER}; request and limit exactly "
                        f"{_fmt(cpus)}"
                    )
    return problems


JOINED = (tokens.RESOURCE_CLAIM_TEMPLATE, tokens.DEPLOYMENT)


def _validate_cpu_claim_resources(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    joined = [r for r in args.resources if r.resource_type in JOINED]
    # A first preview gives the objects of a cluster not created yet no properties: nothing to join.
    empty = sorted(r.name for r in joined if len(r.props) == 0)
    if empty:
        raise unknown_error(
            cannot_decide(
                f"what {', '.join(empty)} claim and request",
                "their cluster does not exist yet, so the engine previews them with no properties",
            )
        )
    templates: dict[tuple[str, str], Decimal] = {}
    problems: list[tuple[str, str]] = []
    for r in joined:
        if r.resource_type == tokens.RESOURCE_CLAIM_TEMPLATE:
            with undecided(f"the CPUs claimed by {r.name}"):
                cpus = claimed_cpus(r)
            if cpus is not None:
                templates[_key(r)] = cpus
    for r in joined:
        if r.resource_type == tokens.DEPLOYMENT:
            with undecided(f"the containers and claims of {r.name}"):
                problems += [(p, r.urn) for p in workload_problems(r, templates)]
    for problem, urn in problems:
        report_violation(problem, urn)


def unknown_error(message: str) -> UnknownValueError:
    """An `UnknownValueError` with our own message (its constructor builds one from a property path)."""
    err = UnknownValueError(UNKNOWN_STRING_VALUE, [])
    err.message = message
    err.decided_where = message  # type: ignore[attr-defined]
    return err


cpu_claim_resources = StackValidationPolicy(
    name="cpu-claim-resources",
    description="A workload claiming dra.cpu requests and limits cpu equal to the CPUs it claims.",
    validate=_validate_cpu_claim_resources,
)

# --------------------------------------------------------------------------------------------
# cost-over-budget


def registered_cluster_cost(cluster: PolicyResource) -> ClusterCost | None:
    """A cluster component's cost, from the pools it registered (`components.base.policy_inputs`)."""
    source = str(cluster.props.get("source"))
    if source not in PROFILES:
        return None  # reported by the config policies, which name what the component lacks
    sizes = []
    for pool in mappings(cluster.props.get("pools")):
        most = plain(pool.get("maxNodeCount"))
        machine = pool.get("machine")
        price = plain(pool.get("hourlyPrice"))  # the class's own price, as text (`infra.facts.POOL_JSON`)
        capacity = plain(pool.get("capacity"))  # `infra.facts.capacity_json`; None: registered before pools had it
        sizes.append(
            PoolSize.of(
                str(pool.get("name")),
                str(machine) if machine is not None else None,
                source,
                int(plain(pool.get("nodeCount")) or 0),
                int(most) if most is not None else None,
                [str(z) for z in plain(pool.get("zones")) or []],
                Decimal(str(price)) if price is not None else None,
                capacity=PoolCapacity.model_validate(capacity) if capacity else None,
            )
        )
    caches = [
        (str(c.get("claim")), Decimal(str(plain(c.get("sizeGib")))))
        for c in mappings(cluster.props.get("sharedCaches"))
    ]
    return cluster_cost(cluster.name, source, sizes, caches=caches)


def budget_problem(budget: PolicyResource, resources: list[PolicyResource]) -> str | None:
    """Why the registered fleet is over the stack's budget, or None when it is not."""
    given = plain(budget.props.get("monthlyUsd"))
    if not isinstance(given, int | float):
        return f"the budget component {budget.name} registers no output 'monthlyUsd', which this policy reads"
    limit = Decimal(str(given))
    costs = [c for r in resources if is_cluster_component(r.resource_type) if (c := registered_cluster_cost(r))]
    at_max = sum((monthly(c.hourly_at_max) for c in costs), Decimal(0))
    unpriced = sorted({u for c in costs for u in c.unpriced})
    verdict = over_budget(at_max, limit, unpriced)
    if verdict is False:
        return None
    if verdict is None:
        return (
            f"{budget.props.get('stackFile')}: {BUDGET_KEY}.monthlyUsd is {money(limit):.2f} USD and the priced part "
            f"of the fleet costs {money(at_max):.2f} USD a month at maxNodeCount, but {', '.join(unpriced)} "
            "have no price in the machine catalog, so the budget cannot be checked. Fix: use machines the catalog "
            "prices (docs/machines.md), state what you pay for them as provisioning.<cloud>.hourlyPrice on their "
            "classes, or accept the risk by making cost-over-budget advisory in the pack config"
        )
    known = f" (without {', '.join(unpriced)}, which have no price in the machine catalog)" if unpriced else ""
    return (
        f"{budget.props.get('stackFile')}: {BUDGET_KEY}.monthlyUsd is {money(limit):.2f} USD but the fleet costs "
        f"{money(at_max):.2f} USD a month with every autoscaled pool at maxNodeCount{known}. Fix: lower nodeCount or "
        f"maxNodeCount, pick cheaper machines, or raise {BUDGET_KEY}.monthlyUsd"
    )


def _validate_cost_over_budget(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    for budget in args.resources:
        if budget.resource_type == tokens.BUDGET:
            problem = budget_problem(budget, args.resources)
            if problem is not None:
                report_violation(problem, budget.urn)


cost_over_budget = StackValidationPolicy(
    name=COST_OVER_BUDGET,
    description="The fleet's monthly on-demand cost, with autoscaled pools at maxNodeCount, is within modelplane:budget.",
    validate=_validate_cost_over_budget,
    # A budget is a warning by default; pack config makes it mandatory (`cost-over-budget: mandatory`).
    enforcement_level=EnforcementLevel.ADVISORY,
)

STACK_POLICIES = [device_stack_filtered, cpu_claim_resources, cost_over_budget]

# Each policy's longer explanation, which docs/policies.md prints after its description; the engine never sees it.
DETAILS: dict[str, str] = {
    device_stack_filtered.name: (
        "Under each ServingStack, no release is tagged only with drivers the cluster does not claim, and every "
        "driver the cluster claims and supports has all of its tagged components. The stack's `draDrivers` "
        "equal what the pools of the parent cluster component claim. On an Existing cluster with "
        "`ownerGpuOperator: true`, no GPU operator release is installed (the owner runs it). No release "
        "installs a component the cluster lists under `existing.preinstalled`, and those components are not "
        "counted missing. Every planned release has a Release under the stack, and no Release is unplanned."
    ),
    cpu_claim_resources.name: (
        "A Deployment whose pod claims a ResourceClaimTemplate requesting `dra.cpu/cpu` capacity requests and "
        "limits exactly that many CPUs in `cpu`. The Deployment and template are matched by name and namespace."
    ),
    cost_over_budget.name: (
        "Set with `modelplane:budget: {monthlyUsd: N}`. With a pool the catalog has no price for, the budget "
        "cannot be checked and that is reported too, never passed as within budget. Make it mandatory through "
        "pack config."
    ),
}

# Where each rule is decided (backticked paths and names the docs test resolves).
HOMES: dict[str, str] = {
    device_stack_filtered.name: (
        "`infra/serving/catalog.py` (`join_charts`); rule: `policies/stack_rules.py` (`stack_filter_problems`)"
    ),
    cpu_claim_resources.name: "`policies/stack_rules.py` (`workload_problems`)",
    cost_over_budget.name: "`infra/cost.py` (`over_budget`); prices in `docs/machines.md`",
}
