"""Entry point the Pulumi CLI runs (`pulumi preview`, `pulumi up`); the program lives in infra/."""

from infra.program import run

run()
