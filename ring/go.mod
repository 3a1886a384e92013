module github.com/casty-go/casty/ring

go 1.26.0

require (
	golang.org/x/crypto v0.59.0
	pgregory.net/rapid v1.3.0
)

require golang.org/x/sys v0.50.0 // indirect
