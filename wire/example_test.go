package wire_test

import (
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
	// shop.Bad.Notify: chan string is not serializable
}
