package casty

import (
	"context"
	"net"
	"time"

	"github.com/casty-go/casty/hlc"
)

// Network carries a member's or lite client's connections instead of TCP:
// an in-process network (casty/castytest runs its clusters on one), a
// proxy, a tunnel, a transport with its own encryption. Listen and Dial
// are called concurrently; the connections they return must be reliable,
// ordered byte streams, as TCP's are. Addresses keep TCP's host:port form
// (Start and Connect check seeds for it, ErrInvalidSeed), but the host
// need not resolve: only the Network interprets it.
type Network interface {
	// Listen returns the listener the node serves on. A member (Start)
	// passes the address it was given, which the Network uses as it
	// sees fit; a lite client (Connect) passes "", and the Network picks
	// the client's address. The node advertises the listener's
	// Addr().String() unless Advertise says otherwise.
	Listen(addr string) (net.Listener, error)
	// Dial opens a connection to addr, an address another node
	// advertised or a seed. It must honour ctx, which carries
	// Config.Transport.ConnectTimeout.
	Dial(ctx context.Context, addr string) (net.Conn, error)
}

// WithNetwork makes n carry every connection of the node: the listener it
// serves on and every dial it makes (to seeds, to members, to lite
// clients, and a lite client's to members), in place of TCP. The listen
// address is used as given: no UDP probe for the interface that reaches
// a seed, no interface lookup (for a lite client, n picks it: see
// Network.Listen). Everything above the connection is unchanged: the mux
// handshake, WithTLS (TLS runs over whatever net.Conn n returns) and the
// secrets of WithClusterSecret, WithClientSecret and WithOperatorSecret.
// Nil keeps TCP.
//
// It is an Option rather than a Config field because Config is plain
// data (durations and sizes that can be compared, printed and loaded from
// a file) and n is behaviour, as the logger of WithLogger is. It is a
// cluster option: Local, which opens no connection, refuses it as it
// refuses Seeds.
func WithNetwork(n Network) Option { return func(o *systemOptions) { o.network = n } }

// WithClock sets the clock that stamps the node's replicated state: the
// physical clock of its hybrid logical clock (hlc.Config.Physical), read
// in milliseconds. It stamps every commit, prepare and promise of
// replication, and so every age measured against those stamps (when a
// deleted actor's tombstone has outlived
// Config.Replication.StateTombstoneTTL and may be pruned, which old copies
// a member re-entering a range drops) and the
// Config.Replication.MaxClockDrift check by which a member refuses
// requests stamped further ahead of its clock.
// Timers, timeouts and the membership's failure detection keep the
// process's own clock. Nil, the default, is time.Now.
//
// A clock running ahead of the others' by more than MaxClockDrift keeps
// the member from replicating (its peers refuse its stamps); within it,
// the HLC orders the member's stamps after every stamp it has seen. A
// Local system replicates nothing and ignores the clock.
//
// It is an Option rather than a Config field for the reason WithNetwork
// gives: Config is plain data, a clock is behaviour.
func WithClock(now func() time.Time) Option { return func(o *systemOptions) { o.clock = now } }

// physicalClock is the HLC's physical clock that o sets (WithClock), in
// milliseconds since the Unix epoch.
func physicalClock(o *systemOptions) func() int64 {
	if o.clock == nil {
		return hlc.SystemMillis
	}
	now := o.clock
	return func() int64 { return now().UnixMilli() }
}
