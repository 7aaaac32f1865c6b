// The Gateway API CRDs the engine tier's kube-apiserver serves (tests/engine/kube.py). Envoy Gateway
// v1.8.3, the chart the serving stack installs, ships experimental-install.yaml of the Gateway API
// release its go.mod requires (envoyproxy/gateway tools/make/kube.mk, generate-gwapi-manifests);
// that release's module holds the same CRDs under config/crd/experimental. The LeaderWorkerSet CRD
// of lws v0.8.0, the chart the serving stack installs, is that release's config/crd/bases (the
// chart's charts/lws/crds copy adds only labels and the conversion webhook of its own Service).
// This module pins both, and go.sum their hashes.
module modelplane.dev/engine/crds

go 1.26.0

require (
	sigs.k8s.io/gateway-api v1.5.1
	sigs.k8s.io/lws v0.8.0
)

require (
	github.com/fxamacker/cbor/v2 v2.9.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.yaml.in/yaml/v2 v2.4.3 // indirect
	golang.org/x/net v0.49.0 // indirect
	golang.org/x/text v0.33.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	k8s.io/api v0.35.1 // indirect
	k8s.io/apimachinery v0.35.1 // indirect
	k8s.io/klog/v2 v2.130.1 // indirect
	k8s.io/kube-openapi v0.0.0-20250910181357-589584f1c912 // indirect
	k8s.io/utils v0.0.0-20260108192941-914a6e750570 // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
	sigs.k8s.io/randfill v1.0.0 // indirect
	sigs.k8s.io/structured-merge-diff/v6 v6.3.2 // indirect
)
