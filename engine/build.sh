#!/usr/bin/env bash
# The Pulumi CLI the engine tests run, built once per version per machine from the Go module proxy.
#
#   engine/build.sh           build it if missing; print the directory holding bin/pulumi
#   engine/build.sh --locate  print that directory if a usable CLI exists, else print nothing
#
# A `pulumi` already on the PATH is used when its version is at least PULUMI_VERSION. Otherwise
# the CLI is built from engine/cli (a module of ours requiring pulumi/pulumi's pkg/v3 and sdk/v3
# at PULUMI_VERSION; `go install pkg@version` is refused because pkg/go.mod has replace lines)
# into a cache outside the repository: $MODELPLANE_TOOLS_CACHE, by default
# ${XDG_CACHE_HOME:-~/.cache}/modelplane-infra. The Python SDK pin (pyproject.toml) is older than
# the CLI: the proxy serves pkg/v3 at v3.274.x but not at the SDK's 3.272.0, and a newer CLI with
# an older SDK is what users run every day.
set -euo pipefail

PULUMI_VERSION=3.274.1
here=$(cd "$(dirname "$0")" && pwd)
cache=${MODELPLANE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/modelplane-infra}
root="$cache/pulumi-v$PULUMI_VERSION"

at_least() { # at_least HAVE WANT: HAVE >= WANT as dotted versions
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]
}

on_path() {
  local cli have
  cli=$(command -v pulumi 2>/dev/null) || return 1
  have=$("$cli" version 2>/dev/null | sed 's/^v//') || return 1
  [ -n "$have" ] && at_least "$have" "$PULUMI_VERSION" || return 1
  dirname "$(dirname "$(readlink -f "$cli")")"
}

built() {
  [ -x "$root/bin/pulumi" ] && [ "$("$root/bin/pulumi" version 2>/dev/null)" = "v$PULUMI_VERSION" ]
}

if dir=$(on_path); then
  echo "$dir"
  exit 0
fi
if built; then
  echo "$root"
  exit 0
fi
[ "${1:-}" = "--locate" ] && exit 0

command -v go >/dev/null || { echo "engine/build.sh: building the Pulumi CLI needs Go 1.26.6 or newer (pulumi pkg/v3 v3.274.1 says so in its go.mod)" >&2; exit 1; }
mkdir -p "$root/bin"
echo "engine/build.sh: building the Pulumi CLI v$PULUMI_VERSION into $root (about 5 minutes on two idle cores, once)" >&2
start=$SECONDS
(
  cd "$here/cli"
  # -mod=readonly: the module graph is the committed go.mod/go.sum, never re-resolved here.
  # Without the -X the CLI reports no version, and Automation API refuses it.
  go build -mod=readonly -trimpath \
    -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION" \
    -o "$root/bin/pulumi.tmp" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
)
mv "$root/bin/pulumi.tmp" "$root/bin/pulumi"
echo "engine/build.sh: built in $((SECONDS - start)) s" >&2
built || { echo "engine/build.sh: the built CLI does not report v$PULUMI_VERSION" >&2; exit 1; }
echo "$root"
