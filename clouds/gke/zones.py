"""The zones of each Google Cloud region, as the plan checks a pool's `zones` against them.

Read from the regions table of "Regions and zones" (https://cloud.google.com/compute/docs/regions-zones,
read 2026-12-03): a zone is `<region>-<letter>`, and most regions have the letters a, b and c, but not
all (us-central1 has a, b, c and f; us-east1 and europe-west1 b, c and d). A region missing here is
not checked against a list (only against the zone form); a zone Google adds to a listed region is
taken with the pool's `uncataloguedZones: true` until it is added here.
"""

from __future__ import annotations

from collections.abc import Mapping

_LETTERS: Mapping[str, str] = {
    "africa-south1": "abc",
    "asia-east1": "abc",
    "asia-east2": "abc",
    "asia-northeast1": "abc",
    "asia-northeast2": "abc",
    "asia-northeast3": "abc",
    "asia-south1": "abc",
    "asia-south2": "abc",
    "asia-southeast1": "abc",
    "asia-southeast2": "abc",
    "australia-southeast1": "abc",
    "australia-southeast2": "abc",
    "europe-central2": "abc",
    "europe-north1": "abc",
    "europe-north2": "abc",
    "europe-southwest1": "abc",
    "europe-west1": "bcd",
    "europe-west2": "abc",
    "europe-west3": "abc",
    "europe-west4": "abc",
    "europe-west6": "abc",
    "europe-west8": "abc",
    "europe-west9": "abc",
    "europe-west10": "abc",
    "europe-west12": "abc",
    "me-central1": "abc",
    "me-central2": "abc",
    "me-west1": "abc",
    "northamerica-northeast1": "abc",
    "northamerica-northeast2": "abc",
    "northamerica-south1": "abc",
    "southamerica-east1": "abc",
    "southamerica-west1": "abc",
    "us-central1": "abcf",
    "us-east1": "bcd",
    "us-east4": "abc",
    "us-east5": "abc",
    "us-south1": "abc",
    "us-west1": "abc",
    "us-west2": "abc",
    "us-west3": "abc",
    "us-west4": "abc",
}

ZONES_BY_REGION: Mapping[str, tuple[str, ...]] = {
    region: tuple(f"{region}-{letter}" for letter in letters) for region, letters in _LETTERS.items()
}
