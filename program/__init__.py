"""The Pulumi program: stack config -> fleet -> guard -> one cluster component and serving stack each.

`program.main.run` is what `__main__.py` calls under the Pulumi CLI and what `modelplane plan` runs
under Pulumi's mock runtime. It builds on the fleet model (`infra`), the clouds (`clouds`) and the
components (`components`); nothing of those imports it.
"""
