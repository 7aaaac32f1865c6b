"""The stack's budget as a component, so the policy pack can compare the fleet's cost with it.

What a fleet costs and the budget rule are `infra.cost`; this module only registers the budget.
"""

from __future__ import annotations

from decimal import Decimal

import pulumi

from infra import tokens
from infra.machines import CURRENCY


class BudgetComponent(pulumi.ComponentResource):
    """The stack's monthly budget (`modelplane:budget`), as inputs the `cost-over-budget` policy reads.

    Registered only when the stack sets a budget; it creates nothing in any cloud. Its type token
    (`infra.tokens.BUDGET`, `modelplane:cost:Budget`) is the one it was first registered with, kept so
    existing stacks do not replace it.
    """

    def __init__(self, name: str, monthly_usd: Decimal, stack_file: str, opts: pulumi.ResourceOptions | None = None):
        budget = {"monthlyUsd": float(monthly_usd), "currency": CURRENCY, "stackFile": stack_file}
        super().__init__(tokens.BUDGET, name, budget, opts)
        # Outputs too: `AnalyzeStack` reads a component's outputs, which are what it registers here.
        self.register_outputs(budget)
