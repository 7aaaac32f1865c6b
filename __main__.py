"""Entry point the Pulumi CLI runs (`pulumi preview`, `pulumi up`); the program lives in program/."""

from program.main import run

run()
