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
func Self(ctx context.Context) ActorContext { return ActorContext{a: actor.FromContext(ctx)} }

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
// message (its Deactivate hook runs); the next call reactivates it. A
// durable actor (Replicas > 1 and IdleTimeout(Forever)) ends for good: no
// member reactivates it unprompted after later failures, until a call
// activates it again.
func (c ActorContext) Deactivate() {
	if c.a != nil {
		markEnding(c.a)
		c.a.Deactivate()
	}
}

// DeleteState deletes the actor's replicated state for good, after the
// current message: its replicas are given the empty state in place of the
// current one, the activation deactivates, and a later call starts from the
// zero value (a durable actor also stays ended). It reports false, doing
// nothing, for an actor that keeps no replicated state (Replicas(1), local
// mode, or outside a handler): deactivate such an actor to forget it.
// Replicas keep a small record of the deletion (the state's stamp), so a
// copy that missed it can never bring the old state back.
func (c ActorContext) DeleteState() bool {
	if c.a == nil || !markDeleting(c.a) {
		return false
	}
	c.a.Deactivate()
	return true
}

// System returns the system the activation runs on, for calls to other
// actors (pass the handler's ctx to them); nil outside a handler.
func (c ActorContext) System() *System {
	if c.a == nil {
		return nil
	}
	return systemOf(c.a.Host())
}

// systemOf returns the System that runs h (actor.Host.SetOwner).
func systemOf(h *actor.Host) *System {
	s, _ := h.Owner().(*System)
	return s
}
