#!/bin/sh
# Rebuild tests/support/data/wire-vectors/karmada-*/ with Karmada's own generated estimator types
# (or write them under the directory given as the first argument).
# Needs Go and the Go module proxy; not part of `make test`. Binaries go to a temporary
# directory, never into the repository. Karmada builds with this tag since k8s.io/api v0.35
# moved the ProtoMessage methods its gRPC messages rely on behind it.
set -eu
cd "$(dirname "$0")"
export GONOSUMDB=github.com/karmada-io/karmada
out=${1:-../../tests/support/data/wire-vectors}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
tags=kubernetes_protomessage_one_more_release
for version in v1.16.0 v1.17.1; do
	go build -modfile="go.$version.mod" -tags "$tags" -o "$bin/gogo-$version" ./gogo
	rm -rf "$out/karmada-$version"
	"$bin/gogo-$version" -karmada "$version" -out "$out/karmada-$version"
done
go build -tags "$tags" -o "$bin/protov2" ./protov2
rm -rf "$out/karmada-v1.18.2" "$out/karmada-v1.19-form"
"$bin/protov2" -karmada v1.18.2 -fields old+bytes -out "$out/karmada-v1.18.2"
"$bin/protov2" -karmada v1.18.2 -fields bytes -out "$out/karmada-v1.19-form"
