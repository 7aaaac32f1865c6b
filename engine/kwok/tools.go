//go:build tools

// Keeps kwok's main package in this module's build list so that `go mod tidy` records every
// module it needs; engine/build.sh then runs `go build sigs.k8s.io/kwok/cmd/kwok`.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
