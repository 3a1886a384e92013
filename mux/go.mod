module github.com/casty-go/casty/mux

go 1.26

require (
	github.com/casty-go/casty/internal v0.1.0
	github.com/hashicorp/yamux v0.1.2
	github.com/klauspost/compress v1.20.4
	go.uber.org/goleak v1.3.0
)

replace github.com/casty-go/casty/internal => ../internal
