module github.com/casty-go/casty/replica

go 1.26

require github.com/vmihailenco/msgpack/v5 v5.4.1 // indirect

require github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/casty-go/casty/hlc v0.1.0
	github.com/casty-go/casty/internal v0.1.0
	github.com/casty-go/casty/pager v0.1.0
)

replace github.com/casty-go/casty/hlc => ../hlc

replace github.com/casty-go/casty/pager => ../pager

replace github.com/casty-go/casty/internal => ../internal
