// Package examples holds Casty's numbered, runnable walkthroughs, one main
// package per directory; run one with `go run ./examples/01_hello_world`
// from the repository root. The test in this directory runs each of them
// and checks what it prints.
package examples
