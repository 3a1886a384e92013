module github.com/casty-go/casty/mux

go 1.26.0

require (
	github.com/casty-go/casty/internal v0.1.0
	github.com/hashicorp/yamux v0.1.2
	github.com/klauspost/compress v1.20.4
	go.uber.org/goleak v1.3.0
)

require (
	golang.org/x/crypto v0.59.0
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/casty-go/casty/internal => ../internal
