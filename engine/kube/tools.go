//go:build tools

// Keeps kube-apiserver's packages in this module's build list so that `go mod tidy` records every
// module it needs; engine/build.sh then runs `go build k8s.io/kubernetes/cmd/kube-apiserver`.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver/app"
