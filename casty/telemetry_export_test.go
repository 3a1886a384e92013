package casty

import "context"

// CallUninstrumented is Call without its telemetry hooks (and without
// Call's retry of a commit fenced before it applied): the baseline of the
// telemetry overhead benchmarks.
func CallUninstrumented[T, Q, R any](ctx context.Context, ref Ref[T], m func(*T, context.Context, Q) (R, error), q Q) (R, error) {
	meth, err := resolve(ref, m)
	if err != nil {
		var zero R
		return zero, err
	}
	r, err := callOnce(ctx, ref, meth, m, q)
	return r, answered(err)
}
