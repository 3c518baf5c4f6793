// Package apicheck holds the test that keeps the module's exported API
// on purpose: it lists every exported identifier of every importable
// package (consts, vars, funcs, types with their exported fields and
// methods) in api.txt, and fails when the list and the code differ, so a
// change of the surface shows in review; and it fails when an exported
// identifier has no doc comment. Regenerate the file with
//
//	go test ./internal/apicheck -update
package apicheck
