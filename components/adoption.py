"""Options for an adopted cloud resource: taken in by the engine's import, and held to what runs.

A resource with the `import_` option and no state is imported: the engine reads it from its provider
by that ID instead of creating it, and the plan and preview show `import` (pulumi/pulumi v3.274.1,
pkg/resource/deploy/step_generator.go, `isImport`). Once in the state with the same ID, the option
is no longer an import (same place: `oldImportID != goal.ID`), so keeping it is harmless.

What the engine no longer does: refuse an import whose inputs differ from what it read. Since
3.174.0 ("Overhaul of how the import option works ... import and then update a resource in a single
deployment", pulumi/pulumi #19339) it imports, then diffs the program's inputs against the read
state and updates the resource in place (step_generator.go, `continueStepsFromImport`); only a
replacement is an error, and in a preview only a warning. Adopting must change nothing, so every
adopted resource carries a `before_update` hook that fails: the engine runs a resource's
`before_update` hooks before it calls the provider's Update and stops the step on their error
(pkg/resource/deploy/step.go, `UpdateStep.Apply`), and runs one in a preview too when it is
registered with `on_dry_run` (deployment.go, `RunHooks`). So `pulumi preview` and the preview that
`pulumi up` runs first fail, before anything is imported; an `up --skip-preview` imports (into the
state only) and then stops at the update, with the cloud unchanged (docs/adopting.md).

The hook holds an adopted resource to what runs for as long as `adopt` stays in the stack file,
later edits included: an adopted cluster is run by its owner's tools, and the stack file follows it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi

# Keys the engine adds to a resource's inputs for its own bookkeeping (bridged providers' `__defaults`,
# `__meta`): no difference between the stack file and what runs.
_ENGINE_KEYS = "__"


def differing_inputs(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    """The top-level inputs where the program's differ from the running resource's, as the preview names them."""
    old, new = old or {}, new or {}
    keys = (set(old) | set(new)) - {k for k in set(old) | set(new) if k.startswith(_ENGINE_KEYS)}
    return sorted(k for k in keys if old.get(k) != new.get(k))


def refusal(what: str, import_id: str) -> Any:
    """The `before_update` hook body for one adopted resource: refuse, naming what differs and the way out."""

    def refuse(args: pulumi.ResourceHookArgs) -> None:
        keys = differing_inputs(args.old_inputs, args.new_inputs)
        raise RuntimeError(
            f"{what} adopts the running resource {import_id}, which differs from the stack file in "
            f"{', '.join(keys) or 'its inputs'}; nothing was changed. `pulumi preview --diff` shows each value "
            "as it runs (-) and as the stack file would make it (+): bring the stack file in line with the "
            "running resource and run again (docs/adopting.md)"
        )

    return refuse


def adopted(resource_name: str, what: str, import_id: str | None, ignore: Sequence[str] = ()) -> dict[str, Any]:
    """Resource options (as keyword arguments) that adopt the running resource `import_id`; none when None.

    `ignore` names inputs the program cannot know for a resource it did not create (what the cloud
    set when someone else created it), which then keep their running values: the engine copies
    them from the read state before it diffs (step_generator.go, `processIgnoreChanges`).
    """
    if import_id is None:
        return {}
    hook = pulumi.ResourceHook(
        f"{resource_name}-adopted", refusal(what, import_id), pulumi.ResourceHookOptions(on_dry_run=True)
    )
    options: dict[str, Any] = {"import_": import_id, "hooks": pulumi.ResourceHookBinding(before_update=[hook])}
    if ignore:
        options["ignore_changes"] = list(ignore)
    return options
