package loader

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Event is one line of the --events file, with the names public DataLoader
// benchmark notebooks read: "run start", "setup start"/"setup end", "epoch
// start"/"epoch end", "get-batch start"/"get-batch end", "training
// start"/"training end", "run end". Time is Unix seconds; Duration and
// Wait are seconds.
type Event struct {
	Name     string   `json:"name"`
	Time     float64  `json:"time"`
	Duration *float64 `json:"duration,omitempty"`
	Epoch    int      `json:"epoch,omitempty"`
	Batch    *int     `json:"batch,omitempty"`
	Worker   *int     `json:"worker,omitempty"`
	Wait     *float64 `json:"wait,omitempty"`
}

// Events writes events as JSON lines from one goroutine, so lines never
// interleave. A nil *Events discards everything.
type Events struct {
	ch   chan Event
	done chan struct{}
	err  error
	once sync.Once
}

// NewEvents starts the writer on w. Close flushes it.
func NewEvents(w io.Writer) *Events {
	e := &Events{ch: make(chan Event, 4096), done: make(chan struct{})}
	go e.loop(w)
	return e
}

func (e *Events) loop(w io.Writer) {
	defer close(e.done)
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-e.ch:
			if !ok {
				if err := bw.Flush(); err != nil && e.err == nil {
					e.err = err
				}
				return
			}
			if err := enc.Encode(ev); err != nil && e.err == nil {
				e.err = err
			}
		case <-tick.C: // at most a second of events is ever unwritten
			if err := bw.Flush(); err != nil && e.err == nil {
				e.err = err
			}
		}
	}
}

// emit queues an event, stamping its time. It blocks rather than drop one
// when the writer falls behind.
func (e *Events) emit(ev Event) {
	if e == nil {
		return
	}
	ev.Time = float64(time.Now().UnixNano()) / 1e9
	e.ch <- ev
}

// Close writes what is queued and returns the first write error.
func (e *Events) Close() error {
	if e == nil {
		return nil
	}
	e.once.Do(func() { close(e.ch) })
	<-e.done
	return e.err
}
