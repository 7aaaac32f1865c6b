"""Stack-level policies: rules that join resources (a release to its stack, a workload to its claim).

They see every resource with its parent set, so a release is judged by the ServingStack it sits
under and that stack by the cluster component above it. The join of drivers to components is
`components.catalog.join_components`, the same function the program installs by.
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

from components.catalog import CATALOG, GPU_OPERATOR_KEYS, join_components, supported_drivers
from infra.config import InferenceClass
from infra.cost import (
    BUDGET_KEY,
    BUDGET_TYPE,
    COST_OVER_BUDGET,
    ClusterCost,
    PoolSize,
    cluster_cost,
    money,
    monthly,
    over_budget,
)
from infra.devices import CPU_DRIVER, claimed_drivers
from infra.formats import parse_quantity
from policies import tokens
from policies.config_rules import is_cluster_component
from policies.props import get, mappings, plain
from policies.resource_rules import release_name

# --------------------------------------------------------------------------------------------
# device-stack-filtered


def _under(resource: PolicyResource, ancestor: PolicyResource) -> bool:
    parent = resource.parent
    while parent is not None:
        if parent.urn == ancestor.urn:
            return True
        parent = parent.parent
    return False


def _claimed_by_pools(cluster: PolicyResource) -> list[str]:
    drivers: set[str] = set()
    for pool in mappings(cluster.props.get("pools")):
        spec = pool.get("class")
        if spec is not None:
            drivers.update(claimed_drivers(InferenceClass.model_validate(plain(spec))))
    return sorted(drivers)


def stack_filter_problems(stack: PolicyResource, resources: list[PolicyResource]) -> list[str]:
    """How the releases under one ServingStack differ from what its cluster's drivers select."""
    source = str(stack.props["source"])
    claimed = sorted(str(d) for d in plain(stack.props.get("draDrivers")) or [])
    cluster_name = str(stack.props.get("cluster") or stack.name)
    if source not in CATALOG:
        return [f"stack {stack.name}: unknown source '{source}'"]
    problems: list[str] = []
    cluster = stack.parent
    if cluster is not None and is_cluster_component(cluster.resource_type):
        from_pools = _claimed_by_pools(cluster)
        if from_pools != claimed:
            problems.append(
                f"cluster '{cluster_name}': the stack installs for drivers [{', '.join(claimed)}] but the "
                f"cluster's pools claim [{', '.join(from_pools)}]"
            )
    catalog = CATALOG[source]
    owner_operator = plain(stack.props.get("ownerGpuOperator")) is True
    by_release = {c.release: c for c in catalog}
    present: set[str] = set()
    for release in resources:
        if release.resource_type != tokens.RELEASE or not _under(release, stack):
            continue
        component = by_release.get(release_name(release.name, release.props))
        if component is None:
            continue
        present.add(component.key)
        if owner_operator and component.key in GPU_OPERATOR_KEYS:
            problems.append(
                f"cluster '{cluster_name}': release {component.release} installs a second GPU operator next to "
                "the one the cluster's owner runs (ownerGpuOperator)"
            )
        if component.dra_drivers and not set(component.dra_drivers) & set(claimed):
            problems.append(
                f"cluster '{cluster_name}': release {component.release} is for {', '.join(component.dra_drivers)}, "
                f"which no pool claims (claimed: {', '.join(claimed) or 'none'})"
            )
    served = sorted(set(claimed) & set(supported_drivers(source)))
    for component in join_components(catalog, served, owner_operator):
        if component.dra_drivers and component.key not in present:
            drivers = ", ".join(d for d in component.dra_drivers if d in served)
            problems.append(
                f"cluster '{cluster_name}': pools claim {drivers} but release {component.release} is not installed"
            )
    return problems


def _validate_device_stack_filtered(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    for stack in args.resources:
        if stack.resource_type == tokens.SERVING_STACK:
            for problem in stack_filter_problems(stack, args.resources):
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


def _validate_cpu_claim_resources(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    templates: dict[tuple[str, str], Decimal] = {}
    for r in args.resources:
        if r.resource_type == tokens.RESOURCE_CLAIM_TEMPLATE:
            cpus = claimed_cpus(r)
            if cpus is not None:
                templates[_key(r)] = cpus
    for r in args.resources:
        if r.resource_type == tokens.DEPLOYMENT:
            for problem in workload_problems(r, templates):
                report_violation(problem, r.urn)


cpu_claim_resources = StackValidationPolicy(
    name="cpu-claim-resources",
    description="A workload claiming dra.cpu requests and limits cpu equal to the CPUs it claims.",
    validate=_validate_cpu_claim_resources,
)

# --------------------------------------------------------------------------------------------
# cost-over-budget


def registered_cluster_cost(cluster: PolicyResource) -> ClusterCost | None:
    """A cluster component's cost, from the pools it registered (`components.base.policy_inputs`)."""
    sizes = []
    for pool in mappings(cluster.props.get("pools")):
        most = plain(pool.get("maxNodeCount"))
        machine = pool.get("machine")
        sizes.append(
            PoolSize(
                str(pool.get("name")),
                str(machine) if machine is not None else None,
                int(plain(pool.get("nodeCount")) or 0),
                int(most) if most is not None else None,
            )
        )
    return cluster_cost(cluster.name, str(cluster.props.get("source")), sizes)


def budget_problem(budget: PolicyResource, resources: list[PolicyResource]) -> str | None:
    """Why the registered fleet is over the stack's budget, or None when it is not."""
    limit = Decimal(str(plain(budget.props.get("monthlyUsd"))))
    costs = [c for r in resources if is_cluster_component(r.resource_type) if (c := registered_cluster_cost(r))]
    at_max = sum((monthly(c.hourly_at_max) for c in costs), Decimal(0))
    if not over_budget(at_max, limit):
        return None
    unpriced = sorted({u for c in costs for u in c.unpriced})
    known = f" (without {', '.join(unpriced)}, which have no price in the machine catalog)" if unpriced else ""
    return (
        f"{budget.props.get('stackFile')}: {BUDGET_KEY}.monthlyUsd is {money(limit):.2f} USD but the fleet costs "
        f"{money(at_max):.2f} USD a month with every autoscaled pool at maxNodeCount{known}. Fix: lower nodeCount or "
        f"maxNodeCount, pick cheaper machines, or raise {BUDGET_KEY}.monthlyUsd"
    )


def _validate_cost_over_budget(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    for budget in args.resources:
        if budget.resource_type == BUDGET_TYPE:
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
