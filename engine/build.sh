#!/usr/bin/env bash
# The outside tools the engine tier runs, built once per version per machine from the Go module proxy.
#
#   engine/build.sh [TOOL]           build TOOL if missing; print the directory holding bin/TOOL
#   engine/build.sh --locate [TOOL]  print that directory if a usable TOOL exists, else print nothing
#
# TOOL is one of:
#   pulumi          the Pulumi CLI (the default): the engine, previews, updates, state, policy protocol
#   kube-apiserver  the Kubernetes API server the kubernetes test provider sends objects to
#   etcd            the store behind that API server
#   otelcol         an OpenTelemetry collector of the components our collector config uses, which
#                   tests/test_telemetry.py validates the rendered config with
#   kube-controller-manager, kube-scheduler
#                   the controllers and the scheduler of the local cluster (tests/engine/cluster.py)
#   kwok            the kubelets of that cluster's nodes (sigs.k8s.io/kwok)
#   lws             the LeaderWorkerSet controller manager that cluster runs (sigs.k8s.io/lws)
#   pulumi-resource-kubernetes
#                   the real pulumi-kubernetes provider the cluster tier runs the program with
#   prometheus-operator
#                   the operator that turns PodMonitors and ServiceMonitors into Prometheus's
#                   scrape configuration
#   prometheus      the Prometheus that scrapes the model servers, with Kubernetes service discovery only
#   keda, keda-adapter
#                   KEDA's operator (ScaledObjects into HPAs) and its metrics API server
#   epp             the Gateway API Inference Extension's endpoint picker, which a gateway asks over
#                   Envoy's external-processing API which model server replica gets a request
#   egctl           Envoy Gateway's command line, whose `egctl x translate` turns Gateway API and Envoy
#                   Gateway objects into the Envoy configuration the gateway's controller would send
#
# Each is built from a module of ours under engine/ (cli/, kube/, etcd/, otelcol/, kwok/, lws/,
# kubernetes/, prometheus-operator/, prometheus/, keda/, epp/, egctl/) whose go.mod and go.sum pin the release,
# into a cache outside the repository: $MODELPLANE_TOOLS_CACHE, by default
# ${XDG_CACHE_HOME:-~/.cache}/modelplane-infra, as <tool>-v<version>/bin/<tool>.
#
# A `pulumi` already on the PATH is used when its version is at least PULUMI_VERSION. The Python
# SDK pin (pyproject.toml) is older than the CLI: the proxy serves pkg/v3 at v3.274.x but not at the
# SDK's 3.272.0, and a newer CLI with an older SDK is what users run every day. `go install
# pkg@version` is refused for all three: pulumi's pkg/go.mod and k8s.io/kubernetes's go.mod have
# replace lines, and etcd's server module has no main package.
set -euo pipefail

PULUMI_VERSION=3.274.1
# engine/kube/go.mod: k8s.io/kubernetes v1.36.0, the release whose DRA API (resource.k8s.io/v1,
# consumable capacity on by default) the program's capacity claims need.
KUBE_VERSION=1.36.0
# engine/etcd/go.mod: the etcd client version k8s.io/kubernetes v1.36.0 requires (its go.mod).
ETCD_VERSION=3.6.8
# engine/otelcol/go.mod: the collector release of the pinned opentelemetry-collector chart's image
# (infra/serving/telemetry.py, IMAGE_TAG).
OTELCOL_VERSION=0.161.0
# engine/kwok/go.mod.
KWOK_VERSION=0.8.0
# engine/lws/go.mod: the release of the `lws` chart the serving stack installs (infra/serving/catalog.py).
LWS_VERSION=0.8.0
# engine/kubernetes/go.mod: the one version of provider/v4 the Go module proxy serves, a
# pseudo-version at the commit of tag v4.25.0. The SDK we lock (pulumi-kubernetes 4.34.2) names
# plugin version 4.34.2; tests/engine/harness.py installs this build under that name, and
# tests/engine/test_real_provider_schema.py holds every input the program sets to this schema.
K8S_PROVIDER_VERSION=4.25.0
K8S_PROVIDER_MODULE=github.com/pulumi/pulumi-kubernetes/provider/v4
K8S_PROVIDER_PSEUDO=v4.0.0-20260115033456-f47bc2d6f199
# engine/prometheus-operator/go.mod: kube-prometheus-stack 84.4.0's operator (its Chart.yaml appVersion).
PROMETHEUS_OPERATOR_VERSION=0.90.1
# engine/prometheus/go.mod: module v0.311.3 is Prometheus v3.11.3, the image tag kube-prometheus-stack
# 84.4.0 pins (values.yaml, prometheus.prometheusSpec.image.tag).
PROMETHEUS_VERSION=3.11.3
# engine/keda/go.mod: the release of the `keda` chart autoscaled stacks install (infra/serving/rows.py).
KEDA_VERSION=2.20.2
# The commit tag v2.20.2 names in kedacore/keda, which KEDA's Makefile stamps as GIT_COMMIT.
KEDA_COMMIT=68a5b5028f35b22d50597c69819ab32c4e92f21a
# engine/epp/go.mod: sigs.k8s.io/gateway-api-inference-extension, the last release whose module
# holds the full endpoint picker (cmd/epp with its prefix-cache and queue scorers).
EPP_VERSION=1.5.0
# engine/egctl/go.mod: the Envoy Gateway release whose chart the serving stack installs
# (infra/serving/rows.py: chart v1.8.4 of source tag v1.8.3).
EGCTL_VERSION=1.8.3

