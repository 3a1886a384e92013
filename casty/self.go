package casty

import (
	"context"

	"github.com/casty-go/casty/actor"
)

// ActorContext is what a handler knows about its own activation. The zero
// value (outside a handler) answers empty and does nothing.
type ActorContext struct{ a *actor.Activation }

// Self returns the activation ctx belongs to: pass it a handler's ctx (or
// one derived from it). Calls made with that ctx carry the call chain that
// reentrancy detection follows.
func Self(ctx context.Context) ActorContext { return ActorContext{a: actor.From(ctx)} }

// InHandler reports whether the context belongs to a handler.
func (c ActorContext) InHandler() bool { return c.a != nil }

// Key returns the actor's key.
func (c ActorContext) Key() string {
	if c.a == nil {
		return ""
	}
	return c.a.Key()
}

// Kind returns the actor kind's wire name.
func (c ActorContext) Kind() string {
	if c.a == nil {
		return ""
	}
	return c.a.Kind().Name
}

// Deactivate deactivates the activation gracefully after the current
// message (its Deactivate hook runs); the next call reactivates it.
func (c ActorContext) Deactivate() {
	if c.a != nil {
		c.a.Deactivate()
	}
}

// System returns the system the activation runs on, for calls to other
// actors (pass the handler's ctx to them).
func (c ActorContext) System() *System {
	if c.a == nil {
		return nil
	}
	sys, _ := c.a.Host().Owner.(*System)
	return sys
}
