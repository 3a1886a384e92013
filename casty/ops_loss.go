package casty

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/casty-go/casty/casty/inspect"
	"github.com/casty-go/casty/mux"
	"github.com/casty-go/casty/ring"
	"github.com/vmihailenco/msgpack/v5"
)

// The operator's requests about the placement of replicated kinds, for a
// tool that does not vote on it (a lite member: cmd/castyctl): have a full
// member accept the loss of removed members' copies (AcceptLoss), and ask
// each full member which of its syncs wait for removed members. A member
// serves them only to a peer with the operator role (a member or operator
// credential, SECURITY.md); to others they fail with ErrForbidden.

// placementReport is a inspect.MemberPlacement as it crosses the wire.
type placementReport struct {
	Version     uint64       `msgpack:"v"`
	Placed      int          `msgpack:"p"`
	Syncing     bool         `msgpack:"s"`
	Waiting     []waitReport `msgpack:"w"`
	LostMembers int          `msgpack:"l"`
}

type waitReport struct {
	Kind    string   `msgpack:"k"`
	Members []string `msgpack:"m"`
	Ranges  int      `msgpack:"r,omitempty"`
}

// AcceptLossVia is AcceptLoss for a system that cannot run it itself: a
// lite member (an operator's tool) asks a live full member to run it, the
// members in turn until one answers, and returns the member that did. On
// a full member it runs AcceptLoss here. The peer asked needs the
// operator role (WithOperatorSecret, or a certificate carrying
// casty://role/operator): without it the request fails with ErrForbidden.
// A member id that was not taken out of the placement fails with ErrNotRemoved, as
// AcceptLoss does, before any id is accepted — once every member asked
// refused it so (one that has not adopted the removal yet refuses while
// another that has runs it). ctx bounds the whole request (Config.Actors.CallTimeout
// when it has no deadline). Like AcceptLoss, it gives up for good every
// write only those members held.
func (s *System) AcceptLossVia(ctx context.Context, ids ...string) (Member, error) {
	if s == nil || s.cl == nil {
		return Member{}, errors.New("casty: AcceptLossVia needs a cluster (Start or Connect)")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	for _, raw := range ids {
		if _, err := ring.ParseNodeID(raw); err != nil {
			return Member{}, fmt.Errorf("casty: AcceptLoss: member id %q: %w", raw, err)
		}
	}
	cl := s.cl
	if !cl.lite {
		return Member{ID: cl.self.String(), Addr: cl.addr}, s.AcceptLoss(ctx, ids...)
	}
	arg, err := msgpack.Marshal(ids)
	if err != nil {
		return Member{}, err
	}
	deadline := cl.deadline(ctx)
	req := callReq{Op: opAcceptLoss, Deadline: deadline.UnixNano(), Arg: arg}
	payload := appendCallReq(nil, &req)
	members := slices.Clone(cl.view.Load().members)
	rand.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	var why []string
	var notRemoved *wireError // the first member's refusal as not removed
	var refuser Member
	for _, m := range members {
		var resp callResp
		if err := cl.askMember(ctx, m, payload, deadline, &resp); err != nil {
			if ctx.Err() != nil {
				return Member{}, ctx.Err()
			}
			why = append(why, err.Error())
			continue
		}
		if resp.Err != nil && resp.Err.Code == codeNotRemoved {
			// That member may not have adopted the removal yet: another
			// that has can run it.
			if notRemoved == nil {
				notRemoved, refuser = resp.Err, m
			}
			continue
		}
		if resp.Err != nil {
			return m, resp.Err.decode()
		}
		return m, nil
	}
	if notRemoved != nil {
		return refuser, notRemoved.decode()
	}
	if len(why) == 0 {
		why = append(why, "no live full member known")
	}
	return Member{}, fmt.Errorf("%w: AcceptLoss: no full member answered: %s", ErrActorUnavailable, strings.Join(why, "; "))
}

// PlacementStatus asks every live full member for its report on the
// placement of replicated kinds, above all the syncs that wait for
// removed members (inspect.MemberPlacement.Waiting), and returns the reports
// sorted by address. A member that cannot be asked has its Err set. Each
// member asked requires the operator role: when one refuses, it returns
// ErrForbidden. ctx bounds each request (Config.Actors.CallTimeout when it has
// no deadline).
func (s *System) PlacementStatus(ctx context.Context) ([]inspect.MemberPlacement, error) {
	if s == nil || s.cl == nil {
		return nil, errors.New("casty: PlacementStatus needs a cluster (Start or Connect)")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	cl := s.cl
	members := cl.view.Load().members
	deadline := cl.deadline(ctx)
	payload := appendCallReq(nil, &callReq{Op: opPlacementStatus, Deadline: deadline.UnixNano()})
	out := make([]inspect.MemberPlacement, len(members))
	var forbiddenErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, m := range members {
		out[i].Member = m
		wg.Go(func() {
			var resp callResp
			if m.ID == cl.self.String() {
				resp = cl.servePlacementStatus()
			} else if err := cl.askMember(ctx, m, payload, deadline, &resp); err != nil {
				out[i].Err = err.Error()
				return
			}
			if resp.Err != nil {
				err := resp.Err.decode()
				if errors.Is(err, ErrForbidden) {
					mu.Lock()
					forbiddenErr = err
					mu.Unlock()
				}
				out[i].Err = err.Error()
				return
			}
			var r placementReport
			if err := msgpack.Unmarshal(resp.Result, &r); err != nil {
				out[i].Err = fmt.Sprintf("malformed report from %s: %v", m.Addr, err)
				return
			}
			out[i].Version, out[i].Placed, out[i].Syncing, out[i].LostMembers = r.Version, r.Placed, r.Syncing, r.LostMembers
			for _, w := range r.Waiting {
				out[i].Waiting = append(out[i].Waiting, inspect.WaitingSync{Kind: w.Kind, Members: w.Members, Ranges: w.Ranges})
			}
		})
	}
	wg.Wait()
	if forbiddenErr != nil {
		return nil, forbiddenErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b inspect.MemberPlacement) int {
		if c := strings.Compare(a.Member.Addr, b.Member.Addr); c != 0 {
			return c
		}
		return strings.Compare(a.Member.ID, b.Member.ID)
	})
	return out, nil
}

// deadline is ctx's deadline, or Config.Actors.CallTimeout from now.
func (cl *cluster) deadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(cl.sys.cfg.Actors.CallTimeout)
}

