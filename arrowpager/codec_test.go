package arrowpager

import "github.com/vmihailenco/msgpack/v5"

func encodeFrame(st *frame) ([]byte, error) { return msgpack.Marshal(st) }

func decodeFrame(b []byte) (*frame, error) {
	var st frame
	return &st, msgpack.Unmarshal(b, &st)
}
