module github.com/casty-go/casty/bench

go 1.26

require github.com/hashicorp/yamux v0.1.2 // indirect