here=$(cd "$(dirname "$0")" && pwd)
cache=${MODELPLANE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/modelplane-infra}

locate=
if [ "${1:-}" = "--locate" ]; then
  locate=1
  shift
fi
tool=${1:-pulumi}
cgo= tags=

case "$tool" in
  pulumi)
    version=$PULUMI_VERSION module=cli package=github.com/pulumi/pulumi/pkg/v3/cmd/pulumi minutes=5
    # Without the -X the CLI reports no version, and Automation API refuses it.
    ldflags="-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION"
    ;;
  kube-apiserver)
    version=$KUBE_VERSION module=kube package=k8s.io/kubernetes/cmd/kube-apiserver minutes=10
    # What hack/lib/version.sh sets in a release build; the server reports it at /version.
    ldflags="-X k8s.io/component-base/version.gitVersion=v$KUBE_VERSION"
    ldflags+=" -X k8s.io/component-base/version.gitMajor=${KUBE_VERSION%%.*}"
    minor=${KUBE_VERSION#*.}
    ldflags+=" -X k8s.io/component-base/version.gitMinor=${minor%%.*}"
    ;;
  etcd)
    version=$ETCD_VERSION module=etcd package=. minutes=2 ldflags=
    ;;
  otelcol)
    version=$OTELCOL_VERSION module=otelcol package=. minutes=20 ldflags=
    ;;
  kube-controller-manager | kube-scheduler)
    version=$KUBE_VERSION module=kube package=k8s.io/kubernetes/cmd/$tool minutes=3
    ldflags="-X k8s.io/component-base/version.gitVersion=v$KUBE_VERSION"
    ;;
  kwok)
    version=$KWOK_VERSION module=kwok package=sigs.k8s.io/kwok/cmd/kwok minutes=3 ldflags=
    ;;
  lws)
    # The module's manager binary is its cmd package (its Makefile: `go build ... cmd/main.go`),
    # stamped with the release as its Makefile's LD_FLAGS stamp GitVersion.
    version=$LWS_VERSION module=lws package=sigs.k8s.io/lws/cmd minutes=3
    ldflags="-X sigs.k8s.io/lws/pkg/version.GitVersion=v$LWS_VERSION"
    ;;
  pulumi-resource-kubernetes)
    version=$K8S_PROVIDER_VERSION module=kubernetes package=./cmd/pulumi-resource-kubernetes minutes=15
    # What the provider's Makefile sets (VERSION_PATH in pulumi/pulumi-kubernetes's Makefile).
    ldflags="-X $K8S_PROVIDER_MODULE/pkg/version.Version=$K8S_PROVIDER_VERSION"
    ;;
  prometheus-operator)
    version=$PROMETHEUS_OPERATOR_VERSION module=prometheus-operator minutes=4 cgo=0
    package=github.com/prometheus-operator/prometheus-operator/cmd/operator
    # Its Makefile's GO_BUILD_RECIPE: CGO_ENABLED=0, the release from its VERSION file stamped into
    # prometheus/common's version package (GO_BUILD_LDFLAGS), which --short-version prints.
    ldflags="-X github.com/prometheus/common/version.Version=$PROMETHEUS_OPERATOR_VERSION"
    ;;
  prometheus)
    version=$PROMETHEUS_VERSION module=prometheus package=github.com/prometheus/prometheus/cmd/prometheus
    minutes=8 cgo=0
    # .promu.yml's build tags are netgo and builtinassets; we keep netgo and drop builtinassets,
    # which embeds the web UI from a file only `make assets` (npm) writes (web/ui/assets_embed.go).
    # Without it the UI is read from ./web/ui/static at run time and is absent; the HTTP API, which
    # is what the tests read, is all there. remove_all_sd with enable_kubernetes_sd keeps only the
    # Kubernetes service discovery prometheus-operator writes for PodMonitors and ServiceMonitors,
    # plus the file and HTTP ones that are always built (README.md at v0.311.3, "Service discovery
    # plugins"; the build constraints of plugins/plugin_*.go and plugins/minimum.go).
    tags=netgo,remove_all_sd,enable_kubernetes_sd
    # .promu.yml's ldflags stamp the release from its VERSION file; --version prints it.
    ldflags="-X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION"
    ;;
  keda | keda-adapter)
    version=$KEDA_VERSION module=keda minutes=10 cgo=0
    # KEDA's Makefile: bin/keda from cmd/operator, bin/keda-adapter from cmd/adapter, CGO_ENABLED=0,
    # and GO_LDFLAGS stamping VERSION (the tag without its v, release-build.yml) and GIT_COMMIT.
    package=github.com/kedacore/keda/v2/cmd/operator
    if [ "$tool" = keda-adapter ]; then package=github.com/kedacore/keda/v2/cmd/adapter; fi
    ldflags="-X github.com/kedacore/keda/v2/version.Version=$KEDA_VERSION"
    ldflags+=" -X github.com/kedacore/keda/v2/version.GitCommit=$KEDA_COMMIT"
    ;;
  epp)
    version=$EPP_VERSION module=epp package=sigs.k8s.io/gateway-api-inference-extension/cmd/epp minutes=5
    # Its Dockerfile's `go build -ldflags`: the build ref (the release tag) is stamped into the
    # version package, which the picker logs at start and exports as a metric.
    ldflags="-X sigs.k8s.io/gateway-api-inference-extension/version.BuildRef=v$EPP_VERSION"
    ;;
  egctl)
    version=$EGCTL_VERSION module=egctl package=github.com/envoyproxy/gateway/cmd/egctl minutes=4 cgo=0
    # Its Makefile's build (tools/make/golang.mk): CGO_ENABLED=0, the release stamped into the
    # version package (GO_LDFLAGS, VERSION_PACKAGE).
    ldflags="-X github.com/envoyproxy/gateway/internal/cmd/version.envoyGatewayVersion=v$EGCTL_VERSION"
    ;;
  *)
    echo "engine/build.sh: unknown tool '$tool' (pulumi, kube-apiserver, etcd, otelcol, kube-controller-manager, kube-scheduler, kwok, lws, pulumi-resource-kubernetes, prometheus-operator, prometheus, keda, keda-adapter, epp or egctl)" >&2
    exit 2
    ;;
