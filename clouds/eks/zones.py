"""The Availability Zone names of each AWS region, as the plan checks a pool's `zones` against them.

Read from "AWS Availability Zones" (https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-availability-zones.html,
read 2026-12-03), which lists every AZ ID of a region (`use1-az1` ... `use1-az6`). A zone's name is the
region code and a letter; in the oldest regions the letters map to AZ IDs per account, and a
letter may stay with an account after its zone closed to new ones (ap-northeast-1b). So a region
here takes the letters `a` up to its last AZ ID's number (ca-central-1, `cac1-az1, az2, az4`: a to
d), which covers every account's names and refuses a letter past them (a seventh in us-east-1). A
region missing here is not checked against a list (only against the zone form); a zone AWS adds
to a listed region is taken with the pool's `uncataloguedZones: true` until it is added here.
"""

from __future__ import annotations

from collections.abc import Mapping
from string import ascii_lowercase

# The number of the region's last AZ ID (`use1-az6` -> 6).
_LAST_AZ_ID: Mapping[str, int] = {
    "us-east-1": 6,
    "us-east-2": 3,
    "us-west-1": 3,
    "us-west-2": 4,
    "ca-central-1": 4,
    "ca-west-1": 3,
    "mx-central-1": 3,
    "sa-east-1": 3,
    "eu-central-1": 3,
    "eu-central-2": 3,
    "eu-north-1": 3,
    "eu-south-1": 3,
    "eu-south-2": 3,
    "eu-west-1": 3,
    "eu-west-2": 3,
    "eu-west-3": 3,
    "af-south-1": 3,
    "il-central-1": 3,
    "me-central-1": 3,
    "me-south-1": 3,
    "ap-east-1": 3,
    "ap-northeast-1": 4,
    "ap-northeast-2": 4,
    "ap-northeast-3": 3,
    "ap-south-1": 3,
    "ap-south-2": 3,
    "ap-southeast-1": 3,
    "ap-southeast-2": 3,
    "ap-southeast-3": 3,
    "ap-southeast-4": 3,
    "ap-southeast-5": 3,
    "ap-southeast-7": 3,
}

ZONES_BY_REGION: Mapping[str, tuple[str, ...]] = {
    region: tuple(f"{region}{letter}" for letter in ascii_lowercase[:last]) for region, last in _LAST_AZ_ID.items()
}
