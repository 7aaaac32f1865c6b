"""The CrossGuard pack the Pulumi CLI runs (`pulumi preview --policy-pack policies`); policies live in `policies.pack`."""

from pulumi_policy import EnforcementLevel, PolicyPack

from policies.pack import ALL_POLICIES, PACK_NAME, state_manifest_version

state_manifest_version()
PolicyPack(name=PACK_NAME, policies=ALL_POLICIES, enforcement_level=EnforcementLevel.MANDATORY)
