package casty

// ReplicaWall returns the wall clock (ms) of the stamp of the commit this
// member holds of kind/key; false when it holds nothing of it.
func ReplicaWall(s *System, kind, key string) (int64, bool) {
	r := s.cl.rp
	if r == nil {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.rep.Get(kind, key)
	return st.Stamp.Wall, ok
}
