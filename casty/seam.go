package casty

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/casty-go/casty/casty/internal/seam"
)

// casty/castytest seeds members' randomness, crashes them, waits for
// them to settle and breaks their rules on purpose through internal/seam,
// outside casty's public API (its network and clocks are WithNetwork's
// and WithClock's).
func init() {
	seam.Option = func(m *seam.Member) any {
		return Option(func(o *systemOptions) {
			o.seam = m
			if m.Rand != nil {
				for i := 0; i < len(o.nodeID); i += 8 {
					binary.LittleEndian.PutUint64(o.nodeID[i:], m.Rand.Uint64())
				}
			}
		})
	}
	seam.Crash = func(s any) {
		if sys := s.(*System); sys.cl != nil {
			sys.cl.crash()
		}
	}
	seam.Settled = func(s any, n int) bool {
		sys := s.(*System)
		if sys.cl == nil || sys.cl.rp == nil {
			return false
		}
		pl := sys.cl.view.Load().pl
		return sys.cl.rp.settled() && pl != nil && len(pl.ring.Members()) == n
	}
}

// seamRand is a generator seeded from the injected randomness, nil
// without one (the caller then keeps its default).
func seamRand(o *systemOptions) *rand.Rand {
	if o.seam == nil || o.seam.Rand == nil {
		return nil
	}
	return rand.New(rand.NewPCG(o.seam.Rand.Uint64(), o.seam.Rand.Uint64()))
}
