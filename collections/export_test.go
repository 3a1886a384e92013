package collections

import (
	"strings"

	"github.com/casty-go/casty/casty"
)

// Parked counts the Await calls parked in this process for the
// collection of type typ called name.
func Parked(typ, name string) int { return ParkedOn(nil, typ, name) }

// ParkedOn counts those parked on sys (nil: on any System).
func ParkedOn(sys *casty.System, typ, name string) int {
	room.Lock()
	defer room.Unlock()
	n := 0
	for k, chs := range room.m {
		if strings.HasSuffix(k.shard, "/"+typ+"/"+name) && (sys == nil || k.sys == sys) {
			n += len(chs)
		}
	}
	return n
}

// ParkedAll counts every Await call parked in this process.
func ParkedAll() int { return parked() }

// OwnerAddr is the address of the member serving the single-owner
// collection of type typ called name (default replication), on sys's view.
func OwnerAddr(sys *casty.System, typ, name string) string {
	m, _ := sys.OwnerOf(kindName(triple{3, 2, 1}), typ+"/"+name)
	return m.Addr
}
