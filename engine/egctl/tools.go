//go:build tools

// Keeps egctl's main package in this module's build list so that `go mod tidy` records every
// module it needs; engine/build.sh then runs `go build` of it.
package tools

import (
	_ "github.com/envoyproxy/gateway/cmd/egctl"
)
