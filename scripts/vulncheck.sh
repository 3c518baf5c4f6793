#!/usr/bin/env bash
# govulncheck, offline: this network reaches only the Go module proxy, not
# vuln.go.dev, so the vulnerability database is built from the OSV files
# of the golang.org/x/vulndb module (a version served by the proxy) with
# its own indexdb command, then handed to govulncheck as a file:// DB.
#
# The scan runs under the toolchain the project builds releases with
# (GOTOOLCHAIN, default go1.26.10: go1.26.8 has standard-library
# vulnerabilities fixed in .9 and .10).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=${GOTOOLCHAIN_RELEASE:-go1.26.10}
vulndb_version=v0.0.0-20261105234957-e22db6528018
govulncheck_version=v1.9.0
db=${VULNDB_DIR:-$(mktemp -d)/vulndb}

if [ ! -f "$db/index/db.json" ]; then
	src=$(cd / && go mod download -json "golang.org/x/vulndb@$vulndb_version" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
	(cd / && go run "golang.org/x/vulndb/cmd/indexdb@$vulndb_version" -vulns "$src/data/osv" -out "$db")
fi
go version
go run "golang.org/x/vuln/cmd/govulncheck@$govulncheck_version" -db "file://$db" ./...
