module github.com/casty-go/casty/collections

go 1.26.0

require (
	github.com/casty-go/casty/casty v0.1.0
	github.com/casty-go/casty/internal v0.1.0
	github.com/casty-go/casty/ring v0.1.0
	github.com/casty-go/casty/wire v0.1.0
	github.com/vmihailenco/msgpack/v5 v5.4.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/casty-go/casty/actor v0.1.0 // indirect
	github.com/casty-go/casty/gossip v0.1.0 // indirect
	github.com/casty-go/casty/hlc v0.1.0 // indirect
	github.com/casty-go/casty/mux v0.1.0 // indirect
	github.com/casty-go/casty/pager v0.1.0 // indirect
	github.com/casty-go/casty/replica v0.1.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/hashicorp/yamux v0.1.2 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

// Siblings resolve to this working tree when the module is built on its own
// (GOWORK=off). Consumers ignore these lines: they get the required versions.
replace (
	github.com/casty-go/casty/actor => ../actor
	github.com/casty-go/casty/arrowpager => ../arrowpager
	github.com/casty-go/casty/casty => ../casty
	github.com/casty-go/casty/gossip => ../gossip
	github.com/casty-go/casty/hlc => ../hlc
	github.com/casty-go/casty/internal => ../internal
	github.com/casty-go/casty/mux => ../mux
	github.com/casty-go/casty/pager => ../pager
	github.com/casty-go/casty/replica => ../replica
	github.com/casty-go/casty/ring => ../ring
	github.com/casty-go/casty/wire => ../wire
)
