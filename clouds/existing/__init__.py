"""Existing: a cluster its owner runs; nothing is provisioned, the kubeconfig comes from a secret.

The record the registry lists (`clouds/__init__.py`); the component is `clouds.existing.component`.
"""

from __future__ import annotations

from clouds.existing.config import KEYS, ExistingCluster
from clouds.spec import Cloud
from infra import vocabulary as vocab
from infra.profiles import CloudProfile, SharedStorage, Zones

SOURCE = "Existing"

CLOUD = Cloud(
    profile=CloudProfile(
        name=SOURCE,
        provisioned=False,
        # AMD hardware comes only with an owner's cluster; no provisioned cloud offers it here.
        gpu_vendors=(vocab.NVIDIA, vocab.AMD),
        system_machine=None,
        # The owner's cluster has a default StorageClass or none; the program leaves it to it.
        cache_storage_class="",
        # A `Shared` cache on the owner's cluster claims the ReadWriteMany class its owner names.
        shared_cache=SharedStorage(
            storage_class=None,
            provides="nothing: the owner's cluster has the ReadWriteMany class that storageClassName names",
            source="https://kubernetes.io/docs/concepts/storage/persistent-volumes/#access-modes",
        ),
        # Nothing labels an owner's nodes with a zone unless a cloud's node controller runs there
        # (a kubeadm or bare-metal node has no `topology.kubernetes.io/zone`), and an Existing pool
        # is one zone (`zones.unlisted_pool_count`; a pool listing several is refused).
        zones=Zones(labelled=False),
    ),
    key="existing",
    cluster_block=ExistingCluster,
    component="clouds.existing.component:ExistingCluster",
    component_token="modelplane:existing:ExistingCluster",
    keys=KEYS,
)
