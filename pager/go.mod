module github.com/casty-go/casty/pager

go 1.26

require (
	github.com/vmihailenco/msgpack/v5 v5.4.1
	pgregory.net/rapid v1.3.0
)

require github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
