//go:build tools

// Keeps sigs.k8s.io/gateway-api and sigs.k8s.io/lws in this module's build list so that `go mod tidy`
// records their hashes; tests/engine/kube.py reads their CRDs with `go mod download -json MODULE`.
package tools

import (
	_ "sigs.k8s.io/gateway-api/apis/v1"
	_ "sigs.k8s.io/lws/api/leaderworkerset/v1"
)
