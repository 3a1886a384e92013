package mux

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRequestContextCancels(t *testing.T) {
	c := &reqCtx{}
	child, stop := context.WithCancel(c) // propagates through AfterFunc
	defer stop()
	grandchild, stop2 := context.WithTimeout(child, time.Hour)
	defer stop2()
	if c.Err() != nil || child.Err() != nil {
		t.Fatal("cancelled before cancel")
	}
	if _, ok := c.Deadline(); ok {
		t.Fatal("a request context has no deadline")
	}
	done := c.Done()
	c.cancel()
	c.cancel() // idempotent
	select {
	case <-done:
	default:
		t.Fatal("Done not closed by cancel")
	}
	select {
	case <-c.Done(): // made after cancel: closed already
	default:
		t.Fatal("Done made after cancel is open")
	}
	select {
	case <-grandchild.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("cancel did not reach a derived context")
	}
	if !errors.Is(c.Err(), context.Canceled) || !errors.Is(grandchild.Err(), context.Canceled) {
		t.Fatalf("errors %v %v", c.Err(), grandchild.Err())
	}
}

func TestRequestContextAfterFuncStop(t *testing.T) {
	c := &reqCtx{}
	ran := make(chan struct{}, 2)
	stop := c.AfterFunc(func() { ran <- struct{}{} })
	if !stop() || stop() {
		t.Fatal("stop should succeed once")
	}
	c.AfterFunc(func() { ran <- struct{}{} })
	c.cancel()
	<-ran                                     // the second one runs
	c.AfterFunc(func() { ran <- struct{}{} }) // after cancel: runs at once
	<-ran
	select {
	case <-ran:
		t.Fatal("a stopped AfterFunc ran")
	case <-time.After(50 * time.Millisecond):
	}
}
