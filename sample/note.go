package sample

import "time"

// Scenario is the "type":"scenario" line: the embedded loader switched to
// a preset (or a custom configuration), with the knobs in force.
type Scenario struct {
	Time  time.Time         `json:"time"`
	Name  string            `json:"name"`
	Knobs map[string]string `json:"knobs"`
	// Until is when the tour moves on to the next scenario (absent when
	// this one runs until it ends).
	Until *time.Time `json:"until,omitempty"`
}

// Event is a "type":"event" line: something that happened to a source
// ("disconnected", "reconnected").
type Event struct {
	Time   time.Time `json:"time"`
	Name   string    `json:"name"`
	Detail string    `json:"detail,omitempty"`
}

// Note is what happens in a session that is not a frame: a Scenario
// switch or an Event. Every session observer takes it beside frames
// (session.Observer); lines writes it as a line, recordings keep it. The
// unexported method closes the set to this package's types; lines'
// WriteNote switch handles each, and a test writes every kind.
type Note interface{ note() }

func (Scenario) note() {}
func (Event) note()    {}
