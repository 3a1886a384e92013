package actor

import (
	"context"
	"fmt"
)

// A call chain crosses nodes as the list of activations waiting up the
// chain, named "kind/key". ChainOf reads it from a handler's ctx; the
// receiving node puts it back with WithChain, so A→B→A is detected even
// when A, B or both live elsewhere.

type chainKey struct{}

// MaxCallChain bounds a call chain: a call made while MaxCallChain
// activations already wait up its chain fails with ErrCallChainTooLong,
// and a node refuses a call from another node naming more, before it
// allocates anything for them. The chain exists to detect reentrancy
// (A→B→A), which any depth of handlers calling handlers can reach; 64
// nested calls, each holding its activation while it waits, is far past
// any design that does not recurse without end, and keeps the chain a
// call carries to a few kilobytes. Every node of a cluster has the same
// bound: it is part of the wire contract (casty/SPEC.md).
const MaxCallChain = 64

// ChainOf returns the activations waiting in ctx's call chain, innermost
// first, including those that arrived from other nodes.
func ChainOf(ctx context.Context) []string {
	var out []string
	c := ctx
	for h := handlerOf(c); h != nil; h = handlerOf(h.Context) {
		if h.act != nil && !h.act.kind.Service {
			out = append(out, h.act.kind.Name+"/"+h.act.key)
		}
		c = h.Context
	}
	if remote, ok := c.Value(chainKey{}).([]string); ok {
		out = append(out, remote...)
	}
	return out
}

// WithChain returns ctx carrying a chain received from another node.
func WithChain(ctx context.Context, chain []string) context.Context {
	if len(chain) == 0 {
		return ctx
	}
	return context.WithValue(ctx, chainKey{}, chain)
}

// remoteChainHas reports whether remote, the part of a call chain that
// arrived from another node, names kind/key.
func remoteChainHas(remote []string, kind, key string) bool {
	for _, id := range remote {
		if len(id) == len(kind)+1+len(key) && id[:len(kind)] == kind && id[len(kind)] == '/' && id[len(kind)+1:] == key {
			return true
		}
	}
	return false
}

// Evict deactivates, gracefully and with reason, every activation for
// which pred holds (a cluster node evicts the keys it no longer owns with
// ReasonMoved). Queued calls fail with ErrRangeMoving so their callers
// re-route. It returns how many it asked to stop.
func (h *Host) Evict(pred func(k *Kind, key string) bool, reason Reason) int {
	var starts []*Activation
	n := 0
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.RLock()
		for _, a := range sh.m {
			if !pred(a.kind, a.key) {
				continue
			}
			a.mu.Lock()
			if a.status == statusActive && a.stopReq == ReasonNone {
				a.stopReq = reason
				a.evicted = true
				n++
				if a.claim() {
					starts = append(starts, a)
				}
			}
			a.mu.Unlock()
		}
		sh.mu.RUnlock()
	}
	for _, a := range starts {
		h.start(a)
	}
	return n
}

func chainTooLong(k *Kind, key string, depth int) error {
	return fmt.Errorf("%w: calling %s/%s with %d activations already waiting up the chain (at most %d)", ErrCallChainTooLong, k.Name, key, depth, MaxCallChain)
}
