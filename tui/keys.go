package tui

import "charm.land/bubbles/v2/key"

// KeyMap is every key the dashboard answers, with its help text.
type KeyMap struct {
	Quit, Help, Pause, Faster, Slower, Next, Prev, Up, Down, Zoom, Back, Details, Export, Record, Sort, Order, Tree, Filter key.Binding
}

// DefaultKeyMap returns the dashboard's keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Quit:    key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Help:    key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Pause:   key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "pause the view (sampling goes on)")),
		Faster:  key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+/=", "sample twice as often (down to 50ms)")),
		Slower:  key.NewBinding(key.WithKeys("-"), key.WithHelp("-", "sample half as often (up to 1h)")),
		Next:    key.NewBinding(key.WithKeys("tab", "right", "l"), key.WithHelp("tab/→/l", "focus the next panel")),
		Prev:    key.NewBinding(key.WithKeys("shift+tab", "left", "h"), key.WithHelp("shift+tab/←/h", "focus the previous panel")),
		Up:      key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "scroll the focused panel up")),
		Down:    key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "scroll the focused panel down")),
		Zoom:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "zoom the focused panel")),
		Back:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Details: key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "diagnosis details: all evidence and advice")),
		Export:  key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "export a report")),
		Record:  key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "start/stop recording")),
		Sort:    key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort GPU processes by memory or SM %")),
		Order:   key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "order processes by CPU, RSS or GPU memory")),
		Tree:    key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "processes as a tree (children under their parent)")),
		Filter:  key.NewBinding(key.WithKeys("/", "f"), key.WithHelp("/ or f", "filter processes and threads by name (enter keeps it, esc clears)")),
	}
}

// replayHelp are the keys that change meaning in a replay.
var replayHelp = [][2]string{
	{"space", "pause or resume playback"},
	{"←/→", "seek 10 s back or forward"},
	{"[ / ]", "half or double the speed (×0.5 … ×64)"},
}

// all lists the bindings in help order.
func (k KeyMap) all() []key.Binding {
	return []key.Binding{k.Quit, k.Help, k.Details, k.Pause, k.Faster, k.Slower, k.Next, k.Prev, k.Up, k.Down, k.Zoom, k.Back, k.Export, k.Record, k.Sort, k.Order, k.Tree, k.Filter}
}
