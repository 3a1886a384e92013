module github.com/casty-go/casty/cmd

go 1.26

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	go.uber.org/goleak v1.3.0
)
