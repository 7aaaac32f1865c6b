"""The registry of clouds: one package per cloud, one line each below.

Everything the shared code once listed per cloud is derived from these records (`clouds.spec.Cloud`):
the `source` and `provider` values the stack file takes and their blocks (`infra.config.model`),
the profiles, the machine catalog and its prices, the cluster components (loaded only for a stack
that has such a cluster), the resource types the policies read, and the mock runtime's answers.
Adding a cloud is a new package and a line here (docs/adding-a-cloud.md).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from clouds import aks, civo, digitalocean, eks, existing, gke, nebius, oci, vultr
from clouds.spec import Cloud, ResourceTypes
from infra.machines import ControlPlaneFee, MachineType
from infra.profiles import CloudProfile
from infra.vocabulary import AMD_ACCELERATOR_TYPES, VENDOR_DRIVER, vendor_gpu

CLOUDS: tuple[Cloud, ...] = (
    gke.CLOUD,
    eks.CLOUD,
    aks.CLOUD,
    civo.CLOUD,
    vultr.CLOUD,
    nebius.CLOUD,
    digitalocean.CLOUD,
    oci.CLOUD,
    existing.CLOUD,
)

BY_SOURCE: Mapping[str, Cloud] = {c.source: c for c in CLOUDS}
assert len(BY_SOURCE) == len(CLOUDS) == len({c.key for c in CLOUDS}), "one source and one key per cloud"
PROVISIONED: tuple[Cloud, ...] = tuple(c for c in CLOUDS if c.provisioned)
SOURCES: tuple[str, ...] = tuple(BY_SOURCE)
PROFILES: Mapping[str, CloudProfile] = {c.source: c.profile for c in CLOUDS}


def cloud(source: str) -> Cloud:
    """The cloud of a cluster `source`; config loading guarantees the source is known."""
    try:
        return BY_SOURCE[source]
    except KeyError:
        raise KeyError(f"unknown cloud {source!r}; known: {', '.join(BY_SOURCE)}") from None


def profile(source: str) -> CloudProfile:
    return cloud(source).profile


# The machine catalog: every provisioned cloud's rows, by (cloud, machine type).
MACHINES: tuple[MachineType, ...] = tuple(m for c in CLOUDS for m in c.machines)
_BY_MACHINE: Mapping[tuple[str, str], MachineType] = {(m.cloud, m.name): m for m in MACHINES}
assert all(m.cloud == c.source for c in CLOUDS for m in c.machines), "a cloud's rows name that cloud"


# The accelerator types a class may name for an owner's nodes (`accelerator-type-unknown` on Existing
# clusters, `infra.checks.devices`): every type a catalog row accepts (the NVIDIA names all come from the
# rows), the AMD Instinct products (`infra.vocabulary.AMD_ACCELERATOR_TYPES`, with its source), and
# the vendor-only names the facts give a class that names none (`amd-gpu`).
ACCELERATOR_TYPES: tuple[str, ...] = tuple(
    sorted(
        {t for m in MACHINES for t in m.accelerator_types}
        | set(AMD_ACCELERATOR_TYPES)
        | {vendor_gpu(v) for v in VENDOR_DRIVER}
    )
)


def machine(source: str, name: str) -> MachineType | None:
    """The catalog row for `name` on `source`, or None when the catalog does not know it."""
    return _BY_MACHINE.get((source, name))


def did_you_mean(name: str, known: list[str] | tuple[str, ...]) -> str:
    """ "did you mean 'a' or 'b'? " for the names of `known` nearest `name` (difflib), or "" when none is near."""
    close = difflib.get_close_matches(name, list(known), n=2)
    return f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""


def nearest_machines(source: str, name: str) -> str:
    """`did_you_mean` over the machine types the catalog lists for `source`: the start of a fix for a typo."""
    return did_you_mean(name, [m.name for m in MACHINES if m.cloud == source])


def control_plane_fee(source: str) -> ControlPlaneFee | None:
    return cloud(source).control_plane_fee


def catalog_date() -> str:
    """The newest read date of any row, on-demand price or fee: how fresh the catalog's facts are.

    Spot prices are not counted: one moves from day to day, so each spot-priced pool states its
    own read day (`infra.cost.spot_cost`), and a plan without one keeps its date."""
    fees = [c.control_plane_fee.read_on for c in CLOUDS if c.control_plane_fee is not None]
    prices = [m.price_read_on or (m.unpriced.read_on if m.unpriced else m.read_on) for m in MACHINES]
    return max([m.read_on for m in MACHINES] + prices + fees)


# The resource types the policies read, by engine type token: (the cloud's source, its resource types).
POOL_TYPES: Mapping[str, tuple[str, ResourceTypes]] = {
    c.resources.pool: (c.source, c.resources) for c in CLOUDS if c.resources is not None
}
CLUSTER_TYPES: Mapping[str, tuple[str, ResourceTypes]] = {
    c.resources.cluster: (c.source, c.resources) for c in CLOUDS if c.resources is not None
}
# The cluster components' type tokens (what the config policies judge), by token.
COMPONENT_TOKENS: Mapping[str, Cloud] = {c.component_token: c for c in CLOUDS}
