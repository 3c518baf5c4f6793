// Package readmetest holds the test that keeps the module's README files
// true: it builds every Go block of every README.md in the module and of
// every page of docs/, so that a block that stops compiling, or drifts
// from the file it is quoted from, fails go test ./... .
//
// A block is checked according to the HTML comment on the line just
// before its opening fence (blank lines between are allowed):
//
//	<!-- readme: from examples/quickstart/main.go -->
//		the block is quoted from that file (a path from the module root):
//		its text must appear in the file, character for character;
//	<!-- readme: harness NAME -->
//		the block is a fragment, compiled inside the harness
//		testdata/harness/NAME.go of this package, at its "// README block"
//		line; the harness declares what the fragment uses and uses what
//		it declares;
//	no comment, and the block begins with "package "
//		the block is a complete file, compiled as its own package.
//
// Any other block fails the test: a fragment must say how it is checked.
// Blocks of other languages are not checked.
package readmetest
