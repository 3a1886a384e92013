module github.com/casty-go/casty/actor

go 1.26

require (
	github.com/casty-go/casty/wire v0.1.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/casty-go/casty/internal v0.1.0
	github.com/vmihailenco/msgpack/v5 v5.4.1 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
)

// Siblings resolve to this working tree when the module is built on its own
// (GOWORK=off). Consumers ignore these lines: they get the required versions.
replace github.com/casty-go/casty/wire => ../wire

replace github.com/casty-go/casty/internal => ../internal
