"""The offline tooling: the mock runner, the analyzer client, the plan and the `modelplane` command.

None of it runs under the Pulumi CLI; the program (`program.main`) and the fleet model
(`infra.config`, `infra.checks.devices`, `infra.facts`) never import it.
"""
