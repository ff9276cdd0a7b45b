package main

import (
	"strings"
	"testing"
)

func TestTour(t *testing.T) {
	var out strings.Builder
	if err := tour(&out); err != nil {
		t.Fatalf("tour failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{"(socket) is Readable", "(Registration) is Readable", "(delayed) is Readable"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("tour output lacks %q:\n%s", want, out.String())
		}
	}
}