// serveOperator serves opAcceptLoss and opPlacementStatus from another
// node.
func (cl *cluster) serveOperator(ctx context.Context, from *mux.Session, req *callReq) callResp {
	if !operatorAllowed(from) {
		if req.Op == opAcceptLoss {
			return forbidden("accepting the loss of members' copies")
		}
		return forbidden("reading the placement's status")
	}
	if cl.lite {
		return errResp(codeUnavailable, fmt.Sprintf("casty: %s is a lite member: it has no placement to report or change", cl.addr))
	}
	if req.Op == opPlacementStatus {
		return cl.servePlacementStatus()
	}
	var ids []string
	if err := msgpack.Unmarshal(req.Arg, &ids); err != nil {
		return errResp(codeUnavailable, fmt.Sprintf("casty: AcceptLoss: malformed member ids: %v", err))
	}
	if req.Deadline != 0 {
		ctx = &servedCtx{Context: ctx, deadline: req.Deadline}
	}
	var cancel context.CancelFunc
	ctx, cancel = context.WithDeadline(ctx, cl.deadline(ctx))
	defer cancel()
	if err := cl.sys.AcceptLoss(ctx, ids...); err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return errResp(codeTimeout, fmt.Sprintf("casty: AcceptLoss on %s: the placement change was not chosen in time: %v", cl.addr, err))
		}
		return callResp{Err: encodeError(err)}
	}
	return callResp{Ok: true}
}

// servePlacementStatus is this member's placementReport.
func (cl *cluster) servePlacementStatus() callResp {
	st := cl.sys.Replication()
	r := placementReport{Version: st.PlacementVersion, Placed: st.Placed, Syncing: st.Syncing, LostMembers: st.LostMembers}
	for _, w := range st.Waiting {
		r.Waiting = append(r.Waiting, waitReport{Kind: w.Kind, Members: w.Members, Ranges: w.Ranges})
	}
	b, err := msgpack.Marshal(&r)
	if err != nil {
		return callResp{Err: encodeError(err)}
	}
	return callResp{Ok: true, Result: b}
}
