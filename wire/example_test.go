package wire_test

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/casty-go/casty/wire"
)

type Reservation struct {
	OrderID string
	Qty     int
}

func Example() {
	reg := wire.NewRegistry()
	name, err := reg.Register(reflect.TypeFor[Reservation](), "shop.Reservation")
	fmt.Println(name, err)

	b, _ := wire.Marshal(Reservation{OrderID: "o-7", Qty: 2})
	var r Reservation
	fmt.Println(wire.Unmarshal(b, &r), r)

	type Bad struct{ Notify chan string }
	_, err = reg.Register(reflect.TypeFor[Bad](), "shop.Bad")
	fmt.Println(err)
	// Output:
	// shop.Reservation <nil>
	// <nil> {o-7 2}
	// shop.Bad.Notify: chan string is not serializable (to leave the field out, unexport it or tag it `msgpack:"-"`)
}

// Scalars take a direct path; everything else goes through the codec, with
// the same bytes either way.
func ExampleAppendValue() {
	b, _ := wire.AppendValue(nil, 300)
	viaCodec, _ := wire.Marshal(300)
	var n int
	_ = wire.UnmarshalValue(b, &n)
	fmt.Printf("% x, same as Marshal: %v, decoded %d\n", b, bytes.Equal(b, viaCodec), n)
	// Output: cd 01 2c, same as Marshal: true, decoded 300
}
