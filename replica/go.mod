module github.com/casty-go/casty/replica

go 1.26

require github.com/vmihailenco/msgpack/v5 v5.4.1

require github.com/anishathalye/porcupine v1.3.1 // indirect