esac
root="$cache/$tool-v$version"

at_least() { # at_least HAVE WANT: HAVE >= WANT as dotted versions
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]
}

on_path() {
  local cli have
  [ "$tool" = pulumi ] || return 1
  cli=$(command -v pulumi 2>/dev/null) || return 1
  have=$("$cli" version 2>/dev/null | sed 's/^v//') || return 1
  [ -n "$have" ] && at_least "$have" "$PULUMI_VERSION" || return 1
  dirname "$(dirname "$(readlink -f "$cli")")"
}

built() {
  local bin="$root/bin/$tool" said
  [ -x "$bin" ] || return 1
  # The whole answer first: `| grep -q` would stop reading early, and under pipefail the tool's
  # SIGPIPE would fail the check at random.
  case "$tool" in
    pulumi) said=$("$bin" version 2>/dev/null) && [ "$said" = "v$PULUMI_VERSION" ] ;;
    kube-apiserver) said=$("$bin" --version 2>/dev/null) && [ "$said" = "Kubernetes v$KUBE_VERSION" ] ;;
    etcd) said=$("$bin" --version 2>/dev/null) && [ "$(head -n 1 <<<"$said")" = "etcd Version: $ETCD_VERSION" ] ;;
    otelcol) said=$("$bin" --version 2>/dev/null) && [ "$said" = "otelcol version $OTELCOL_VERSION" ] ;;
    kube-controller-manager | kube-scheduler) said=$("$bin" --version 2>/dev/null) && [ "$said" = "Kubernetes v$KUBE_VERSION" ] ;;
    kwok) said=$("$bin" --version 2>/dev/null) && [ "${said%% go*}" = "kwok version v$KWOK_VERSION" ] ;;
    lws) said=$("$bin" --version 2>/dev/null) && [ "$(head -n 1 <<<"$said")" = "Version: v$LWS_VERSION" ] ;;
    # The provider has no version flag; the build stamps the module version it was built from.
    pulumi-resource-kubernetes) [ "$(cat "$bin.version" 2>/dev/null)" = "$K8S_PROVIDER_PSEUDO" ] ;;
    prometheus-operator) said=$("$bin" --short-version 2>/dev/null) && [ "$said" = "$PROMETHEUS_OPERATOR_VERSION" ] ;;
    # "prometheus, version 3.11.3 (branch: , revision: unknown)": no revision is stamped.
    prometheus) said=$("$bin" --version 2>/dev/null) && said=$(head -n 1 <<<"$said") && [ "${said%% (*}" = "prometheus, version $PROMETHEUS_VERSION" ] ;;
    # KEDA's binaries print their version only once connected to a cluster; the build stamps the
    # KEDA module version the binary's own build information names (`go version -m`).
    keda | keda-adapter) [ "$(cat "$bin.version" 2>/dev/null)" = "v$KEDA_VERSION" ] ;;
    # The picker has no version flag either; the same build information check.
    epp) [ "$(cat "$bin.version" 2>/dev/null)" = "v$EPP_VERSION" ] ;;
    egctl) [ "$(cat "$bin.version" 2>/dev/null)" = "v$EGCTL_VERSION" ] ;;
  esac
}

