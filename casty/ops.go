package casty

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/casty-go/casty/casty/inspect"
	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/mux"
	"github.com/casty-go/casty/ring"
	"github.com/casty-go/casty/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// What an operator's tool (cmd/castyctl) asks a system: the member table
// with every record's state, where a key lives, how the ring divides the
// key space, and the live state of an actor whose Go type the tool does
// not have. A lite member answers all of these from its own view.

// MemberTable returns every record of this node's member table, sorted by
// address then id; nil for a local system. A lite member's table holds
// only what it could check itself: a member that stopped answering before
// the lite member joined is missing from it until declared dead
// (MemberTableVia asks a full member instead).
func (s *System) MemberTable() []inspect.MemberStatus {
	if s == nil || s.cl == nil {
		return nil
	}
	return s.cl.memberTable()
}

func (cl *cluster) memberTable() []inspect.MemberStatus {
	var out []inspect.MemberStatus
	now := time.Now()
	for _, m := range cl.agent.Members() {
		st := inspect.MemberStatus{
			ID: ring.NodeID(m.ID).String(), Addr: m.Addr, Lite: m.Role == gossip.RoleClient,
			State: m.Status.String(), Incarnation: m.Incarnation,
		}
		since := cl.agent.Since(m.ID)
		if since.IsZero() && ring.NodeID(m.ID) == cl.self {
			since = cl.started // its own record: alive since it started
		}
		if !since.IsZero() {
			st.For = max(now.Sub(since), 0).Round(time.Millisecond)
		}
		out = append(out, st)
	}
	sortMemberTable(out)
	return out
}

