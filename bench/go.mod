module github.com/casty-go/casty/bench

go 1.26
