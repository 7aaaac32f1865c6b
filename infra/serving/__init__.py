"""The serving layer as data: the catalog of charts per cloud, their values, the telemetry config, and
the facts of the serving features (the autoscaler's specs, the service routes, the pods' placement).

The program's `ServingStack` component installs what `catalog.cluster_charts` joins for a
cluster, and `components.features` registers the features' objects; the offline plan, its
placement audit and the policy pack judge a stack against the same data. Nothing here registers a
resource, so every layer above the fleet model can read it.
"""
