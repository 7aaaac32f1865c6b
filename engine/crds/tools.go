//go:build tools

// Keeps sigs.k8s.io/gateway-api in this module's build list so that `go mod tidy` records its hash;
// tests/engine/kube.py reads its CRDs with `go mod download -json sigs.k8s.io/gateway-api`.
package tools

import _ "sigs.k8s.io/gateway-api/apis/v1"
