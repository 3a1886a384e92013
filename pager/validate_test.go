package pager

import (
	"errors"
	"math"
	"testing"
)

func TestValidateMsgpack(t *testing.T) {
	good := []any{nil, 1, -1, 300, -70000, math.MaxUint32 + 1, 1.5, float32(2), "s", string(make([]byte, 300)),
		[]byte{1, 2}, make([]byte, 70000), []int{1, 2}, make([]int, 20), map[string]any{"a": []any{1, "b", nil}}, stamp(1)}
	for _, v := range good {
		b, err := encodeValue(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateMsgpack(b); err != nil {
			t.Errorf("%T %v: %v", v, v, err)
		}
	}
	bad := map[string][]byte{
		"empty":            {},
		"bin32 of 4 GiB":   {0xc6, 0xff, 0xff, 0xff, 0x00},
		"str8 truncated":   {0xd9, 0x05, 'a'},
		"array32 too long": {0xdd, 0x00, 0x10, 0x00, 0x00, 0x01},
		"map missing val":  {0x81, 0x01},
		"reserved code":    {0xc1},
		"trailing":         {0x01, 0x02},
		"ext truncated":    {0xc7, 0x09, 0x01, 0x00},
		"too deep":         append(repeat(0x91, 600), 0x01),
	}
	for name, b := range bad {
		if err := ValidateMsgpack(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := DecodeDelta([]byte{0xc6, 0xff, 0xff, 0xff, 0x00}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("DecodeDelta of a huge bin: %v", err)
	}
}

func repeat(c byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return b
}
