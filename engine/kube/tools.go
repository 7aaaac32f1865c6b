//go:build tools

// Keeps the packages of kube-apiserver, kube-controller-manager and kube-scheduler in this
// module's build list so that `go mod tidy` records every module they need; engine/build.sh then
// runs `go build k8s.io/kubernetes/cmd/<tool>`.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
)
