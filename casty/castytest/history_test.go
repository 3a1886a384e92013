package castytest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

func TestIndeterminateClassifiesCastyErrors(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{casty.ErrTimeout, true},
		{&casty.TimeoutError{Kind: "k", Key: "x", Method: "M"}, true},
		{fmt.Errorf("wrapped: %w", casty.ErrQuorumUnavailable), true},
		{fmt.Errorf("%w: connection lost after sending", casty.ErrActorUnavailable), true},
		{context.Canceled, true},
		{context.DeadlineExceeded, true},
		{casty.ErrUnknownActorType, false},
		{casty.ErrReentrancy, false},
		{casty.ErrRangeMoving, false},
		{&casty.ActorFailedError{Kind: "k", Key: "x", Method: "M", Message: "no"}, false},
		{errors.New("the handler said no"), false},
	}
	for _, c := range cases {
		if got := castytest.Indeterminate(c.err); got != c.want {
			t.Errorf("Indeterminate(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestReturnRecordsOutputIndeterminateOrDrops(t *testing.T) {
	h := castytest.NewHistory[string, int]()
	h.Begin(0, "ok").Return(7, nil)
	h.Begin(1, "timeout").Return(0, casty.ErrTimeout)
	h.Begin(2, "refused").Return(0, casty.ErrUnknownActorType)
	h.Begin(3, "never ended")
	ops := h.Ops()
	if len(ops) != 3 {
		t.Fatalf("ops = %+v, want the definite failure dropped and 3 left", ops)
	}
	if op := ops[0]; op.Input != "ok" || op.Output != 7 || op.Indeterminate || op.Return < op.Call || op.Return == castytest.Never {
		t.Errorf("completed op = %+v", op)
	}
	for _, op := range ops[1:] {
		if !op.Indeterminate || op.Return != castytest.Never {
			t.Errorf("op %q = %+v, want indeterminate with Return Never", op.Input, op)
		}
	}
}

func TestRecordPassesTheResultOn(t *testing.T) {
	h := castytest.NewHistory[int, int]()
	out, err := h.Record(0, 2, func() (int, error) { return 4, nil })
	if out != 4 || err != nil {
		t.Fatalf("Record = %d, %v", out, err)
	}
	_, err = h.Record(0, 3, func() (int, error) { return 0, casty.ErrQuorumUnavailable })
	if !errors.Is(err, casty.ErrQuorumUnavailable) {
		t.Fatalf("Record err = %v", err)
	}
	ops := h.Ops()
	if len(ops) != 2 || ops[0].Output != 4 || !ops[1].Indeterminate || ops[1].Call < ops[0].Return {
		t.Fatalf("ops = %+v", ops)
	}
}

// ms builds a finished register op from call to ret milliseconds.
func ms(client int, in castytest.RegisterOp[int], out castytest.RegisterResult[int], call, ret int) castytest.Op[castytest.RegisterOp[int], castytest.RegisterResult[int]] {
	return castytest.Op[castytest.RegisterOp[int], castytest.RegisterResult[int]]{
		Client: client, Input: in, Output: out,
		Call: time.Duration(call) * time.Millisecond, Return: time.Duration(ret) * time.Millisecond,
	}
}

// unknown builds an indeterminate register op called at call ms.
func unknown(client int, in castytest.RegisterOp[int], call int) castytest.Op[castytest.RegisterOp[int], castytest.RegisterResult[int]] {
	return castytest.Op[castytest.RegisterOp[int], castytest.RegisterResult[int]]{
		Client: client, Input: in, Call: time.Duration(call) * time.Millisecond, Indeterminate: true,
	}
}
