"""The one entry to the checks: `check(fleet)` runs every rule over a validated fleet, once.

First the fleet's own rules, each reporting what it finds independently: what classes leave out is
supplied (`infra.checks.supply`), then references across keys, the rules on values, the mirror
rule and the roles of pools. A fleet whose references hold is guarded (`guard`), whatever the
rules on values found beside: the device rules' violations (mandatory and advisory), the rules a
cloud's API enforces that the fleet model alone cannot see (zone limits, pool names the cloud
shortens), deployments that could never be scheduled (`infra.checks.schedulable`), and the derived
facts. So every independent problem is reported in one run. Nothing raises: `Checked` holds what
was found. The program (`program.main.deploy`) stops on it before the first registration, since a
program that registered fewer resources would make `pulumi up` delete the rest; the offline plan
(`tooling.plan`) reports it and hands the same result to the program. Neither repeats a step.
A check knows the paths inside the stack file, never its name: the loader attaches it once
(`infra.config.stackfile.located_checked`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from clouds import cloud
from infra.checks.devices import Violation
from infra.checks.machines import fleet_violations
from infra.checks.mirror import mirror_issues
from infra.checks.reclaim import check_spot_pools
from infra.checks.references import check_references, pools_without_devices
from infra.checks.rules import check_rules
from infra.checks.schedulable import schedulability_issues
from infra.checks.supply import supply_fleet
from infra.config.issues import ConfigError, ConfigIssue
from infra.config.model import Fleet
from infra.facts import ClusterFacts, declared_zones, derive_fleet
from infra.serving.catalog import chart_keys, preinstalled_problems
from infra.serving.picker import CRDS_COMPONENT


@dataclass(frozen=True)
class Checked:
    """What `check` found over one fleet, and the fleet and facts the program builds from when nothing stops it."""

    fleet: Fleet  # the fleet with what its classes left out supplied
    violations: list[Violation]  # every device-rule violation, mandatory or advisory
    issues: list[ConfigIssue]  # the fleet's own rules, then the clouds' (`fleet_issues`) and `schedulability_issues`
    facts: list[ClusterFacts]
    guarded: bool = True  # False when the fleet's references failed and the guard did not run
    own_rules_hold: bool = True  # False when the fleet's own rules (references, values) found an issue

    @property
    def stopping_violations(self) -> list[Violation]:
        """The mandatory violations: they stop a run; advisory ones are the pack's to report."""
        return [v for v in self.violations if v.mandatory]

    @property
    def violations_stop(self) -> bool:
        return bool(self.stopping_violations)

    @property
    def stops(self) -> bool:
        return self.violations_stop or bool(self.issues)


def check(fleet: Fleet) -> Checked:
    """Every check over a validated fleet (`infra.config.stackfile.parse_fleet`), in order, once."""
    # What classes leave out is supplied before any rule reads them (`infra.checks.supply`).
    fleet, unresolved = supply_fleet(fleet)
    unresolved += check_references(fleet) + check_spot_pools(fleet)
    judged = check_rules(fleet) + mirror_issues(fleet.chart_mirror, chart_keys(), {CRDS_COMPONENT})
    roleless = pools_without_devices(fleet)
    if unresolved or roleless:
        # The guard derives each pool's facts from its class and finds each deployment's pool: a class
        # that could not be supplied, a reference that names nothing or a pool without a role leaves
        # it nothing to read. The rules on values (`judged`) only judge what a key holds, which the
        # guard does not need to be right, so a fleet they fault is still guarded and both report.
        return Checked(fleet, [], unresolved + judged + roleless, [], guarded=False, own_rules_hold=False)
    checked = guard(fleet)
    return replace(checked, issues=judged + checked.issues, own_rules_hold=not judged)


def guard(fleet: Fleet) -> Checked:
    """Every device rule, cloud rule and schedulability rule over a fleet whose own rules hold, and its derived facts."""
    facts = derive_fleet(fleet)
    issues = fleet_issues(fleet, facts) + preinstalled_issues(fleet) + schedulability_issues(fleet, facts)
    return Checked(fleet, fleet_violations(fleet), issues, facts)


def preinstalled_issues(fleet: Fleet) -> list[ConfigIssue]:
    """Each `existing.preinstalled` name that is not a component of the cluster's catalog (`preinstalled_problems`)."""
    issues = []
    for ki, cluster in enumerate(fleet.clusters):
        owner = cluster.owner_block
        if owner is None:
            continue
        block = f"clusters[{ki}].{cloud(cluster.source).key}.preinstalled"
        for i, problem, fix in preinstalled_problems(cluster.source, owner.preinstalled):
            issues.append(ConfigIssue(f"{block}[{i}]", problem, fix))
    return issues


def fleet_issues(fleet: Fleet, facts: list[ClusterFacts]) -> list[ConfigIssue]:
    """Rules a cloud's API enforces that the fleet model alone cannot see, checked before registering.

    The cloud's record holds the values (`Zones.limit`, `Naming.pools` of its profile); the rule is stated
    here so it runs before the first registration of the whole program, never inside a component
    after other clusters registered.
    """
    issues: list[ConfigIssue] = []
    for ki, (cluster, cf) in enumerate(zip(fleet.clusters, facts, strict=True)):
        base = f"clusters[{ki}]"
        pool_index = {p.name: pi for pi, p in enumerate(cluster.node_pools)}
        owner = cloud(cluster.source)
        limit = owner.profile.zones.limit
        zones = declared_zones(cf.pools)
        if limit is not None and len(zones) > limit:
            over = next(p for p in cluster.node_pools if set(p.zones) - set(zones[:limit]))
            issues.append(
                ConfigIssue(
                    f"{base}.nodePools[{pool_index[over.name]}].zones",
                    f"the pools of cluster '{cluster.name}' name {len(zones)} zones; the {cluster.source} network has "
                    f"subnets for at most {limit}",
                    f"name at most {limit} distinct zones across the cluster's pools",
                )
            )
        naming = owner.profile.naming.pools
        if naming is not None:
            seen: dict[str, str] = {}
            for pool in cf.pools:
                cloud_name = naming.rename(pool.name)
                if cloud_name in seen and pool.name in pool_index:
                    issues.append(
                        ConfigIssue(
                            f"{base}.nodePools[{pool_index[pool.name]}].name",
                            f"pool '{pool.name}' gets the {naming.kind} '{cloud_name}', as pool "
                            f"'{seen[cloud_name]}' does",
                            f"rename the pool: {naming.rule}",
                        )
                    )
                seen.setdefault(cloud_name, pool.name)
    return issues


def format_violations(violations: list[Violation]) -> str:
    lines = [f"{len(violations)} device rule violation(s); nothing was created, changed or deleted:"]
    lines += [f"  [{v.policy}] {v.message}" for v in violations]
    return "\n".join(lines)


def guard_report(result: Checked) -> str:
    """Everything that stops a run, in one message: the device rules' violations, then the other issues."""
    parts = []
    if result.stopping_violations:
        parts.append(format_violations(result.stopping_violations))
    if result.issues:
        parts.append(
            "invalid stack config; nothing was created, changed or deleted:\n" + str(ConfigError(result.issues))
        )
    return "\n".join(parts)
