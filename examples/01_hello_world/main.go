// Hello world: one local system, one actor kind, two calls to the same key
// reaching the same activation.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/casty-go/casty/casty"
)

// Greeter is an actor: its exported field is its state, its exported method
// its interface.
type Greeter struct {
	Greetings int
}

// Greet greets who and counts the greetings this activation has made.
func (g *Greeter) Greet(ctx context.Context, who string) (string, error) {
	g.Greetings++
	return fmt.Sprintf("hello, %s! (greeting #%d)", who, g.Greetings), nil
}

// Greeters declares the kind once, at package level.
var Greeters = casty.Actor[Greeter]()

func main() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)

	door := Greeters.Ref(sys, "front-door")
	msg, err := casty.Call(ctx, door, (*Greeter).Greet, "world")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(msg)

	// Same key -> same activation: the count goes on.
	msg, err = casty.Call(ctx, Greeters.Ref(sys, "front-door"), (*Greeter).Greet, "again")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(msg)
}
