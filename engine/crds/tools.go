//go:build tools

// Keeps the modules whose CRDs tests/engine/kube.py reads in this module's build list, so that
// `go mod tidy` records their hashes; kube.py reads the CRDs with `go mod download -json MODULE`.
package tools

import (
	_ "github.com/envoyproxy/gateway/api/v1alpha1"
	_ "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	_ "github.com/prometheus-operator/prometheus-operator/pkg/alertmanager/validation"
	_ "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	_ "sigs.k8s.io/gateway-api/apis/v1"
	_ "sigs.k8s.io/lws/api/leaderworkerset/v1"
)
