//go:build tools

// Keeps the endpoint picker's main package in this module's build list so that `go mod tidy`
// records every module it needs; engine/build.sh then runs `go build` of it.
package tools

import (
	_ "sigs.k8s.io/gateway-api-inference-extension/cmd/epp"
)
