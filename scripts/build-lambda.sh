#!/usr/bin/env bash
# Builds the Lambda functions of template.yaml for provided.al2023: a static
# `bootstrap` per function (CGO_ENABLED=0, -tags lambda.norpc) in the
# directory the template's CodeUri names, and a deployment zip beside it.
#
#   scripts/build-lambda.sh [arm64|x86_64]   # default arm64 (the template's default)
#     → dist/payments/bootstrap, dist/payments.zip,
#       dist/sweeper/bootstrap,  dist/sweeper.zip
#
# The argument is the template's Architecture parameter value; deploy with
# the same one (sam deploy --parameter-overrides Architecture=x86_64). Go's
# names are accepted too (amd64 for x86_64), and so is GOARCH when no
# argument is given.
set -euo pipefail
cd "$(dirname "$0")/.."
requested=${1:-${GOARCH:-arm64}}
case $requested in
arm64) architecture=arm64 goarch=arm64 ;;
x86_64 | amd64) architecture=x86_64 goarch=amd64 ;;
*)
	echo "build-lambda.sh: architecture \"$requested\": want arm64 or x86_64 (Lambda supports no other)" >&2
	exit 2
	;;
esac
# Release binaries are built with the patched toolchain (see scripts/vulncheck.sh).
export GOTOOLCHAIN=${GOTOOLCHAIN_RELEASE:-go1.26.10}
declare -A functions=(
	[payments]=./lambda/example/payments-lambda
	[sweeper]=./cmd/sweeper
)
for name in "${!functions[@]}"; do
	mkdir -p "dist/$name"
	GOOS=linux GOARCH=$goarch CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -ldflags='-s -w' \
		-o "dist/$name/bootstrap" "${functions[$name]}"
	go run ./internal/tools/zipbootstrap -in "dist/$name/bootstrap" -out "dist/$name.zip"
	echo "dist/$name.zip ($(du -h "dist/$name.zip" | cut -f1), linux/$goarch)"
done
echo "built for Architecture=$architecture: deploy with the template's Architecture parameter set to $architecture"
