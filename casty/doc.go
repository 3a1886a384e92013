// Package casty runs typed virtual actors, in one process (Local) or
// across a leaderless cluster (Start; Connect joins as a lite member that
// hosts nothing). An actor is a plain struct: its exported fields are its
// state, its exported methods of these shapes its interface:
//
//	M(ctx) (R, error)   M(ctx, Q) (R, error)   M(ctx) error   M(ctx, Q) error
//
// Declare each kind once, at package level, and call it through method
// expressions, which the compiler checks (no code generation):
//
//	var Greeters = casty.Actor[Greeter]()
//	msg, err := casty.Call(ctx, Greeters.Ref(sys, "front-door"), (*Greeter).Greet, "world")
//
// docs/guide.md at the repository root is the guide, a section per topic;
// the examples directory runs each feature. What operators and tools read
// is in casty/inspect and casty/schema.
package casty
