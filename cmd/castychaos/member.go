package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
	// A member serves collections only if its program imports the
	// package: its shard kinds and waiting room are declared when it is
	// initialised (the collection workloads need them on every member).
	_ "github.com/casty-go/casty/collections"
)

// clusterConfig makes membership react in seconds, so a short run sees
// failures detected and keys move, and members removed from the placement
// of replicated kinds once a fault is held past removeDeadAfter.
func clusterConfig() casty.Config {
	return casty.Config{
		Actors: casty.ActorConfig{
			DrainTimeout: 2 * time.Second,
			CallTimeout:  2 * time.Second,
		},
		Replication: casty.ReplicationConfig{
			RemoveDeadAfter: removeDeadAfter,
		},
		Transport: casty.TransportConfig{
			KeepAliveInterval: 250 * time.Millisecond,
			KeepAliveTimeout:  750 * time.Millisecond,
			ConnectTimeout:    time.Second,
			ReconnectMin:      50 * time.Millisecond,
			ReconnectMax:      time.Second,
		},
		Membership: casty.MembershipConfig{
			SuspicionTimeout:    time.Second,
			ShuffleInterval:     time.Second,
			AntiEntropyInterval: 2 * time.Second,
			JoinTimeout:         5 * time.Second,
		},
	}
}

// member runs one cluster member until SIGTERM or SIGINT (the controller
// SIGKILLs it to crash it). It declares the same kinds as the controller.
// With -skew its replication clock (the HLC's physical clock) reads the
// wall clock plus the skew (castytest.SkewedClock); the controller keeps
// skews within ±max-drift/2.
func member(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("castychaos member", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "address to listen on")
	seeds := fs.String("seeds", "", "comma-separated seed addresses")
	replicas := fs.Int("replicas", 3, "copies of each actor")
	cluster := fs.String("cluster", "castychaos", "cluster name")
	verbose := fs.Bool("v", false, "log to stderr")
	skew := fs.Duration("skew", 0, "offset of the replication clock from the wall clock (may be negative)")
	maxDrift := fs.Duration("max-drift", 0, "Config.Replication.MaxClockDrift (0: casty's default)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	declare(*replicas)
	logger := slog.New(slog.DiscardHandler)
	if *verbose {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	var seedList []string
	if *seeds != "" {
		seedList = strings.Split(*seeds, ",")
	}
	cfg := clusterConfig()
	cfg.Replication.MaxClockDrift = *maxDrift
	opts := []casty.Option{casty.WithConfig(cfg), casty.Seeds(seedList...),
		casty.ClusterName(*cluster), casty.WithLogger(logger)}
	if *skew != 0 {
		opts = append(opts, castytest.SkewedClock(*skew))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	sys, err := casty.Start(ctx, *addr, opts...)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "castychaos member %s: %v\n", *addr, err)
		return 1
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	orphaned := make(chan struct{})
	go func() {
		// The controller holds our stdin open: EOF means it is gone, on
		// whatever path, and a member must not outlive it.
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(orphaned)
	}()
	select {
	case <-stop:
	case <-orphaned:
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = sys.Close(ctx)
	return 0
}
