//go:build tools

// Keeps prometheus-operator's main package in this module's build list so that `go mod tidy`
// records every module it needs; engine/build.sh then runs
// `go build github.com/prometheus-operator/prometheus-operator/cmd/operator`.
package tools

import _ "github.com/prometheus-operator/prometheus-operator/cmd/operator"
