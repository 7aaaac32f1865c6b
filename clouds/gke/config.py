"""GKE's blocks in the stack file: `classes[].provisioning.gke` and `clusters[].gke`."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, StrictInt, field_validator

from infra.config.base import Accelerator, KeyDoc, MachineBlock, ProvisionedClusterBlock


class GkeMachine(MachineBlock):
    MACHINE_FIELD = "machine_type"

    machine_type: str
    disk_size_gb: Annotated[StrictInt, Field(ge=10)] = 100
    accelerator: Accelerator | None = None


# A project ID "must be a unique string of 6 to 30 lowercase letters, digits, or hyphens. It must
# start with a letter, and cannot have a trailing hyphen"
# (https://cloud.google.com/resource-manager/docs/creating-managing-projects). Projects made under
# a Google Workspace domain long ago keep an ID scoped by it (`example.com:my-project`; the Cloud
# SQL Admin API's `DatabaseInstance.project`: "The Google apps domain is prefixed if applicable",
# https://cloud.google.com/sql/docs/mysql/admin-api/rest/v1beta4/instances), so a domain prefix is
# taken before that form.
PROJECT_ID = re.compile(r"^([a-z0-9.-]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$")


class GkeCluster(ProvisionedClusterBlock):
    project: str
    region: str
    kubernetes_version: str
    # The region exists though the region catalog does not list it yet (`check_region`).
    uncatalogued_region: bool = False

    @field_validator("project")
    @classmethod
    def _project_id(cls, v: str) -> str:
        if PROJECT_ID.match(v):
            return v
        lower = v.lower()
        fix = (
            f"write the project's ID, e.g. '{lower}', as `gcloud projects list` shows it (a display name is not an ID)"
            if PROJECT_ID.match(lower)
            else "write the project's ID as `gcloud projects list` shows it (a display name is not an ID)"
        )
        raise ValueError(
            f"a Google Cloud project ID holds 6-30 lowercase letters, digits and hyphens, starts with a letter and "
            f"does not end with a hyphen, not '{v}'; {fix}"
        )


# The reference's entries for the keys only GKE has (the shared ones: `tooling.keys.KEYS`).
KEYS = {
    ("GkeMachine", "machineType"): KeyDoc(
        "Compute Engine machine type.", "GKE node pool `machineType`", "machineType: g2-standard-8"
    ),
    ("GkeCluster", "project"): KeyDoc(
        "The Google Cloud project ID: 6-30 lowercase letters, digits and hyphens, starting with a letter.",
        "the cluster's GCP provider",
        "project: my-project",
    ),
}
