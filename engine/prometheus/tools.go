//go:build tools

// Keeps Prometheus's main package in this module's build list so that `go mod tidy` records every
// module it needs; engine/build.sh then runs `go build github.com/prometheus/prometheus/cmd/prometheus`
// with the build tags that leave out the service discovery it does not use.
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
