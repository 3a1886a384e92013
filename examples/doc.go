// Package examples holds Casty's numbered, runnable walkthroughs, one main
// package per directory; run one with `go run ./examples/01_hello_world`
// from the repository root. A test in this directory runs each of them
// and checks what it prints (examples_test.go); another compiles and vets
// the Go code blocks of the repository's Markdown files and package docs
// (docblocks_test.go).
package examples
