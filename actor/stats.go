package actor

// Queued returns how many messages wait in the mailboxes of this host's
// activations, not counting those running. It visits every activation
// under its lock: meant for a metrics collection, not for a hot path.
func (h *Host) Queued() int {
	n := 0
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.RLock()
		for _, a := range sh.m {
			a.mu.Lock()
			n += len(a.queue) - a.head
			a.mu.Unlock()
		}
		sh.mu.RUnlock()
	}
	return n
}
