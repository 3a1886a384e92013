package wire

import (
	"maps"
	"slices"
)

// Names returns the wire names of every registered type, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.byName))
}
