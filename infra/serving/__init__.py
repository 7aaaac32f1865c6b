"""The serving stack as data: the catalog of charts per cloud, their values, and the telemetry config.

The program's `ServingStack` component installs what `catalog.cluster_charts` joins for a
cluster; the offline plan and the policy pack judge a stack against the same join. Nothing here
registers a resource, so every layer above the fleet model can read it.
"""
