//go:build tools

// Keeps the LeaderWorkerSet controller manager's main package in this module's build list so that
// `go mod tidy` records every module it needs; engine/build.sh then runs `go build sigs.k8s.io/lws/cmd`.
package tools

import _ "sigs.k8s.io/lws/cmd"
