#!/bin/sh
# Regenerates the Go code of the .proto files of package grpc and of
# examples/payments-grpc. The generated code is committed: building and
# testing never need protoc. Tools (Debian, from the repository root):
#   apt-get install -y protobuf-compiler     # protoc 3.21 and google/protobuf/*.proto
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
set -eu
cd "$(dirname "$0")/.."
PATH="$(go env GOPATH)/bin:$PATH"
protoc -I grpc/internal/storedpb --go_out=paths=source_relative:grpc/internal/storedpb grpc/internal/storedpb/stored.proto
protoc -I grpc/internal/testpb -I /usr/include \
	--go_out=paths=source_relative:grpc/internal/testpb \
	--go-grpc_out=paths=source_relative:grpc/internal/testpb grpc/internal/testpb/ledger.proto
protoc -I examples/payments-grpc/paymentspb \
	--go_out=paths=source_relative:examples/payments-grpc/paymentspb \
	--go-grpc_out=paths=source_relative:examples/payments-grpc/paymentspb examples/payments-grpc/paymentspb/payments.proto
