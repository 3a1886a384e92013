module github.com/casty-go/casty/casty

go 1.26

require go.uber.org/goleak v1.3.0 // indirect