if dir=$(on_path); then
  echo "$dir"
  exit 0
fi
if built; then
  echo "$root"
  exit 0
fi
[ -n "$locate" ] && exit 0

command -v go >/dev/null || { echo "engine/build.sh: building $tool needs Go 1.26.6 or newer (pulumi pkg/v3 v3.274.1 says so in its go.mod)" >&2; exit 1; }
mkdir -p "$root/bin"
echo "engine/build.sh: building $tool v$version into $root (about $minutes minutes on two cores, once)" >&2
start=$SECONDS
if [ "$tool" = pulumi-resource-kubernetes ]; then
  # The provider's own module, made buildable: a writable copy of the proxy's zip (checked against
  # engine/kubernetes/go.sum), without its replace of sdk/v4 by ../sdk, with the checksums of
  # engine/kubernetes/go.sum, and with the two embedded files its `go generate` writes from the
  # committed JSON (cmd/pulumi-resource-kubernetes/generate.go).
  work=$(mktemp -d)
  trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
  (
    cd "$here/$module"
    src=$(go mod download -json "$K8S_PROVIDER_MODULE@$K8S_PROVIDER_PSEUDO" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
    cp -r "$src/." "$work/"
    chmod -R u+w "$work"
    cat go.sum >>"$work/go.sum"
    cd "$work"
    go mod edit -dropreplace=github.com/pulumi/pulumi-kubernetes/sdk/v4
    (cd cmd/pulumi-resource-kubernetes && VERSION=$K8S_PROVIDER_VERSION go run generate.go)
    CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "-s -w $ldflags" -o "$root/bin/$tool.tmp" "$package"
  )
  echo "$K8S_PROVIDER_PSEUDO" >"$root/bin/$tool.version"
else
  (
    cd "$here/$module"
    # -mod=readonly: the module graph is the committed go.mod/go.sum, never re-resolved here.
    env ${cgo:+CGO_ENABLED=$cgo} go build -mod=readonly -trimpath ${tags:+-tags "$tags"} -ldflags "-s -w $ldflags" \
      -o "$root/bin/$tool.tmp" "$package"
  )
  # The build information names the module of the main package on its `mod` line.
  case "$module" in
    keda) main_module=github.com/kedacore/keda/v2 ;;
    epp) main_module=sigs.k8s.io/gateway-api-inference-extension ;;
    egctl) main_module=github.com/envoyproxy/gateway ;;
    *) main_module= ;;
  esac
  if [ -n "$main_module" ]; then
    go version -m "$root/bin/$tool.tmp" | awk -v m="$main_module" '$1 == "mod" && $2 == m { print $3 }' \
      >"$root/bin/$tool.version"
  fi
fi
mv "$root/bin/$tool.tmp" "$root/bin/$tool"
echo "engine/build.sh: built $tool in $((SECONDS - start)) s" >&2
built || { echo "engine/build.sh: the built $tool does not report v$version" >&2; exit 1; }
echo "$root"
