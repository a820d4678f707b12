// Package bg is gpuwatch's one goroutine lifecycle (docs/architecture.md,
// "Goroutines"): the value that starts a background goroutine owns it, and
// its Close cancels that goroutine and waits for it to return. A Group
// holds a value's goroutines; nothing starts one any other way.
//
// It imports nothing of the module.
package bg

import (
	"context"
	"sync"
)

// Group is the set of goroutines one value owns. Its zero value is not
// usable: make one with New.
type Group struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// New returns a Group whose goroutines run under a context derived from
// parent: they end when parent does, or at Close.
func New(parent context.Context) *Group {
	ctx, cancel := context.WithCancel(parent)
	return &Group{ctx: ctx, cancel: cancel}
}

// Go runs f on a goroutine of the group with the group's context, and says
// whether it did: after Close it starts nothing and returns false.
func (g *Group) Go(f func(ctx context.Context)) bool {
	if !g.enter() {
		return false
	}
	go func() {
		defer g.wg.Done()
		f(g.ctx)
	}()
	return true
}

// Enter marks a call running on the caller's own goroutine (a blocking Run)
// as one Close must wait for. It returns the group's context and the
// function that ends the call; ok is false after Close, and then there is
// nothing to end.
func (g *Group) Enter() (ctx context.Context, leave func(), ok bool) {
	if !g.enter() {
		return nil, nil, false
	}
	return g.ctx, g.wg.Done, true
}

// enter counts one more goroutine unless the group is closed. The mutex
// orders every Add before Close's Wait (sync.WaitGroup's rule).
func (g *Group) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

// Context is the group's context: done once Close has begun or the parent
// ended.
func (g *Group) Context() context.Context { return g.ctx }

// Close cancels the group's context and waits for every goroutine it
// started, and every Enter, to return. It is safe to call more than once
// and from several goroutines; each call returns once all have ended.
func (g *Group) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.cancel()
	g.wg.Wait()
}
