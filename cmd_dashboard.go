package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"

	tea "charm.land/bubbletea/v2"

	"github.com/gpuwatch/gpuwatch/diagnose"
	"github.com/gpuwatch/gpuwatch/probes"
	"github.com/gpuwatch/gpuwatch/report"
	"github.com/gpuwatch/gpuwatch/sample"
	"github.com/gpuwatch/gpuwatch/tui"
)

// runDashboard runs the bubbletea dashboard: the sampler's frames go
// through the diagnoser to the model over a channel the model drains with a
// command. Nothing else writes to the terminal meanwhile: logs go to a file.
// On quit, a signal (SIGINT, SIGTERM, SIGHUP) or a panic in any of our
// goroutines, the program stops and the terminal is restored.
func runDashboard(ctx context.Context, w *watchFlags, s session, sampler *probes.Sampler, diag *diagnose.Diagnoser, rec *recording, stdout, stderr io.Writer) error {
	logFile := openLog()
	if logFile != nil {
		defer logFile.Close()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	updates := make(chan tui.Update, 1)
	title := s.title
	if title == "" {
		title = "this machine"
	}
	kept := &sessionFrames{}
	model := tui.New(tui.Options{Updates: updates, Title: title, Interval: w.interval, SetInterval: sampler.SetInterval,
		Record: rec.toggle, Export: kept.export})
	// 10 frames a second: keys still redraw within 100 ms, and bubbletea
	// parses the view on every flush tick before it finds nothing changed —
	// at its default 60 fps that idle parsing was two thirds of our CPU.
	//
	// Signals are ours alone (main's context: SIGINT, SIGTERM, SIGHUP):
	// bubbletea v2.0.10's own handler can block forever sending a quit
	// message to an event loop that our cancelled context already ended,
	// hanging shutdown when SIGTERM comes early.
	p := tea.NewProgram(model, tea.WithContext(ctx), tea.WithOutput(stdout), tea.WithFPS(10), tea.WithoutSignalHandler())

	var (
		panicMu  sync.Mutex
		panicked any
		stack    []byte
	)
	guard := func(fn func()) {
		defer func() {
			if r := recover(); r != nil {
				panicMu.Lock()
				panicked, stack = r, debug.Stack()
				panicMu.Unlock()
				p.Kill() // restores the terminal
			}
		}()
		fn()
	}
	frames := make(chan *sample.Frame, 1)
	go guard(func() { _ = sampler.Run(ctx, frames) })
	go guard(func() {
		notes := s.notes
		note := ""
		for {
			select {
			case <-ctx.Done():
				return
			case n, ok := <-notes:
				if !ok {
					notes = nil
					continue
				}
				if sc, isScenario := n.(report.Scenario); isScenario {
					note = "scenario " + sc.Name
				}
				if err := rec.note(n); err != nil {
					log.Print(err)
				}
				kept.note(n)
			case f := <-frames:
				v := diag.Observe(f)
				kept.add(f)
				if err := rec.frame(f, &v); err != nil {
					log.Print(err)
					note = "recording stopped: " + err.Error()
					_, _, _ = rec.stop()
				}
				select {
				case updates <- tui.Update{Frame: f, Verdict: v, Note: note}:
					note = ""
				case <-ctx.Done():
					return
				}
			}
		}
	})
	log.Printf("dashboard started: %s", title)
	_, err := p.Run()
	cancel()
	panicMu.Lock()
	defer panicMu.Unlock()
	if panicked != nil {
		log.Printf("panic: %v\n%s", panicked, stack)
		return fmt.Errorf("internal error (the terminal was restored): %v\n%s", panicked, stack)
	}
	if err == nil || errors.Is(err, tea.ErrProgramKilled) || errors.Is(err, tea.ErrInterrupted) || errors.Is(err, context.Canceled) {
		log.Printf("dashboard stopped")
		return nil
	}
	return err
}

// openLog points the log package at a file under the user's cache folder,
// so nothing but the view reaches the terminal. It returns nil (logs
// discarded) when the folder is not writable.
func openLog() *os.File {
	log.SetOutput(io.Discard)
	dir, err := os.UserCacheDir()
	if err != nil {
		return nil
	}
	dir = filepath.Join(dir, "gpuwatch")
	if os.MkdirAll(dir, 0o755) != nil {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(dir, "gpuwatch.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil
	}
	log.SetOutput(f)
	return f
}