func sortMemberTable(t []inspect.MemberStatus) {
	slices.SortFunc(t, func(a, b inspect.MemberStatus) int {
		if c := strings.Compare(a.Addr, b.Addr); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// memberRecord is a inspect.MemberStatus as it crosses the wire (opMemberTable).
type memberRecord struct {
	ID          string `msgpack:"i"`
	Addr        string `msgpack:"a"`
	Lite        bool   `msgpack:"l"`
	State       string `msgpack:"s"`
	Incarnation uint64 `msgpack:"n"`
	ForMillis   int64  `msgpack:"f"`
}

// MemberTableVia returns the member table as a full member sees it, and
// that member: on a full member its own table (MemberTable); on a lite
// member (an operator's tool) the table of a live full member, asked in
// turn until one answers. A full member has watched the others: its
// table names a member that stopped answering a moment ago as suspect,
// where a lite member that joined since knows nothing of it. Any peer
// may ask (a lite member learns the same records by gossip). ctx bounds
// the whole request (Config.Actors.CallTimeout when it has no deadline).
func (s *System) MemberTableVia(ctx context.Context) (Member, []inspect.MemberStatus, error) {
	if s == nil || s.cl == nil {
		return Member{}, nil, errors.New("casty: MemberTableVia needs a cluster (Start or Connect)")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	cl := s.cl
	if !cl.lite {
		return Member{ID: cl.self.String(), Addr: cl.addr}, cl.memberTable(), nil
	}
	deadline := cl.deadline(ctx)
	payload := appendCallReq(nil, &callReq{Op: opMemberTable, Deadline: deadline.UnixNano()})
	var why []string
	for _, m := range cl.view.Load().members {
		var resp callResp
		if err := cl.askMember(ctx, m, payload, deadline, &resp); err != nil {
			if ctx.Err() != nil {
				return Member{}, nil, ctx.Err()
			}
			why = append(why, err.Error())
			continue
		}
		if resp.Err != nil {
			why = append(why, fmt.Sprintf("%s: %v", m.Addr, resp.Err.decode()))
			continue
		}
		var recs []memberRecord
		if err := msgpack.Unmarshal(resp.Result, &recs); err != nil {
			why = append(why, fmt.Sprintf("malformed member table from %s: %v", m.Addr, err))
			continue
		}
		out := make([]inspect.MemberStatus, len(recs))
		for i, r := range recs {
			out[i] = inspect.MemberStatus{ID: r.ID, Addr: r.Addr, Lite: r.Lite, State: r.State, Incarnation: r.Incarnation,
				For: time.Duration(r.ForMillis) * time.Millisecond}
		}
		sortMemberTable(out)
		return m, out, nil
	}
	if len(why) == 0 {
		why = append(why, "no live full member known")
	}
	return Member{}, nil, fmt.Errorf("%w: member table: no full member answered: %s", ErrActorUnavailable, strings.Join(why, "; "))
}

// serveMemberTable answers opMemberTable: this member's table.
func (cl *cluster) serveMemberTable() callResp {
	if cl.lite {
		return errResp(codeUnavailable, fmt.Sprintf("casty: %s is a lite member: ask a full member for the member table", cl.addr))
	}
	t := cl.memberTable()
	recs := make([]memberRecord, len(t))
	for i, m := range t {
		recs[i] = memberRecord{ID: m.ID, Addr: m.Addr, Lite: m.Lite, State: m.State, Incarnation: m.Incarnation, ForMillis: m.For.Milliseconds()}
	}
	b, err := msgpack.Marshal(recs)
	if err != nil {
		return callResp{Err: encodeError(err)}
	}
	return callResp{Ok: true, Result: b}
}

// Placement returns where key of the kind named kind lives. replicas is
// the kind's replica count; 0 means the count the kind was declared with
// in this process (1 when it is not declared here, as in a tool that does
// not link the program's kinds). ok is false in local mode.
func (s *System) Placement(kind, key string, replicas int) (p inspect.KeyPlacement, ok bool) {
	if s == nil || s.cl == nil {
		return p, false
	}
	if replicas <= 0 {
		replicas = 1
		if k := kinds.get(kind); k != nil {
			replicas = replicasOf(k)
		}
	}
	v := s.cl.view.Load()
	point := ring.Point(kind, key)
	p = inspect.KeyPlacement{Kind: kind, Key: key, Point: point}
	member := func(id ring.NodeID) Member { return Member{ID: id.String(), Addr: v.addrs[id]} }
	if replicas == 1 || v.pl == nil {
		if id, ok := v.ring.Owner(point); ok {
			p.Owner = member(id)
			p.Replicas = []Member{p.Owner}
		}
		return p, true
	}
	for _, id := range v.pl.ring.Replicas(point, replicas) {
		m := member(id)
		if !v.up[id] {
			p.Down = append(p.Down, m.ID)
		} else if p.Owner.ID == "" {
			p.Owner = m
		}
		p.Replicas = append(p.Replicas, m)
	}
	return p, true
}

// Ownership returns how the current ring of live full members divides the
// key space, one row per member sorted by address; with replicas > 1 it
// counts, in Held, the ranges each member is a replica of on the
// placement of replicated kinds. Nil in local mode.
func (s *System) Ownership(replicas int) []inspect.RangeShare {
	if s == nil || s.cl == nil {
		return nil
	}
	v := s.cl.view.Load()
	rows := map[ring.NodeID]*inspect.RangeShare{}
	row := func(id ring.NodeID) *inspect.RangeShare {
		r := rows[id]
		if r == nil {
			r = &inspect.RangeShare{Member: Member{ID: id.String(), Addr: v.addrs[id]}}
			rows[id] = r
		}
		return r
	}
	r := v.ring
	for i := range r.Len() {
		token, id := r.Entry(i)
		var prev uint64
		if i > 0 {
			prev, _ = r.Entry(i - 1)
		} else {
			prev, _ = r.Entry(r.Len() - 1)
		}
		row(id).Ranges++
		row(id).Share += float64(token-prev) / (1 << 64) // wraps correctly for entry 0
	}
	held := r
	if replicas > 1 && v.pl != nil {
		held = v.pl.ring
	}
	n := max(replicas, 1)
	for i := range held.Len() {
		token, _ := held.Entry(i)
		for _, id := range held.Replicas(token, n) {
			row(id).Held++
		}
	}
	out := make([]inspect.RangeShare, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b inspect.RangeShare) int {
		if c := strings.Compare(a.Member.Addr, b.Member.Addr); c != 0 {
			return c
		}
		return strings.Compare(a.Member.ID, b.Member.ID)
	})
	return out
}

// StateOf returns a copy of the live state of the actor key of the kind
// named kind, decoded as generic values (maps by field wire name, slices,
// numbers, strings), ok false when it is not active. It is Kind.StateOf
// for a tool that does not have the actor's Go type: when the kind is not
// declared in this process, it asks the members in turn, the ring owner
// first, until one answers as the owner — so replicated kinds are found
// without knowing their replica count.
func (s *System) StateOf(ctx context.Context, kind, key string) (any, bool, error) {
	if s == nil {
		return nil, false, errors.New("casty: StateOf on a nil System")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	decode := func(b []byte) (any, error) {
		var v any
		if len(b) == 0 {
			return nil, nil
		}
		return v, wire.Unmarshal(b, &v)
	}
	if k := kinds.get(kind); k != nil {
		var b []byte
		if s.cl != nil {
			resp, local, err := s.cl.dispatch(ctx, k, key, placement{}, callReq{Op: opStateOf}, nil)
			if !local {
				if err != nil || !resp.Ok {
					return nil, false, err
				}
				v, err := decode(resp.Result)
				return v, err == nil, err
			}
		}
		ok, err := s.host.Peek(ctx, k, key, func(state any) (err error) {
			b, err = wire.Marshal(state)
			return err
		})
		if err != nil || !ok {
			return nil, false, err
		}
		v, err := decode(b)
		return v, err == nil, err
	}
	if s.cl == nil {
		return nil, false, fmt.Errorf("%w: %s is not declared in this process", ErrUnknownActorType, kind)
	}
	return s.cl.stateOfAny(ctx, kind, key, decode)
}

// stateOfAny asks the members in turn for the state of an undeclared kind.
func (cl *cluster) stateOfAny(ctx context.Context, kind, key string, decode func([]byte) (any, error)) (any, bool, error) {
	v := cl.view.Load()
	members := slices.Clone(v.members)
	if owner, ok := v.ring.Owner(ring.Point(kind, key)); ok {
		// The ring owner first: it is the owner of every Replicas(1) kind.
		slices.SortStableFunc(members, func(a, b Member) int {
			switch owner.String() {
			case a.ID:
				return -1
			case b.ID:
				return 1
			}
			return 0
		})
	}
	if len(members) == 0 {
		return nil, false, fmt.Errorf("%w: %s/%s: no full member in the cluster", ErrActorUnavailable, kind, key)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(cl.sys.cfg.Actors.CallTimeout)
	}
	req := callReq{Op: opStateOf, Kind: kind, Key: key, Deadline: deadline.UnixNano()}
	payload := appendCallReq(nil, &req)
	var why []string
	for _, m := range members {
		var resp callResp
		if m.ID == cl.self.String() {
			resp = cl.serveReq(ctx, &req)
		} else if err := cl.askMember(ctx, m, payload, deadline, &resp); err != nil {
			if ctx.Err() != nil {
				return nil, false, ctx.Err()
			}
			why = append(why, err.Error())
			continue
		}
		if resp.Err != nil {
			switch resp.Err.Code {
			case codeWrongOwner, codeMoving, codeLeaving:
				why = append(why, resp.Err.Message)
				continue
			}
			return nil, false, resp.Err.decode()
		}
		if !resp.Ok {
			return nil, false, nil
		}
		st, err := decode(resp.Result)
		return st, err == nil, err
	}
	return nil, false, fmt.Errorf("%w: %s/%s: no member answered as its owner: %s", ErrActorUnavailable, kind, key, strings.Join(why, "; "))
}

// askMember sends one request to m and decodes its answer into resp.
func (cl *cluster) askMember(ctx context.Context, m Member, payload []byte, deadline time.Time, resp *callResp) error {
	id, err := parseID(m.ID)
	if err != nil {
		return err
	}
	sess, err := cl.node.Connect(ctx, id, m.Addr)
	if err != nil {
		return fmt.Errorf("dial %s: %v", m.Addr, err)
	}
	if !sess.Member() {
		return fmt.Errorf("%s did not prove the member credential", m.Addr)
	}
	b, err := sess.RequestTimeout(ctx, mux.LaneMessage, payload, time.Until(deadline))
	if err != nil {
		return fmt.Errorf("%s: %v", m.Addr, err)
	}
	if err := decodeCallResp(b, resp); err != nil {
		return fmt.Errorf("malformed reply from %s: %v", m.Addr, err)
	}
	return nil
}
