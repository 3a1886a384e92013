module github.com/casty-go/casty/bench/peers

go 1.26.0

// The casty modules resolve to this working tree.
replace (
	github.com/casty-go/casty/actor => ../../actor
	github.com/casty-go/casty/arrowpager => ../../arrowpager
	github.com/casty-go/casty/casty => ../../casty
	github.com/casty-go/casty/collections => ../../collections
	github.com/casty-go/casty/gossip => ../../gossip
	github.com/casty-go/casty/hlc => ../../hlc
	github.com/casty-go/casty/internal => ../../internal
	github.com/casty-go/casty/mux => ../../mux
	github.com/casty-go/casty/pager => ../../pager
	github.com/casty-go/casty/replica => ../../replica
	github.com/casty-go/casty/ring => ../../ring
	github.com/casty-go/casty/wire => ../../wire
)

require (
	github.com/asynkron/protoactor-go v0.0.0-20240822202345-3c0e61ca19c9
	github.com/casty-go/casty/casty v0.1.0
	google.golang.org/protobuf v1.33.0
)

require (
	github.com/Workiva/go-datastructures v1.1.3 // indirect
	github.com/asynkron/gofun v0.0.0-20220329210725-34fed760f4c2 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/casty-go/casty/actor v0.1.0 // indirect
	github.com/casty-go/casty/gossip v0.1.0 // indirect
	github.com/casty-go/casty/hlc v0.1.0 // indirect
	github.com/casty-go/casty/internal v0.1.0 // indirect
	github.com/casty-go/casty/mux v0.1.0 // indirect
	github.com/casty-go/casty/pager v0.1.0 // indirect
	github.com/casty-go/casty/replica v0.1.0 // indirect
	github.com/casty-go/casty/ring v0.1.0 // indirect
	github.com/casty-go/casty/wire v0.1.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/emirpasic/gods v1.18.1 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/golang/protobuf v1.5.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/yamux v0.1.2 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/lithammer/shortuuid/v4 v4.0.0 // indirect
	github.com/lmittmann/tint v1.0.3 // indirect
	github.com/matttproud/golang_protobuf_extensions v1.0.4 // indirect
	github.com/orcaman/concurrent-map v1.0.0 // indirect
	github.com/prometheus/client_golang v1.17.0 // indirect
	github.com/prometheus/client_model v0.5.0 // indirect
	github.com/prometheus/common v0.44.0 // indirect
	github.com/prometheus/procfs v0.11.1 // indirect
	github.com/twmb/murmur3 v1.1.8 // indirect
	github.com/vmihailenco/msgpack/v5 v5.4.1 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/exporters/prometheus v0.44.0 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
	go.opentelemetry.io/otel/sdk v1.47.0 // indirect
	go.opentelemetry.io/otel/sdk/metric v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/exp v0.0.0-20260112195511-716be5621a96 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20231002182017-d307bd883b97 // indirect
	google.golang.org/grpc v1.60.1 // indirect
)
