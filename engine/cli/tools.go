//go:build tools

// Keeps the CLI's main package in this module's build list so that `go mod tidy` records every
// module it needs; engine/build.sh then runs `go build github.com/pulumi/pulumi/pkg/v3/cmd/pulumi`.
package tools

import _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
