//go:build tools

// Keeps the provider's main package in this module's build list so that `go mod tidy` records
// the checksums of every module it needs (engine/build.sh builds from a writable copy of it).
package tools

import _ "github.com/pulumi/pulumi-kubernetes/provider/v4/cmd/pulumi-resource-kubernetes"
