module github.com/casty-go/casty/examples

go 1.26.0

require (
	github.com/casty-go/casty/casty v0.1.0
	github.com/prometheus/client_golang v1.25.0
	go.opentelemetry.io/otel v1.47.0
	go.opentelemetry.io/otel/exporters/prometheus v0.69.0
	go.opentelemetry.io/otel/exporters/stdout/stdouttrace v1.47.0
	go.opentelemetry.io/otel/sdk v1.47.0
	go.opentelemetry.io/otel/sdk/metric v1.47.0
	go.opentelemetry.io/otel/trace v1.47.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/goccy/go-json v0.10.6 // indirect
	github.com/google/flatbuffers v25.12.19+incompatible // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pierrec/lz4/v4 v4.1.29 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/otlptranslator v1.0.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
	golang.org/x/exp v0.0.0-20260112195511-716be5621a96 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

require (
	github.com/apache/arrow-go/v18 v18.8.0
	github.com/casty-go/casty/actor v0.1.0 // indirect
	github.com/casty-go/casty/arrowpager v0.1.0
	github.com/casty-go/casty/collections v0.1.0
	github.com/casty-go/casty/gossip v0.1.0 // indirect
	github.com/casty-go/casty/hlc v0.1.0 // indirect
	github.com/casty-go/casty/internal v0.1.0 // indirect
	github.com/casty-go/casty/mux v0.1.0 // indirect
	github.com/casty-go/casty/pager v0.1.0 // indirect
	github.com/casty-go/casty/replica v0.1.0 // indirect
	github.com/casty-go/casty/ring v0.1.0 // indirect
	github.com/casty-go/casty/wire v0.1.0 // indirect
	github.com/hashicorp/yamux v0.1.2 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/vmihailenco/msgpack/v5 v5.4.1 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

// Siblings resolve to this working tree when the module is built on its own
// (GOWORK=off). Consumers ignore these lines: they get the required versions.
replace (
	github.com/casty-go/casty/actor => ../actor
	github.com/casty-go/casty/casty => ../casty
	github.com/casty-go/casty/gossip => ../gossip
	github.com/casty-go/casty/mux => ../mux
	github.com/casty-go/casty/pager => ../pager
	github.com/casty-go/casty/ring => ../ring
	github.com/casty-go/casty/wire => ../wire
)

replace github.com/casty-go/casty/hlc => ../hlc

replace github.com/casty-go/casty/internal => ../internal

replace github.com/casty-go/casty/replica => ../replica

replace github.com/casty-go/casty/arrowpager => ../arrowpager

replace github.com/casty-go/casty/collections => ../collections
