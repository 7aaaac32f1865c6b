"""The configuration reference's entries for the serving keys: model deployments, their devices,
cache and autoscaling, and the services that publish them. Part of `tooling.keys.KEYS`, which says
what an entry holds."""

from __future__ import annotations

from infra.config.base import KeyDoc

SERVING_KEYS: dict[tuple[str, str], KeyDoc] = {
    # Deployments
    ("ModelDeploymentSpec", "name"): KeyDoc("Deployment and Service name.", "`ModelDeployment`", "name: qwen"),
    ("ModelDeploymentSpec", "namespace"): KeyDoc(
        "Kubernetes namespace, created when missing.", "`ModelDeployment`", "namespace: ml-team"
    ),
    ("ModelDeploymentSpec", "cluster"): KeyDoc(
        "The cluster to run on (a `clusters[].name`).", "placement", "cluster: gke-prod"
    ),
    ("ModelDeploymentSpec", "pool"): KeyDoc(
        "The pool to run on; it must be able to have nodes (`nodeCount` >= 1 or autoscaling).",
        "nodeSelector `modelplane.ai/pool`; the pool's tolerations",
        "pool: gpu",
    ),
    ("ModelDeploymentSpec", "image"): KeyDoc(
        "Container image, pinned by tag or digest (never `latest`).",
        "`pinned-versions`",
        "image: vllm/vllm-openai:v0.23.0",
    ),
    ("ModelDeploymentSpec", "args"): KeyDoc(
        "Container arguments; quote numbers. A credential flag (`--hf-token`, `--api-key`, `--token`) or a value "
        "that starts like a token is refused and never shown: pass it through `env` as a `secure:` value. vLLM's "
        "parallelism flags must multiply to the GPUs a replica claims (docs/serving.md).",
        "the container; `credential_arg_issues` (`infra/checks/rules.py`)",
        'args: [--max-model-len, "8192"]',
    ),
    ("ModelDeploymentSpec", "replicas"): KeyDoc(
        "Pod replicas, fixed; leave it out when `autoscaling` is set.", "the Deployment", "replicas: 1"
    ),
    ("ModelDeploymentSpec", "devices"): KeyDoc(
        "Devices of the pool's class each pod claims.",
        "the ResourceClaimTemplate; `cpu-claim-resources`",
        "devices: [{name: gpu, count: 1}]",
    ),
    ("ModelDeploymentSpec", "env"): KeyDoc(
        "Environment variables. A value written as `{secure: <ciphertext>}` (`pulumi config set --secret --path "
        "'modelplane:deployments[0].env.HF_TOKEN'`) goes into a Kubernetes Secret the pod reads through `secretKeyRef`; "
        "set without `--path`, the CLI makes a key of that name instead, which is refused (`path_key_issue`, "
        "`infra/config/stackfile.py`). "
        "A plain value whose name holds TOKEN, KEY, SECRET, PASSWORD, PASSWD or CREDENTIAL, or that starts like a "
        "token (`hf_`, `ghp_`, `github_pat_`, `sk-`, `AKIA`), is refused and never shown.",
        "the container's env; `check_plain_credentials` (`infra/checks/rules.py`)",
        'env: {VLLM_CPU_KVCACHE_SPACE: "4"}',
    ),
    ("ModelDeploymentSpec", "shmSize"): KeyDoc(
        "Size of the memory-backed `/dev/shm`; counts against the pod's memory. A bare number is bytes: one under "
        "1 GiB is refused as missing its unit.",
        "the pod's volumes",
        "shmSize: 2Gi",
    ),
    ("ModelDeploymentSpec", "port"): KeyDoc(
        "The engine's one port: passed as `--port`, and used by the container, the probes, the Service and the "
        "route. An `args` entry that sets another port is an error.",
        "`ModelDeployment`; `infra.checks.services.check_serving`",
        "port: 8000",
    ),
    ("ModelDeploymentSpec", "memory"): KeyDoc(
        "Memory request and limit of the engine container (one value: the engine is not burstable). "
        "Required on GPU pools; must exceed `shmSize`. A bare number is bytes: one under 1 GiB is refused as "
        "missing its unit.",
        "the container's resources; `infra.checks.services.check_serving`",
        "memory: 24Gi",
    ),
    ("ModelDeploymentSpec", "cache"): KeyDoc(
        "Keep downloaded weights across restarts, mounted at vLLM's Hugging Face cache, or share one download "
        "per cluster, namespace and model (`volume: Shared`).",
        "`ModelDeployment` (a PersistentVolumeClaim or a node directory); `SharedCache` (a ReadWriteMany claim "
        "and its download Job)",
        "cache: {volume: PersistentVolumeClaim, size: 50Gi}",
    ),
    ("ModelDeploymentSpec", "startupSeconds"): KeyDoc(
        "How long a first start (download and load) may take before the startup probe gives up.",
        "the container's startup probe",
        "startupSeconds: 1800",
    ),
    ("ModelDeploymentSpec", "autoscaling"): KeyDoc(
        "Replicas that follow the load, between `minReplicas` and `maxReplicas`; exclusive with `replicas` "
        "(docs/serving.md, Autoscaling).",
        "a KEDA ScaledObject and a PodMonitor; `infra.checks.services.check_autoscaling`",
        "autoscaling: {minReplicas: 1, maxReplicas: 4, metric: RequestsWaiting, target: 5}",
    ),
    ("Autoscaling", "minReplicas"): KeyDoc(
        "Fewest replicas (default 1). 0 only for a deployment a service routes through its picker, with "
        "`queueSeconds`: the picker holds the first request while KEDA wakes a replica (docs/serving.md, Scale from zero).",
        "the ScaledObject's `minReplicaCount`; `infra.checks.routing.check_scale_from_zero`",
        "minReplicas: 1",
    ),
    ("Autoscaling", "queueSeconds"): KeyDoc(
        "How long the endpoint picker holds a request no replica can take yet (its flow control); required at "
        "`minReplicas: 0`, then at least `startupSeconds` + 60.",
        "the picker's `flowControl.defaultRequestTTL` and the gateway's `messageTimeout`; "
        "`infra.checks.routing.check_scale_from_zero`",
        "queueSeconds: 1860",
    ),
    ("Autoscaling", "maxReplicas"): KeyDoc(
        "Most replicas; the pool must hold them at its `maxNodeCount`.",
        "the ScaledObject's `maxReplicaCount`; `infra.checks.schedulable`",
        "maxReplicas: 4",
    ),
    ("Autoscaling", "metric"): KeyDoc(
        "`RequestsWaiting`, `RequestsRunning` (per replica) or `KVCacheUsage`: each one of vLLM's own metrics.",
        "the ScaledObject's Prometheus query (`infra.serving.autoscaling`)",
        "metric: RequestsWaiting",
    ),
    ("Autoscaling", "target"): KeyDoc(
        "The metric's value one replica carries: requests, or a fraction 0-1 of the KV cache.",
        "the Prometheus trigger's `threshold`",
        "target: 5",
    ),
    ("Autoscaling", "scaleDownSeconds"): KeyDoc(
        "How long the load must stay low before replicas fall back. Unset, the HPA's default of 300 s holds.",
        "the ScaledObject's `advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds`",
        "scaleDownSeconds: 60",
    ),
    ("ModelDeploymentSpec", "spotPool"): KeyDoc(
        "A spot pool of the same cluster for the replicas above `floor`: they run there as a second Deployment "
        "(`<name>-spot`) behind the same Service and InferencePool (docs/serving.md, Capacity: a floor on spot).",
        "`ModelDeployment` (the spot workload); `infra.checks.reclaim`",
        "spotPool: h100-spot",
    ),
    ("ModelDeploymentSpec", "floor"): KeyDoc(
        "Replicas that stay on `pool` (OnDemand, Reservation or CapacityBlock) through a reclaim; with `spotPool`, "
        "at least 1 and at most `replicas`. The PodDisruptionBudget keeps this many through evictions.",
        "the pool's Deployment's replicas; the PodDisruptionBudget's `minAvailable`; `infra.checks.reclaim`",
        "floor: 1",
    ),
    ("ModelDeploymentSpec", "acceptReclaim"): KeyDoc(
        "Accept replicas of several nodes (`nodes` > 1) on a spot pool, where one reclaimed node takes the whole "
        "group down.",
        "`infra.checks.reclaim` (refused without it)",
        "acceptReclaim: true",
    ),
    ("ModelDeploymentSpec", "nodes"): KeyDoc(
        "Nodes one replica spans, one pod on each; above 1 the replica is a LeaderWorkerSet group.",
        "`ModelDeployment` (a LeaderWorkerSet of size `nodes`); `check_multinode`",
        "nodes: 2",
    ),
    ("ModelCache", "volume"): KeyDoc(
        "`PersistentVolumeClaim` (a volume of `size`), `NodeLocal` (a directory on the node) or `Shared` (a "
        "ReadWriteMany volume of `size` the cluster's deployments of the same `--model` share, filled once by a "
        "Job and mounted read-only; refused where the cloud has no ReadWriteMany storage, docs/serving.md).",
        "`ModelDeployment`; `SharedCache`, `infra.checks.cache`",
        "volume: NodeLocal",
    ),
    ("ModelCache", "size"): KeyDoc(
        "Size of the claim; more than the model's weights (a size under what the `--model` id's parameter count "
        "takes at 4 bits a weight is refused). Required for a claim and a shared cache (GKE's standard-rwx: 1Ti "
        "at least). A bare number is bytes: one under 1 GiB is refused as missing its unit.",
        "the claim; `infra.checks.parallelism.cache_size_issues`",
        "size: 50Gi",
    ),
    ("ModelCache", "storageClassName"): KeyDoc(
        "StorageClass of the claim; default: the cloud's (none on EKS, where it is required). For a shared cache, "
        "a ReadWriteMany class; default: the cloud's (required on Existing).",
        "the claim",
        "storageClassName: premium-rwo",
    ),
    ("ModelServiceSpec", "name"): KeyDoc(
        "Service name; the route and the endpoint's key.", "`ModelService`", "name: qwen"
    ),
    ("ModelServiceSpec", "deployment"): KeyDoc(
        "The deployment it publishes (`deployments[].name`); or `backends` for a split.",
        "`ModelService`",
        "deployment: qwen",
    ),
    ("ModelServiceSpec", "backends"): KeyDoc(
        "A weighted split over two or more deployments of one model on one cluster and namespace (a canary); "
        "exclusive with `deployment`. A backend of another cluster (`cluster`) or an `external` endpoint makes "
        "it a fleet service (docs/serving.md, Fleet services).",
        "the HTTPRoute's weighted backendRefs; `infra.checks.routing`, `infra.checks.fleet`",
        "backends: [{deployment: qwen, weight: 90}, {deployment: qwen-next, weight: 10}]",
    ),
    ("ModelServiceSpec", "routing"): KeyDoc(
        "`Picker`: each request goes where the deployment's endpoint picker says (prompt prefix, queue); "
        "`Service`: the gateway balances over the deployment's Service. Default: `Picker` for one deployment, "
        "`Service` for a split (docs/serving.md, Routing).",
        "an InferencePool and its picker, Envoy Gateway's EnvoyExtensionPolicy and BackendTrafficPolicy",
        "routing: Service",
    ),
    ("ServiceBackend", "deployment"): KeyDoc(
        "A deployment of the split (`deployments[].name`); or `external`.", "the HTTPRoute", "deployment: qwen-next"
    ),
    ("ServiceBackend", "cluster"): KeyDoc(
        "The deployment's cluster, when it is not the service's: reached through that cluster's gateway "
        "(`clusters[].gateway`) over TLS.",
        "an Envoy Gateway Backend; the other cluster's fleet route; `infra.checks.fleet`",
        "cluster: west",
    ),
    ("ServiceBackend", "external"): KeyDoc(
        "An OpenAI-compatible endpoint outside the fleet; exclusive with `deployment`.",
        "an Envoy Gateway Backend; `infra.checks.fleet`",
        "external: {url: https://llm.example.com/v1, model: qwen, apiKey: {secure: v1:...}}",
    ),
    ("ExternalEndpoint", "url"): KeyDoc(
        "Its OpenAI base URL: `https://<host>[:port]/v1` (https only; the gateway sends it the client's `/v1/...`).",
        "the Backend's DNS name, port and TLS name",
        "url: https://llm.example.com/v1",
    ),
    ("ExternalEndpoint", "model"): KeyDoc(
        "The model name it answers to; the same as the service's deployments' (the body is forwarded as it is).",
        "`infra.checks.fleet`",
        "model: qwen",
    ),
    ("ExternalEndpoint", "apiKey"): KeyDoc(
        "Its API key, a `secure:` value, sent as `Authorization: Bearer`; never shown.",
        "a Secret and Envoy Gateway's credentialInjection filter",
        "apiKey: {secure: v1:...}",
    ),
    ("ModelServiceSpec", "failover"): KeyDoc(
        "The order of failover: tiers of indices into `backends`, each backend in one tier; the first served by "
        "weight, the second only while the first is unhealthy. At most two tiers (Envoy Gateway's one fallback "
        "level). Default: one tier.",
        "the Backends' `fallback`; `infra.checks.fleet`",
        "failover: [[0, 1], [2]]",
    ),
    ("ModelServiceSpec", "apiKeys"): KeyDoc(
        "Keys callers must send in `x-api-key`, each a `secure:` value; never shown (the plan counts them).",
        "a Secret and Envoy Gateway's SecurityPolicy `apiKeyAuth`",
        "apiKeys: [{secure: v1:...}]",
    ),
    ("SecureValue", "secure"): KeyDoc(
        "The ciphertext `pulumi config set --secret --path` writes.", "the Secret", "secure: v1:..."
    ),
    ("ServiceBackend", "weight"): KeyDoc(
        "Its share, relative to the others' (0 to 1,000,000, default 1); not all 0.", "the HTTPRoute", "weight: 10"
    ),
    ("ModelServiceSpec", "cluster"): KeyDoc(
        "The deployment's cluster; needed only when deployments of that name run on several clusters. A fleet "
        "service's serving cluster, whose gateway serves it (required).",
        "`infra.checks.services.check_serving`",
        "cluster: civo-cpu",
    ),
    ("ModelServiceSpec", "host"): KeyDoc(
        "Host name the route matches (and the certificate names, with `tls`).",
        "the HTTPRoute",
        "host: qwen.example.com",
    ),
    ("ModelServiceSpec", "path"): KeyDoc(
        "Path prefix the route matches, stripped before the engine, written without a trailing `/`; default "
        "`/<name>`, or `/` with a host.",
        "the HTTPRoute",
        "path: /qwen",
    ),
    ("ModelServiceSpec", "tls"): KeyDoc(
        "HTTPS on the Gateway for `host`, with a certificate from a cert-manager issuer.",
        "the Gateway listener and its Certificate",
        "tls: {issuerRef: {name: letsencrypt}}",
    ),
    ("ServiceTls", "issuerRef"): KeyDoc(
        "The cert-manager issuer.", "the Certificate", "issuerRef: {name: letsencrypt}"
    ),
    ("IssuerRef", "name"): KeyDoc("Issuer name.", "the Certificate", "name: letsencrypt"),
    ("IssuerRef", "kind"): KeyDoc("`ClusterIssuer` (default) or `Issuer`.", "the Certificate", "kind: ClusterIssuer"),
    ("DeploymentDevice", "name"): KeyDoc("A device name of the pool's class.", "the claim", "name: gpu"),
    ("DeploymentDevice", "count"): KeyDoc("How many; at most the class's `count`.", "the claim", "count: 1"),
}
