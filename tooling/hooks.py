"""What a section of the offline plan gets: the stack, its facts, the mock run and the document so far.

The plan (`tooling.plan`) runs each hook after the program and the pack; a hook adds its section to
the document (the placement audit, the cost) and the violations it finds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from infra.config.stackfile import StackConfig
from infra.facts import ClusterFacts
from tooling.mockrun import MockRun


@dataclass
class PlanContext:
    stack: StackConfig
    facts: list[ClusterFacts]
    run: MockRun
    doc: dict[str, Any]


# A section of the plan: it reads the context and adds to `ctx.doc`.
PlanHook = Callable[[PlanContext], None]
