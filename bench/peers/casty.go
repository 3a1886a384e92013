package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/casty-go/casty/casty"
)

// Echo is Casty's side of every shape: an actor that answers its
// argument.
type Echo struct{}

// Echo returns p.
func (e *Echo) Echo(ctx context.Context, p []byte) ([]byte, error) { return p, nil }

// Echoes is the kind every Casty shape calls.
var Echoes = casty.Actor[Echo](casty.Name("peers.Echo"))

var quietLog = casty.WithLogger(slog.New(slog.DiscardHandler))

// castyCall returns a contestant calling refs[i % len(refs)] from caller
// w's slice of refs.
func castyCall(refs [][]casty.Ref[Echo]) func(w, i int) error {
	ctx := context.Background()
	msg := payload()
	return func(w, i int) error {
		rs := refs[w%len(refs)]
		_, err := casty.Call(ctx, rs[i%len(rs)], (*Echo).Echo, msg)
		return err
	}
}

// castyLocal returns the local shapes' Casty side: keys actors on a
// local system, every one activated.
func castyLocal(keys int) (refs []casty.Ref[Echo], stop func(), err error) {
	sys := casty.Local()
	stop = func() { sys.Close(context.Background()) }
	for i := range keys {
		refs = append(refs, Echoes.Ref(sys, "k"+strconv.Itoa(i)))
	}
	if err := castyWarm(refs); err != nil {
		stop()
		return nil, nil, err
	}
	return refs, stop, nil
}

// castyWarm activates every ref (the figures are calls, not activations).
func castyWarm(refs []casty.Ref[Echo]) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msg := payload()
	for _, r := range refs {
		if _, err := casty.Call(ctx, r, (*Echo).Echo, msg); err != nil {
			return fmt.Errorf("casty: activating %v: %w", r, err)
		}
	}
	return nil
}

// castyRemote returns the remote shapes' Casty side: a lite member
// (Connect: it owns no keys) joined to the server process's member, which
// owns every key.
func castyRemote(server string, keys int) (refs []casty.Ref[Echo], stop func(), err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sys, err := casty.Connect(ctx, []string{server}, quietLog)
	if err != nil {
		return nil, nil, fmt.Errorf("casty: connecting to %s: %w", server, err)
	}
	stop = func() { sys.Close(context.Background()) }
	for i := range keys {
		refs = append(refs, Echoes.Ref(sys, "r"+strconv.Itoa(i)))
	}
	if err := castyWarm(refs); err != nil {
		stop()
		return nil, nil, err
	}
	return refs, stop, nil
}

// castyCluster starts members members in this process on 127.0.0.1 and
// returns, for each, refs through it to the keys among 0..keys-1 another
// member owns, every one activated.
func castyCluster(members, keys int) (refs [][]casty.Ref[Echo], stop func(), err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var nodes []*casty.System
	stop = func() {
		for _, n := range nodes {
			n.Close(context.Background())
		}
	}
	fail := func(err error) ([][]casty.Ref[Echo], func(), error) {
		stop()
		return nil, nil, err
	}
	for i := range members {
		var opts []casty.Option
		if i > 0 {
			opts = append(opts, casty.Seeds(nodes[0].Addr()))
		}
		n, err := casty.Start(ctx, "127.0.0.1:0", append(opts, quietLog)...)
		if err != nil {
			return fail(fmt.Errorf("casty: starting member %d: %w", i, err))
		}
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		if err := n.WaitMembers(ctx, members); err != nil {
			return fail(fmt.Errorf("casty: members: %w", err))
		}
	}
	refs = make([][]casty.Ref[Echo], members)
	for i := range keys {
		k := "g" + strconv.Itoa(i)
		for j, n := range nodes {
			if m, _ := n.OwnerOf(Echoes.Name(), k); m.Addr != n.Addr() {
				refs[j] = append(refs[j], Echoes.Ref(n, k))
			}
		}
	}
	for j := range refs {
		if err := castyWarm(refs[j]); err != nil {
			return fail(err)
		}
	}
	return refs, stop, nil
}

// castyServe starts the server process's member on 127.0.0.1.
func castyServe() (*casty.System, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return casty.Start(ctx, "127.0.0.1:0", quietLog)
}
