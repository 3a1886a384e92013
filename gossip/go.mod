module github.com/casty-go/casty/gossip

go 1.26.0

require (
	github.com/casty-go/casty/mux v0.1.0
	go.uber.org/goleak v1.3.0
	pgregory.net/rapid v1.3.0
)

require (
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

require (
	github.com/casty-go/casty/internal v0.1.0
	github.com/hashicorp/yamux v0.1.2 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
)

// Siblings resolve to this working tree when the module is built on its own
// (GOWORK=off). Consumers ignore these lines: they get the required versions.
replace github.com/casty-go/casty/mux => ../mux

replace github.com/casty-go/casty/internal => ../internal
