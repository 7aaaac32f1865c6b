"""What a cloud package declares: one `Cloud` record, which the registry (`clouds/__init__.py`) lists.

A package under `clouds/` holds everything that is one cloud's: its profile (the facts the shared
code decides by, grouped by meaning: `infra.profiles`), its config blocks, machine rows and prices,
its cluster component, how the policies read its pool resources, and what the offline plan's mock
runtime answers for its resources. The
shared code reads these records and never names a cloud. This module imports only the part of
`infra` below the fleet model (names, the config base, profiles and machine rows), so a cloud's
package can be imported by the fleet model without a cycle; a cloud's component is named by its
import path and loaded only when a stack has such a cluster (each cloud SDK takes seconds to load).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from infra.config.base import KeyDoc, MachineBlock, Model
from infra.machines import ControlPlaneFee, MachineType
from infra.profiles import CloudProfile

# A mock answer: (resource name, its inputs) -> the outputs the provider would compute.
MockOutputs = Callable[[str, Mapping[str, Any]], dict[str, Any]]
# A mock invoke: (its arguments, the configuration of the provider it runs on, e.g. its region)
# -> the result the program reads.
MockInvoke = Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class PoolSpelling:
    """Where a cloud's node-pool resource keeps what the policies read, as the engine sends it (camelCase).

    Paths are dotted property paths of the pool (`nodeConfig.labels`).
    """

    labels: str = "labels"
    # Labels as a list of `{key, value}` pairs (OKE `initialNodeLabels`) rather than a mapping.
    labels_as_pairs: bool = False
    taints: str = "taints"
    # Taints as `key=value:Effect` strings (AKS) rather than `{key, value, effect}` mappings.
    taints_as_text: bool = False
    # Where the property holds the taints in another form (OKE: a cloud-init script that starts the
    # kubelet with them), what reads them out of it.
    decode_taints: Callable[[Any], Any] | None = None
    # A list that holds the pool's accelerators (GKE `guestAccelerators`); None: the resource does not say.
    accelerators: str | None = None
    # Or: a property naming the node image, and words that mark an image with a GPU driver (EKS AMI types).
    image: str | None = None
    accelerated_images: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResourceTypes:
    """The engine type tokens of the cloud's cluster and pool resources, as the installed SDK registers them."""

    cluster: str
    pool: str
    # The cluster property holding pools declared inline (the system pool); None: every pool is standalone.
    inline_pools: str | None = None
    spelling: PoolSpelling = field(default_factory=PoolSpelling)


@dataclass(frozen=True)
class ImportIds:
    """The import IDs of a cloud's cluster and pool resources, for adopting a running cluster.

    Each pattern matches one ID whole. Its named groups say what the ID must agree with: `cluster`
    is the running cluster's name (the pool's `cluster` must be the cluster ID's), `pool` the
    pool's `name` in the stack file, `place` the block's region or location, and any other group
    the block's field of that name (GKE `project`). `cluster_shape` and `pool_shape` are the
    patterns as a user writes them, for messages and the docs.
    """

    cluster: re.Pattern[str]
    cluster_shape: str
    pool: re.Pattern[str]
    pool_shape: str
    # Where a user reads the IDs of a running cluster (a command of the cloud's CLI).
    listed_by: str
    # Why a pool the program creates in an adopted cluster can name no zones or claim `dra.net`, and
    # the cluster can hold no shared cache, when these need the network the program builds for a
    # new cluster (EKS: subnets per zone, the EFA security group, EFS mount targets); None: no limit.
    needs_own_network: str | None = None


@dataclass(frozen=True)
class Cloud:
    """One cloud (a cluster `source`): its profile, and how the program loads and wires its package."""

    # The facts the checks, values and derived facts decide by, grouped by meaning (`infra.profiles`).
    profile: CloudProfile
    # The key of its blocks in the stack file: `clusters[].<key>`, `classes[].provisioning.<key>`.
    key: str
    cluster_block: type[Model]
    # `module:Class` of the cluster component; its type token (chosen once, never changed: a changed
    # token changes every URN below it, which Pulumi carries out as replacing the cluster).
    component: str
    component_token: str
    # Provisioned clouds only: the machine block, catalog rows, the region prices were read for,
    # and the control plane fee.
    machine_block: type[MachineBlock] | None = None
    machines: tuple[MachineType, ...] = ()
    price_region: str | None = None
    control_plane_fee: ControlPlaneFee | None = None
    resources: ResourceTypes | None = None
    # The Pulumi package of the cloud's provider, and the stack config keys it documents for
    # credentials (config key -> provider argument), which `components.base.stack_credentials`
    # passes to the explicit provider as secrets.
    provider_package: str | None = None
    # The provider's Python SDK (imported only by the component).
    sdk: str | None = None
    credentials: Mapping[str, str] = field(default_factory=dict)
    # What the mock runtime answers for the cloud's resources (by type token) and invokes.
    mock_outputs: Mapping[str, MockOutputs] = field(default_factory=dict)
    mock_invokes: Mapping[str, MockInvoke] = field(default_factory=dict)
    # The reference's entry for each key of the cloud's blocks: (model, key) -> what it is for.
    keys: Mapping[tuple[str, str], KeyDoc] = field(default_factory=dict)
    # An example value of each key of the cluster block, as YAML (the reference's examples).
    examples: Mapping[str, str] = field(default_factory=dict)
    # The import IDs of its cluster and pools; None: a running cluster cannot be adopted.
    adoption: ImportIds | None = None

    @property
    def source(self) -> str:
        return self.profile.name

    @property
    def provisioned(self) -> bool:
        return self.profile.provisioned

    def component_class(self) -> type[Any]:
        """The cluster component, imported now (it loads the cloud's SDK)."""
        module, _, cls = self.component.partition(":")
        found: type[Any] = getattr(importlib.import_module(module), cls)
        return found
