#!/usr/bin/env bash
# Builds the Lambda functions of template.yaml for provided.al2023 on arm64:
# a static `bootstrap` per function (CGO_ENABLED=0, -tags lambda.norpc) and
# its deployment zip.
#
#   scripts/build-lambda.sh            # → dist/payments/bootstrap, dist/payments.zip,
#                                      #   dist/sweeper/bootstrap,  dist/sweeper.zip
#   GOARCH=amd64 scripts/build-lambda.sh   # for an x86_64 deployment
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${GOARCH:-arm64}
# Release binaries are built with the patched toolchain (see scripts/vulncheck.sh).
export GOTOOLCHAIN=${GOTOOLCHAIN_RELEASE:-go1.26.10}
declare -A functions=(
	[payments]=./lambda/example/payments-lambda
	[sweeper]=./cmd/sweeper
)
for name in "${!functions[@]}"; do
	mkdir -p "dist/$name"
	GOOS=linux GOARCH=$arch CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -ldflags='-s -w' \
		-o "dist/$name/bootstrap" "${functions[$name]}"
	go run ./internal/tools/zipbootstrap -in "dist/$name/bootstrap" -out "dist/$name.zip"
	echo "dist/$name.zip ($(du -h "dist/$name.zip" | cut -f1), linux/$arch)"
done
