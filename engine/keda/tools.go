//go:build tools

// Keeps KEDA's operator and metrics API server main packages in this module's build list so that
// `go mod tidy` records every module they need; engine/build.sh then runs `go build` of each.
package tools

import (
	_ "github.com/kedacore/keda/v2/cmd/adapter"
	_ "github.com/kedacore/keda/v2/cmd/operator"
)
