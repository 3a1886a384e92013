package inspect_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/inspect"
)

// Probes ask a system's health over HTTP: livez answers 200 until the
// system is closed, readyz 200 while it takes traffic.
func ExampleHealthHandler() {
	sys := casty.Local()
	defer sys.Close(context.Background())
	probes := inspect.HealthHandler(sys.Health)

	for _, path := range []string{"/livez", "/readyz"} {
		rec := httptest.NewRecorder()
		probes.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Print(path, " ", rec.Code, " ", rec.Body.String())
	}
	// Output:
	// /livez 200 {"live":true,"ready":true,"joined":true,"settled":true,"draining":false}
	// /readyz 200 {"live":true,"ready":true,"joined":true,"settled":true,"draining":false}
}
