// Package casty is the public face of Casty for Go: typed virtual actors,
// in one process (Local) or across a leaderless cluster.
//
// An actor is a plain struct. Its exported fields are its state; its
// exported methods with a handler shape are its interface:
//
//	M(ctx) (R, error)   M(ctx, Q) (R, error)   M(ctx) error   M(ctx, Q) error
//
// Declare each kind once, at package level, and call it through typed
// method expressions — the compiler checks the actor type, the argument and
// the result, and there is no code generation:
//
//	type Greeter struct{ Greetings int }
//
//	func (g *Greeter) Greet(ctx context.Context, who string) (string, error) {
//		g.Greetings++
//		return fmt.Sprintf("hello, %s! (greeting #%d)", who, g.Greetings), nil
//	}
//
//	var Greeters = casty.Actor[Greeter]()
//
//	sys := casty.Local()
//	defer sys.Close(ctx)
//	msg, err := casty.Call(ctx, Greeters.Ref(sys, "front-door"), (*Greeter).Greet, "world")
//
// # Read on
//
// docs/guide.md at the repository root covers the rest, a section each:
// what Casty guarantees, errors (and errors across nodes), reentrancy,
// limits, supervision, local and cluster mode, security, replication,
// large state and messages, closing, operations, telemetry and the
// modules. The examples directory runs each feature; ARCHITECTURE.md says
// how the modules fit together.
package casty
