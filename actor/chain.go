package actor

import "context"

// A call chain crosses nodes as the list of activations waiting up the
// chain, named "kind/key". ChainOf reads it from a handler's ctx; the
// receiving node puts it back with WithChain, so A→B→A is detected even
// when A, B or both live elsewhere.

type chainKey struct{}

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

// remoteChainHas reports whether the remote part of ctx's chain names
// kind/key. ctx is the outermost (non-handler) context of the chain.
func remoteChainHas(ctx context.Context, kind, key string) bool {
	remote, ok := ctx.Value(chainKey{}).([]string)
	if !ok {
		return false
	}
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
