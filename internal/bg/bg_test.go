package bg

import (
	"context"
	"sync/atomic"
	"testing"
)

// TestCloseWaitsForEveryGoroutine: after Close returns, every goroutine
// the group started has returned (the counter is read with no further
// synchronisation, so -race also checks the happens-before).
func TestCloseWaitsForEveryGoroutine(t *testing.T) {
	g := New(context.Background())
	var ended atomic.Int32
	plain := 0
	for range 8 {
		g.Go(func(ctx context.Context) {
			<-ctx.Done()
			ended.Add(1)
		})
	}
	ctx, leave, ok := g.Enter()
	if !ok {
		t.Fatal("Enter before Close refused")
	}
	go func() {
		<-ctx.Done()
		plain = 1 // written before leave: Close must see it
		leave()
	}()
	g.Close()
	if n := ended.Load(); n != 8 {
		t.Fatalf("Close returned with %d of 8 goroutines ended", n)
	}
	if plain != 1 {
		t.Fatal("Close returned before the entered call left")
	}
}

// TestNothingStartsAfterClose: Go and Enter refuse once Close has begun,
// so a late start cannot outlive its owner.
func TestNothingStartsAfterClose(t *testing.T) {
	g := New(context.Background())
	g.Close()
	if g.Go(func(context.Context) { t.Error("ran after Close") }) {
		t.Fatal("Go after Close said it started")
	}
	if _, _, ok := g.Enter(); ok {
		t.Fatal("Enter after Close said ok")
	}
	g.Close() // twice is fine
}

// TestParentEndsTheGroup: a group's goroutines see the parent's end.
func TestParentEndsTheGroup(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	g := New(parent)
	done := make(chan struct{})
	g.Go(func(ctx context.Context) { <-ctx.Done(); close(done) })
	cancel()
	<-done
	g.Close()
}
