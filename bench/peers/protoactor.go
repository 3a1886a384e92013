package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/test"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// callTimeout bounds one call on either side.
const callTimeout = 10 * time.Second

// grainKind is the name of Proto.Actor's cluster kind.
const grainKind = "echo"

// protoSystem returns an actor system that logs nothing.
func protoSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
}

// protoEcho answers every BytesValue with itself: the actor of every
// Proto.Actor shape.
func protoEcho(c actor.Context) {
	if m, ok := c.Message().(*wrapperspb.BytesValue); ok {
		c.Respond(m)
	}
}

var protoEchoProps = actor.PropsFromFunc(protoEcho)

// protoMessage is the 64-byte payload as a protobuf message (remote
// messages must be protobuf messages; this one ships with
// google.golang.org/protobuf, so nothing is generated).
func protoMessage() *wrapperspb.BytesValue { return wrapperspb.Bytes(payload()) }

// protoCall returns a contestant requesting pids[i % len(pids)] of caller
// w's slice of pids, through root.
func protoCall(root *actor.RootContext, pids [][]*actor.PID) func(w, i int) error {
	msg := protoMessage()
	return func(w, i int) error {
		ps := pids[w%len(pids)]
		r, err := root.RequestFuture(ps[i%len(ps)], msg, callTimeout).Result()
		return protoReply(r, err)
	}
}

// protoReply checks an answer is the echoed payload.
func protoReply(r any, err error) error {
	if err != nil {
		return err
	}
	if m, ok := r.(*wrapperspb.BytesValue); !ok || len(m.Value) != payloadSize {
		return fmt.Errorf("proto.actor: unexpected answer %T", r)
	}
	return nil
}

// protoLocal returns the local shapes' Proto.Actor side: keys actors
// spawned on one actor system.
func protoLocal(keys int) (root *actor.RootContext, pids []*actor.PID, stop func()) {
	sys := protoSystem()
	for range keys {
		pids = append(pids, sys.Root.Spawn(protoEchoProps))
	}
	return sys.Root, pids, sys.Shutdown
}

// protoServe spawns keys echo actors named k0, k1, … on a remote actor
// system listening on 127.0.0.1 (the server process's side) and returns
// its address.
func protoServe(keys int) (addr string, stop func(), err error) {
	sys := protoSystem()
	r := remote.NewRemote(sys, remote.Configure("127.0.0.1", 0))
	r.Start()
	for i := range keys {
		if _, err := sys.Root.SpawnNamed(protoEchoProps, "k"+strconv.Itoa(i)); err != nil {
			return "", nil, err
		}
	}
	return sys.Address(), func() { r.Shutdown(false); sys.Shutdown() }, nil
}

// protoRemote returns the remote shapes' Proto.Actor side: a remote actor
// system in this process and the PIDs of the server's keys actors.
func protoRemote(server string, keys int) (root *actor.RootContext, pids []*actor.PID, stop func(), err error) {
	sys := protoSystem()
	r := remote.NewRemote(sys, remote.Configure("127.0.0.1", 0))
	r.Start()
	stop = func() { r.Shutdown(false); sys.Shutdown() }
	for i := range keys {
		pids = append(pids, actor.NewPID(server, "k"+strconv.Itoa(i)))
	}
	// The first call dials the server: check it answers.
	if err := protoReply(sys.Root.RequestFuture(pids[0], protoMessage(), callTimeout).Result()); err != nil {
		stop()
		return nil, nil, nil, fmt.Errorf("proto.actor: calling %s: %w", server, err)
	}
	return sys.Root, pids, stop, nil
}

// protoCluster starts members cluster members in this process (the test
// provider's in-memory membership, disthash identity lookup, gRPC remoting
// on 127.0.0.1) and returns, for each, the keys among 0..keys-1 another
// member owns, every one activated.
func protoCluster(members, keys int) (clusters []*cluster.Cluster, owned [][]string, stop func(), err error) {
	agent := test.NewInMemAgent()
	kind := cluster.NewKind(grainKind, protoEchoProps)
	stop = func() {
		for _, c := range clusters {
			c.Shutdown(false)
		}
	}
	for range members {
		cfg := cluster.Configure("peers", test.NewTestProvider(agent), disthash.New(),
			remote.Configure("127.0.0.1", 0), cluster.WithKinds(kind))
		c := cluster.New(protoSystem(), cfg)
		c.StartMember()
		clusters = append(clusters, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Wait until every member sees the same members, all of them. (Its
	// gossip's TopologyConsensus never reports agreement in this version,
	// while calls work.)
	for agreed := false; !agreed; {
		agreed = true
		var hash uint64
		for i, c := range clusters {
			ms := c.MemberList.Members()
			agreed = agreed && ms.Len() == members && (i == 0 || ms.TopologyHash() == hash)
			hash = ms.TopologyHash()
		}
		if !agreed {
			if ctx.Err() != nil {
				stop()
				return nil, nil, nil, errors.New("proto.actor: the members did not see each other in 30 s")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	owned = make([][]string, members)
	for i := range keys {
		k := "g" + strconv.Itoa(i)
		for j, c := range clusters {
			pid := c.Get(k, grainKind)
			if pid == nil {
				stop()
				return nil, nil, nil, fmt.Errorf("proto.actor: no owner for grain %s", k)
			}
			if pid.Address != c.ActorSystem.Address() {
				owned[j] = append(owned[j], k)
			}
		}
	}
	// Activate every grain through every member that calls it.
	call := protoGrainCall(clusters, owned)
	for j := range clusters {
		for i := range owned[j] {
			if err := call(j, i); err != nil {
				stop()
				return nil, nil, nil, err
			}
		}
	}
	return clusters, owned, stop, nil
}

// protoGrainCall returns a contestant calling, through member w%members,
// its key i%len.
func protoGrainCall(clusters []*cluster.Cluster, owned [][]string) func(w, i int) error {
	msg := protoMessage()
	return func(w, i int) error {
		j := w % len(clusters)
		ks := owned[j]
		r, err := clusters[j].Request(ks[i%len(ks)], grainKind, msg, cluster.WithTimeout(callTimeout))
		return protoReply(r, err)
	}
}
