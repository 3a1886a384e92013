package casty

import "github.com/casty-go/casty/mux"

// handleStream serves streams opened by other nodes (actor streaming and
// cluster-scope spies).
func (cl *cluster) handleStream(from *mux.Session, st *mux.Stream) {
	st.Close()
}
