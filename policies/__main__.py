"""The CrossGuard pack the Pulumi CLI runs (`pulumi preview --policy-pack policies`); policies live in `policies.pack`."""

from policies.server import serve

serve()
